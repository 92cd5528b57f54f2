"""Many SMP queries from one process: SL2VL and VLArb tables, or blocks of forwarding tables, by
directed route, through libibmad (ctypes).  `smpquery` starts a process per query, which costs minutes on a fabric with
thousands of ports; this helper answers them all in one run.

Run as `python -m loom.fabrics.infiniband.madquery` with the simulator's environment (LD_PRELOAD=umad2sim):
reads a JSON list of queries on stdin, writes a JSON list of answers on stdout.
Layouts follow infiniband/mad.h (rdma-core 44): ib_dr_path_t, ib_portid_t.
"""

from __future__ import annotations

import ctypes
import json
import sys

SMI_CLASS, SMI_DIRECT_CLASS = 0x01, 0x81
ATTR_PORTINFO, ATTR_PKEYS, ATTR_SL2VL, ATTR_VLARB, ATTR_LFT = 0x15, 0x16, 0x17, 0x18, 0x19
TIMEOUT_MS = 2000


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
        classes = (ctypes.c_int * 2)(SMI_CLASS, SMI_DIRECT_CLASS)
        self.port = self.lib.mad_rpc_open_port(None, 0, classes, 2)
        if not self.port:
            raise RuntimeError("cannot open the local IB port (is the simulator up?)")

        self.buf = ctypes.create_string_buffer(64)
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
    of a port's P_Key table (port 0 for a CA: its own port)."""
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
