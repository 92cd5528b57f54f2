"""Many SMP queries from one process: SL2VL and VLArb tables, or blocks of forwarding tables, by
directed route, through libibmad (ctypes); and PMA queries (port counters, the GMPs `perfquery`
sends), which go by LID.  `smpquery` starts a process per query, which costs minutes on a fabric with
thousands of ports; this helper answers them all in one run.

Run as `python -m loom.fabrics.infiniband.madquery` with the simulator's environment (LD_PRELOAD=umad2sim):
reads a JSON list of queries on stdin, writes a JSON list of answers on stdout.
Layouts follow infiniband/mad.h (rdma-core 44): ib_dr_path_t, ib_portid_t.
"""

from __future__ import annotations

import ctypes
import json
import sys

SMI_CLASS, SMI_DIRECT_CLASS, PERF_CLASS = 0x01, 0x81, 0x04
ATTR_PORTINFO, ATTR_PKEYS, ATTR_SL2VL, ATTR_VLARB, ATTR_LFT = 0x15, 0x16, 0x17, 0x18, 0x19
ATTR_PORT_COUNTERS, ATTR_PORT_COUNTERS_EXT = 0x12, 0x1D
QP1_QKEY = 0x80010000
TIMEOUT_MS = 2000

# PortCounters (IBA 16.1.3.5): name → (byte offset in the attribute, bytes); LocalLinkIntegrity
# and ExcessiveBufferOverrun share byte 19 (high and low nibble)
PORT_COUNTERS = {"SymbolErrorCounter": (4, 2), "LinkErrorRecoveryCounter": (6, 1), "LinkDownedCounter": (7, 1),
                 "PortRcvErrors": (8, 2), "PortRcvRemotePhysicalErrors": (10, 2), "PortRcvSwitchRelayErrors": (12, 2),
                 "PortXmitDiscards": (14, 2), "PortXmitConstraintErrors": (16, 1), "PortRcvConstraintErrors": (17, 1),
                 "VL15Dropped": (22, 2), "PortXmitData": (24, 4), "PortRcvData": (28, 4), "PortXmitPkts": (32, 4),
                 "PortRcvPkts": (36, 4)}
# PortCountersExtended (IBA 16.1.4.1): the 64-bit data and packet counters
PORT_COUNTERS_EXT = {"PortXmitData": 8, "PortRcvData": 16, "PortXmitPkts": 24, "PortRcvPkts": 32}


class DrPath(ctypes.Structure):
    _fields_ = [("cnt", ctypes.c_int), ("p", ctypes.c_uint8 * 64), ("drslid", ctypes.c_uint16), ("drdlid", ctypes.c_uint16)]


class PortId(ctypes.Structure):
    _fields_ = [("lid", ctypes.c_int), ("drpath", DrPath), ("grh_present", ctypes.c_int), ("gid", ctypes.c_uint8 * 16),
                ("qp", ctypes.c_uint32), ("qkey", ctypes.c_uint32), ("sl", ctypes.c_uint8), ("pkey_idx", ctypes.c_uint)]


class Mad:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libibmad.so.5")
        self.lib.mad_rpc_open_port.restype = ctypes.c_void_p
        self.lib.mad_rpc_open_port.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self.lib.smp_query_via.restype = ctypes.c_void_p
        self.lib.smp_query_via.argtypes = [ctypes.c_void_p, ctypes.POINTER(PortId), ctypes.c_uint, ctypes.c_uint,
                                           ctypes.c_uint, ctypes.c_void_p]
        self.lib.str2drpath.argtypes = [ctypes.POINTER(DrPath), ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        self.lib.pma_query_via.restype = ctypes.c_void_p
        self.lib.pma_query_via.argtypes = [ctypes.c_void_p, ctypes.POINTER(PortId), ctypes.c_int, ctypes.c_uint,
                                           ctypes.c_uint, ctypes.c_void_p]
        classes = (ctypes.c_int * 3)(SMI_CLASS, SMI_DIRECT_CLASS, PERF_CLASS)
        self.port = self.lib.mad_rpc_open_port(None, 0, classes, 3)
        if not self.port:
            raise RuntimeError("cannot open the local IB port (is the simulator up?)")

        self.buf = ctypes.create_string_buffer(64)
        self.pma_buf = ctypes.create_string_buffer(1024)  # the request's data going out, the answer's coming back
        self.paths: dict[str, PortId] = {}  # a switch is asked dozens of times by the same route

    def query(self, path: str, attr: int, mod: int) -> bytes:
        pid = self.paths.get(path)
        if pid is None:
            pid = PortId()
            pid.lid = 0
            if self.lib.str2drpath(ctypes.byref(pid.drpath), path.encode(), 0, 0) < 0:
                raise ValueError(f"bad directed route {path}")
            self.paths[path] = pid
        if not self.lib.smp_query_via(self.buf, ctypes.byref(pid), attr, mod, TIMEOUT_MS, self.port):
            raise RuntimeError(f"no answer from {path} (attribute {attr:#x}, modifier {mod:#x})")
        return self.buf.raw

    def pma(self, lid: int, port: int, attr: int) -> bytes:
        """One PMA Get (PortCounters or PortCountersExtended) of `port` of the node at `lid`."""
        pid = PortId()
        pid.lid, pid.qp, pid.qkey = lid, 1, QP1_QKEY
        ctypes.memset(self.pma_buf, 0, len(self.pma_buf))
        if not self.lib.pma_query_via(self.pma_buf, ctypes.byref(pid), port, TIMEOUT_MS, attr, self.port):
            raise RuntimeError(f"no PMA answer from LID {lid} port {port} (attribute {attr:#x})")
        return self.pma_buf.raw[:192]


def port_counters(raw: bytes) -> dict[str, int]:
    out = {name: int.from_bytes(raw[at:at + n], "big") for name, (at, n) in PORT_COUNTERS.items()}
    out["LocalLinkIntegrityErrors"], out["ExcessiveBufferOverrunErrors"] = raw[19] >> 4, raw[19] & 0xF
    return out


def port_counters_ext(raw: bytes) -> dict[str, int]:
    return {name: int.from_bytes(raw[at:at + 8], "big") for name, at in PORT_COUNTERS_EXT.items()}


def link(raw: bytes) -> list[int]:
    """[PortState, LinkWidthActive, LinkSpeedActive, LinkSpeedExtActive] from PortInfo (bytes 32,
    31, 35 high nibble, 62 high nibble)."""
    return [raw[32] & 0xF, raw[31], raw[35] >> 4, raw[62] >> 4]


def counters(mad: Mad, q: dict) -> dict:
    """PortCounters (and PortCountersExtended where the node answers it) of q["counters"] ports."""
    out, ext = {}, {}
    for p in q["counters"]:
        out[str(p)] = port_counters(mad.pma(q["lid"], p, ATTR_PORT_COUNTERS))
        try:
            ext[str(p)] = port_counters_ext(mad.pma(q["lid"], p, ATTR_PORT_COUNTERS_EXT))
        except RuntimeError:
            pass  # an old node without the extended counters: the 32-bit ones stand
    return {"key": q["key"], "counters": out, "ext": ext}


def sl2vl(raw: bytes) -> list[int]:
    """16 VLs: byte i holds SL 2i in its high nibble and SL 2i+1 in its low nibble."""
    return [v for b in raw[:8] for v in (b >> 4, b & 0xF)]


def vlarb(raw: bytes) -> list[list[int]]:
    """Non-zero (VL, weight) entries of one 32-entry block."""
    return [[raw[2 * i] & 0xF, raw[2 * i + 1]] for i in range(32) if raw[2 * i + 1]]


def answer(mad: Mad, q: dict) -> dict:
    """q: {"key", "path", "out" (port), "ins" (input ports for a switch, [] for a CA)} for QoS, or
    {"key", "path", "lft": [block numbers]} for forwarding-table blocks (64 ports each), or
    {"key", "path", "states": [ports]} for ports' PortState (PortInfo byte 32, low nibble:
    1 down, 2 init, 3 armed, 4 active), or {"key", "path", "pkeys": port} for the first block
    of a port's P_Key table (port 0 for a CA: its own port), or {"key", "path", "links": [ports]}
    for their state, active width and speeds (`link`), or {"key", "lid", "counters": [ports]}
    for their PMA counters (`counters`)."""
    if "counters" in q:
        return counters(mad, q)
    if "links" in q:
        return {"key": q["key"], "links": {str(p): link(mad.query(q["path"], ATTR_PORTINFO, p)) for p in q["links"]}}
    if "lft" in q:
        return {"key": q["key"], "lft": {str(b): list(mad.query(q["path"], ATTR_LFT, b)[:64]) for b in q["lft"]}}
    if "pkeys" in q:  # P_Key table block 0 (32 entries, big-endian); a switch port's in the modifier's high half
        raw = mad.query(q["path"], ATTR_PKEYS, (q["pkeys"] << 16))
        return {"key": q["key"], "pkeys": [int.from_bytes(raw[2 * i:2 * i + 2], "big") for i in range(32)]}
    if "states" in q:
        return {"key": q["key"], "states": {str(p): mad.query(q["path"], ATTR_PORTINFO, p)[32] & 0xF for p in q["states"]}}
    out = q["out"]
    rows = {}
    for i in q["ins"] or [0]:
        rows[str(i)] = sl2vl(mad.query(q["path"], ATTR_SL2VL, (i << 8) | out if q["ins"] else 0))
    low = vlarb(mad.query(q["path"], ATTR_VLARB, (1 << 16) | out))
    high = vlarb(mad.query(q["path"], ATTR_VLARB, (3 << 16) | out))
    return {"key": q["key"], "sl2vl": rows, "vlarb": {"low": low, "high": high}}


PROGRESS = "progress "  # on stderr, every PROGRESS_EVERY ports: how many are done
PROGRESS_EVERY = 64


def main() -> int:
    queries = json.load(sys.stdin)
    mad = Mad()
    out, errors = [], []
    for n, q in enumerate(queries, 1):
        try:
            out.append(answer(mad, q))
        except (RuntimeError, ValueError) as exc:
            errors.append(f"{q['key']}: {exc}")
        if n % PROGRESS_EVERY == 0 or n == len(queries):
            print(f"{PROGRESS}{n}", file=sys.stderr, flush=True)
    # json.dumps, not json.dump: dump streams through the pure-Python encoder, ~1 s of a reader's
    # CPU for the megabytes a two-zone fabric's QoS read-back returns; dumps uses the C one
    sys.stdout.write(json.dumps({"answers": out, "errors": errors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
