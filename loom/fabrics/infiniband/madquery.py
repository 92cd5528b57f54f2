"""Many MAD queries from one process, many in flight: SL2VL and VLArb tables, blocks of forwarding
tables, PortInfo and P_Key blocks as SMPs by directed route, and port counters as PMA queries (the
GMPs `perfquery` sends) by LID.  `smpquery` starts a process per query, which costs minutes on a
fabric with thousands of ports; this helper answers them all in one run.

The MADs go through libibumad (ctypes), not libibmad's `smp_query_via`, which sends one MAD and
waits for its answer: here up to `WINDOW` requests are out at once, each with its own transaction
ID, and answers are matched to requests by that ID (the low 32 bits: the kernel, and the
simulator's umad2sim shim, write their own into the high ones).  A request without an answer
after `TIMEOUT_MS` is sent again under a new ID, up to `TRIES` times; an answer to an ID no
longer waited for (a late one, or one the kernel returns as timed out after the resend) is
dropped.  Under the simulator (LD_PRELOAD=umad2sim) a send is a datagram to ibsim and answers are
queued by the shim's receiver thread, so a window keeps ibsim busy without a round trip per MAD.
On hardware the window is what OpenSM's `max_wire_smps` (default 4) is to its sweeps: SMPs travel
on VL15, which has no flow control and drops what it cannot buffer, so `WINDOW` stays at 16 (a
drop then costs one resend after `TIMEOUT_MS`, not a wrong answer).  Under the simulator the
window is 64 and an empty queue is napped on, not waited on (`SIM_NAP`): that is where the
shim's CPU went.

Run as `python -P path/to/madquery.py` (under the simulator with its environment):
reads a JSON list of queries on stdin, writes {"answers": [...], "errors": [...]} on stdout.
The file stands alone (the SSH target runs its text with the master's python3).
Layouts: IBA 1.3 13.4.2 (MAD), 14.2.1.2 (directed-route SMP), 16.1.3 (PMA); infiniband/umad.h.
"""

from __future__ import annotations

import bisect
import ctypes
from array import array
from itertools import accumulate
import errno
import gc
import json
import os
import random
import struct
import sys
import time

SMI_DIRECT_CLASS, PERF_CLASS = 0x81, 0x04
GET, SET = 0x01, 0x02
ATTR_NODEINFO, ATTR_PORTINFO, ATTR_PKEYS, ATTR_SL2VL, ATTR_VLARB, ATTR_LFT = 0x11, 0x15, 0x16, 0x17, 0x18, 0x19
ATTR_PORT_COUNTERS, ATTR_PORT_COUNTERS_EXT = 0x12, 0x1D
QP1_QKEY = 0x80010000
PERMISSIVE_LID = 0xFFFF
MAD_SIZE, DATA_AT = 256, 64  # a MAD, and where its attribute data starts (SMP and PMA alike)
SMP_DATA, PMA_DATA = 64, 192
TIMEOUT_MS = 2000  # per try (the libibmad reader's timeout)
TRIES = 3  # libibmad's default too
WINDOW = 16  # requests in flight per process (see the module doc)
# under the simulator: more in flight, and a nap instead of a wait when no answer is queued (the
# shim's receiver thread signals a waiting reader once per answer, a futex handover each; after a
# 0.1 ms nap dozens are queued and read without one).  Two readers of two zones' QoS: 3.1 s and
# 3.9 CPU-s with the wait, 2.3-2.5 s and 2.9-3.2 CPU-s with the nap (32 or 128 in flight: no better)
SIM_WINDOW, SIM_NAP = 64, 0.0001
EXPIRE_EVERY = 256  # answers between looks at the oldest request's deadline while answers keep coming

MADEXCHANGE = "LOOM_MADEXCHANGE"  # the path of madexchange.c built (loom.fabrics.infiniband.compiled)
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)  # non-zero: stop (an exception in the callback)
SEND_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int)
RECV_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)

SMP, PMA = "smp", "pma"  # the two kinds of ask: (SMP, path, attr, mod[, data to Set]), (PMA, lid, port, attr)

# PortCounters (IBA 16.1.3.5): name → (byte offset in the attribute, bytes); LocalLinkIntegrity
# and ExcessiveBufferOverrun share byte 19 (high and low nibble)
PORT_COUNTERS = {"SymbolErrorCounter": (4, 2), "LinkErrorRecoveryCounter": (6, 1), "LinkDownedCounter": (7, 1),
                 "PortRcvErrors": (8, 2), "PortRcvRemotePhysicalErrors": (10, 2), "PortRcvSwitchRelayErrors": (12, 2),
                 "PortXmitDiscards": (14, 2), "PortXmitConstraintErrors": (16, 1), "PortRcvConstraintErrors": (17, 1),
                 "VL15Dropped": (22, 2), "PortXmitData": (24, 4), "PortRcvData": (28, 4), "PortXmitPkts": (32, 4),
                 "PortRcvPkts": (36, 4)}
# PortCountersExtended (IBA 16.1.4.1): the 64-bit data and packet counters
PORT_COUNTERS_EXT = {"PortXmitData": 8, "PortRcvData": 16, "PortXmitPkts": 24, "PortRcvPkts": 32}


def dr_smp(hops: bytes, attr: int, mod: int, data: bytes | None = None) -> bytes:
    """A directed-route SMP (a Get, or a Set of `data`) along `hops` (initial path: byte 0 unused,
    then one out-port per hop), from and to the permissive LID."""
    head = struct.pack(">BBBBHBBQHHIQHH", 1, SMI_DIRECT_CLASS, 1, SET if data else GET, 0, 0, len(hops) - 1, 0,
                       attr, 0, mod, 0, PERMISSIVE_LID, PERMISSIVE_LID)
    return head.ljust(DATA_AT, b"\0") + (data or bytes(SMP_DATA)) + hops.ljust(64, b"\0") + bytes(64)


def pma_get(port: int, attr: int) -> bytes:
    """A PMA Get of `attr` for `port` (PortSelect, byte 1 of the data)."""
    head = struct.pack(">BBBBHHQHHI", 1, PERF_CLASS, 1, GET, 0, 0, 0, attr, 0, 0)
    return head.ljust(DATA_AT, b"\0") + bytes([0, port]).ljust(MAD_SIZE - DATA_AT, b"\0")


def hops_of(path: str) -> bytes:
    """"0,1,2" (as `smpquery -D` takes it) → the initial path's bytes."""
    try:
        hops = bytes(int(p) for p in path.split(","))
    except ValueError:
        hops = b""
    if not 1 <= len(hops) <= 64:
        raise ValueError(f"bad directed route {path}")
    return hops


def what(ask: tuple) -> str:
    """The words an error names an ask with."""
    if ask[0] == SMP:
        return f"{ask[1]} (attribute {ask[2]:#x}, modifier {ask[3]:#x})"
    return f"LID {ask[1]} port {ask[2]} (attribute {ask[3]:#x})"


class Port:
    """The local IB port, opened through libibumad, with agents for directed-route SMPs and PMA."""

    def __init__(self, window: int | None = None, lib=None, nap: float | None = None) -> None:
        """`lib`: libibumad, or a stand-in with its calls (the tests' fabric that answers out of order).
        `window` and `nap` (seconds to sleep when no answer is queued; 0: wait for one in
        `umad_recv`) default to the simulator's or the hardware's (see `SIM_NAP`)."""
        simulated = "umad2sim" in os.environ.get("LD_PRELOAD", "")
        self.compiled = compiled_exchange()
        window = window or (SIM_WINDOW if simulated else WINDOW)
        self.nap = (SIM_NAP if simulated else 0.0) if nap is None else nap
        lib = self.lib = lib or ctypes.CDLL("libibumad.so.3", use_errno=True)
        lib.umad_size.restype = ctypes.c_size_t
        lib.umad_set_addr.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.umad_set_pkey.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.umad_send.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.umad_recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        lib.umad_register.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint8, ctypes.c_void_p]
        lib.umad_open_port.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.fd = lib.umad_open_port(None, 0) if lib.umad_init() == 0 else -1
        if self.fd < 0:
            raise RuntimeError("cannot open the local IB port (is the simulator up?)")
        self.agent = {cls: lib.umad_register(self.fd, cls, 1, 0, None) for cls in (SMI_DIRECT_CLASS, PERF_CLASS)}
        if any(a < 0 for a in self.agent.values()):
            raise RuntimeError("cannot register for SMPs and PMA queries on the local IB port")
        self.window, self.head = window, lib.umad_size()
        self.tid = random.getrandbits(32)
        self.addr: dict[tuple[int, int, int], bytes] = {}  # (LID, QP, Q_Key) → the umad header sending there
        # (route, attribute, data) → umad header + SMP with modifier 0: a switch is asked for one
        # attribute dozens of times by the same route, so its requests share one packet and
        # differ in the modifier written at send time — not 200,000 packets built up front
        self.smps: dict[tuple[str, int, bytes | None], bytes] = {}

    def _header(self, lid: int, qp: int, qkey: int) -> bytes:
        head = self.addr.get((lid, qp, qkey))
        if head is None:
            buf = ctypes.create_string_buffer(self.head)
            self.lib.umad_set_addr(buf, lid, qp, 0, qkey)
            self.lib.umad_set_pkey(buf, 0)
            head = self.addr[lid, qp, qkey] = buf.raw
        return head

    def build(self, ask: tuple) -> tuple[int, bytes, int, int, tuple]:
        """(agent, umad header + MAD with attribute modifier 0, the modifier, bytes of data in the
        answer, the ask) of one ask; ValueError for a bad route."""
        if ask[0] == SMP:
            key = (ask[1], ask[2], ask[4] if len(ask) > 4 else None)
            packet = self.smps.get(key)
            if packet is None:
                packet = self.smps[key] = self._header(PERMISSIVE_LID, 0, 0) + dr_smp(hops_of(key[0]), key[1], 0, key[2])
            return self.agent[SMI_DIRECT_CLASS], packet, ask[3], SMP_DATA, ask
        _, lid, port, attr = ask
        return self.agent[PERF_CLASS], self._header(lid, 1, QP1_QKEY) + pma_get(port, attr), 0, PMA_DATA, ask

    def exchange(self, built: list[tuple[int, bytes, int, int, tuple]], done=lambda n: None) -> list:
        """Send every built request, `self.window` at a time, and return per request the data of
        its answer (bytes) or why there is none (str).  `done(n)` hears how many are finished.

        The loop runs once per MAD, so it is kept lean (measured against a bare C reader of the
        same MADs, `bench/bare_reader.c`): the buffers are bytearrays that libibumad reads and
        writes in place (no ctypes call to fill or read them), and the oldest request's deadline
        is looked at when no answer came and every `EXPIRE_EVERY` answers (a lost request is
        sent again within about that many answers of its deadline, even while answers pour in).
        With the C build of this loop (`MADEXCHANGE`), that runs instead."""
        if self.compiled is not None:
            return self._exchange_in_c(built, done)
        lib, fd, head, monotonic, nap, sleep = self.lib, self.fd, self.head, time.monotonic, self.nap, time.sleep
        send_, recv = lib.umad_send, lib.umad_recv
        sarr, rarr = bytearray(head + MAD_SIZE), bytearray(head + MAD_SIZE)
        sbuf, rbuf = (ctypes.c_char * len(sarr)).from_buffer(sarr), (ctypes.c_char * len(rarr)).from_buffer(rarr)
        answer = memoryview(rarr)
        length = ctypes.c_int()
        length_ref = ctypes.byref(length)
        set_tid = set_mod = struct.Struct(">I").pack_into
        umad_status = struct.Struct("=4xI").unpack_from  # struct ib_user_mad: agent_id, status, ...
        mad_status_tid = struct.Struct(">4xH6xI").unpack_from  # the MAD's status and its TID's low half
        out: list = [None] * len(built)
        pending: dict[int, tuple[int, float, int]] = {}  # TID → (request, deadline, try); oldest first
        finished = sent = 0
        total, window, tid_at, mod_at, data_at = len(built), self.window, head + 12, head + 20, head + DATA_AT

        def send(i: int, attempt: int) -> None:
            agent, packet, mod, _, ask = built[i]
            self.tid = tid = (self.tid + 1) & 0xFFFFFFFF
            sarr[:len(packet)] = packet
            set_tid(sarr, tid_at, tid)
            set_mod(sarr, mod_at, mod)
            if send_(fd, agent, sbuf, MAD_SIZE, TIMEOUT_MS, 0) < 0:
                raise RuntimeError(f"cannot send to {what(ask)}: {os.strerror(ctypes.get_errno()) or 'umad_send failed'}")
            pending[tid] = (i, monotonic() + TIMEOUT_MS / 1000, attempt)

        def settle(i: int, attempt: int, why: str) -> None:
            nonlocal finished
            if attempt < TRIES:
                send(i, attempt + 1)
            else:
                out[i], finished = f"{why} {what(built[i][4])}", finished + 1

        def expire() -> bool:
            """Send the oldest request again (or give it up) if its deadline passed."""
            oldest = next(iter(pending))
            i, deadline, attempt = pending[oldest]
            if deadline > monotonic():
                return False
            del pending[oldest]
            settle(i, attempt, "no answer from")
            return True

        while sent < total or pending:
            while sent < total and len(pending) < window:
                send(sent, 1)
                sent += 1
            length.value = MAD_SIZE
            err = recv(fd, rbuf, length_ref, 0 if nap else max(1, int((pending[next(iter(pending))][1] - monotonic()) * 1000) + 1))
            if err < 0:
                if -err not in (errno.ETIMEDOUT, errno.EWOULDBLOCK):
                    raise RuntimeError(f"cannot receive on the local IB port: {os.strerror(-err)}")
                if not expire() and nap:  # nothing came (yet)
                    sleep(nap)
                continue
            status, tid = mad_status_tid(rarr, head)
            got = pending.pop(tid, None)
            if got is None:
                continue  # an answer to a request sent again since, or not ours
            i, _, attempt = got
            if umad_status(rarr)[0]:  # the kernel (or the simulator) gave the request back unanswered
                settle(i, attempt, "no answer from")
                continue
            if status & 0x7FFF:  # (without a directed route's D bit)
                out[i] = f"error status {status & 0x7FFF:#x} from {what(built[i][4])}"
            else:
                out[i] = bytes(answer[data_at:data_at + built[i][3]])
            finished += 1
            if finished % EXPIRE_EVERY == 0:
                done(finished)
                if pending:
                    expire()
        done(finished)
        return out

    def _exchange_in_c(self, built: list[tuple[int, bytes, int, int, tuple]], done) -> list:
        """`exchange` by madexchange.c's `loom_exchange`: the requests as arrays (each distinct
        packet once), the answers' data in one buffer, cut per request here."""
        n, index = len(built), {}
        packet_of = array("i", [index.setdefault(id(b[1]), len(index)) for b in built])
        packets = b"".join({id(b[1]): b[1] for b in built}.values())  # in `index`'s order: first seen
        agents, mods, lens = array("i", [b[0] for b in built]), array("I", [b[2] for b in built]), array("i", [b[3] for b in built])
        at = array("q", accumulate(lens, initial=0))
        data, result = bytearray(at[-1] or 1), array("i", bytes(4 * n))
        failed_at, err = ctypes.c_int(), ctypes.c_int()
        tid0 = (self.tid + 1) & 0xFFFFFFFF
        self.tid = (self.tid + n * TRIES) & 0xFFFFFFFF  # every TID the exchange may use is spent

        def address(a) -> int:
            return a.buffer_info()[0] if isinstance(a, array) else ctypes.addressof((ctypes.c_char * len(a)).from_buffer(a))

        raised: list[BaseException] = []

        def heard(finished: int) -> int:  # ctypes would print and drop an exception (a Ctrl-C): keep it, stop
            try:
                done(finished)
                return 0
            except BaseException as exc:  # noqa: BLE001 - raised again below, whatever it is
                raised.append(exc)
                return 1

        keep, calls = self._umad_calls()
        nap_us = max(1, round(self.nap * 1e6)) if self.nap > 0 else 0
        rc = self.compiled(*calls, self.fd, n, address(agents), packets, self.head, address(packet_of), address(mods),
                           address(lens), address(at), self.window, TIMEOUT_MS, TRIES, nap_us, EXPIRE_EVERY, tid0,
                           address(data), address(result), PROGRESS_FN(heard), ctypes.byref(failed_at), ctypes.byref(err))
        if raised:
            raise raised[0]
        if rc == -1:
            raise RuntimeError(f"cannot send to {what(built[failed_at.value][4])}: {os.strerror(err.value)}")
        if rc == -2:
            raise RuntimeError(f"cannot receive on the local IB port: {os.strerror(err.value)}")
        if rc != 0:
            raise MemoryError("the C exchange could not allocate its tables")
        del keep  # (the stand-in's wrappers lived through the call)
        view = memoryview(data)
        return [view[at[i]:at[i] + lens[i]].tobytes() if r == 0 else
                f"no answer from {what(built[i][4])}" if r == -1 else f"error status {r:#x} from {what(built[i][4])}"
                for i, r in enumerate(result)]


    def _umad_calls(self) -> tuple[list, tuple[int, int]]:
        """(what must outlive the exchange, (umad_send, umad_recv) as C function addresses):
        libibumad's own, or a stand-in's Python calls wrapped, handed the packet buffer as an
        array of its bytes, as the Python loop hands it."""
        size, lib = self.head + MAD_SIZE, self.lib
        try:
            return [], (ctypes.cast(lib.umad_send, ctypes.c_void_p).value, ctypes.cast(lib.umad_recv, ctypes.c_void_p).value)
        except ctypes.ArgumentError:  # a Python stand-in (the tests' fabric)
            pass

        def send(fd, agent, buf, length, timeout, retries):
            return lib.umad_send(fd, agent, (ctypes.c_char * size).from_address(buf), length, timeout, retries)

        def recv(fd, buf, length, timeout):
            return lib.umad_recv(fd, (ctypes.c_char * size).from_address(buf), length, timeout)
        keep = [SEND_FN(send), RECV_FN(recv)]
        return keep, tuple(ctypes.cast(f, ctypes.c_void_p).value for f in keep)


def compiled_exchange():
    """madexchange.c's `loom_exchange` from the library `MADEXCHANGE` names, or None (not named,
    or not loadable): `Port.exchange` then runs its Python loop, which does the same."""
    path = os.environ.get(MADEXCHANGE)
    if not path:
        return None
    try:
        fn = ctypes.CDLL(path).loom_exchange
    except (OSError, AttributeError):
        return None
    i, p = ctypes.c_int, ctypes.c_void_p
    fn.argtypes = [p, p, i, i, p, ctypes.c_char_p, ctypes.c_size_t, p, p, p, p, i, i, i, i, i, ctypes.c_uint32, p, p, PROGRESS_FN,
                   ctypes.POINTER(i), ctypes.POINTER(i)]
    fn.restype = i
    return fn


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


def sl2vl(raw: bytes) -> str:
    """The 16 VLs as 16 hex digits, SL 0's first: byte i holds SL 2i in its high nibble and
    SL 2i+1 in its low one, the order `hex` writes them.  A string, not 16 numbers: a two-zone
    read-back holds 260,000 rows, and as lists they cost the reader and the plan a second of
    encoding, decoding and digesting JSON."""
    return raw[:8].hex()


def vlarb(raw: bytes) -> list[list[int]]:
    """Non-zero (VL, weight) entries of one 32-entry block."""
    return [[raw[2 * i] & 0xF, raw[2 * i + 1]] for i in range(32) if raw[2 * i + 1]]


# queries of one attribute per number (modifier: a port, or an LFT block): field → (attribute, decoding)
PER_NUMBER = {"links": (ATTR_PORTINFO, link), "lft": (ATTR_LFT, lambda raw: list(raw[:64])),
              "states": (ATTR_PORTINFO, lambda raw: raw[32] & 0xF)}


def ok(raw: bytes | str) -> bytes:
    """An answer's data; RuntimeError saying why where there is none."""
    if isinstance(raw, str):
        raise RuntimeError(raw)
    return raw


def answer(q: dict):
    """One query as a generator: it yields the list of asks it needs, is sent their answers (data
    or why none, in the same order) and returns its answer, so every query's MADs can be in flight
    together.  q: {"key", "path", "out" (port), "ins" (input ports for a switch, [] for a CA)} for
    QoS, or {"key", "path", "lft": [block numbers]} for forwarding-table blocks (64 ports each),
    or {"key", "path", "states": [ports]} for ports' PortState (PortInfo byte 32, low nibble:
    1 down, 2 init, 3 armed, 4 active), or {"key", "path", "pkeys": port} for the first block
    of a port's P_Key table (port 0 for a CA: its own port), or {"key", "path", "ident": 1} for
    the GUID and LID of the node the route reaches, or {"key", "path", "links": [ports]}
    for their state, active width and speeds (`link`), or {"key", "lid", "counters": [ports]}
    for their PortCounters and, where the node answers them, PortCountersExtended."""
    key = q["key"]
    if "counters" in q:
        ports = q["counters"]
        raws = yield [(PMA, q["lid"], p, a) for a in (ATTR_PORT_COUNTERS, ATTR_PORT_COUNTERS_EXT) for p in ports]
        counters = {str(p): port_counters(ok(r)) for p, r in zip(ports, raws)}
        # an old node without the extended counters: the 32-bit ones stand
        return {"key": key, "counters": counters,
                "ext": {str(p): port_counters_ext(r) for p, r in zip(ports, raws[len(ports):]) if not isinstance(r, str)}}
    path = q["path"]
    for field, (attr, decode) in PER_NUMBER.items():
        if field in q:
            raws = yield [(SMP, path, attr, n) for n in q[field]]
            return {"key": key, field: {str(n): decode(ok(r)) for n, r in zip(q[field], raws)}}
    if "ident" in q:  # who answers at the route: NodeInfo's NodeGUID (bytes 12-19), port 0's LID (PortInfo 16-17)
        node, port = yield [(SMP, path, ATTR_NODEINFO, 0), (SMP, path, ATTR_PORTINFO, 0)]
        return {"key": key, "guid": int.from_bytes(ok(node)[12:20], "big"), "lid": int.from_bytes(ok(port)[16:18], "big")}
    if "pkeys" in q:  # P_Key table block 0 (32 entries, big-endian); a switch port's in the modifier's high half
        raw = ok((yield [(SMP, path, ATTR_PKEYS, q["pkeys"] << 16)])[0])
        return {"key": key, "pkeys": [int.from_bytes(raw[2 * i:2 * i + 2], "big") for i in range(32)]}
    out, ins = q["out"], q["ins"] or [0]
    raws = yield ([(SMP, path, ATTR_SL2VL, (i << 8) | out if q["ins"] else 0) for i in ins]
                  + [(SMP, path, ATTR_VLARB, (1 << 16) | out), (SMP, path, ATTR_VLARB, (3 << 16) | out)])
    rows = {str(i): sl2vl(ok(r)) for i, r in zip(ins, raws)}
    low, high = vlarb(ok(raws[-2])), vlarb(ok(raws[-1]))
    return {"key": key, "sl2vl": rows, "vlarb": {"low": low, "high": high}}


PROGRESS = "progress "  # on stderr, every PROGRESS_EVERY queries: how many are done
PROGRESS_EVERY = 64


def answer_all(port: Port, queries: list[dict], progress=lambda n: None) -> tuple[list[dict], list[str]]:
    """(answers, errors "key: why") of `queries`, in their order, all their MADs in one exchange."""
    gens, built, ends, failed = [], [], [], {}
    for n, q in enumerate(queries):
        gen = answer(q)
        try:
            made = [port.build(a) for a in next(gen)]
        except ValueError as exc:
            failed[n], made = str(exc), []
        gens.append((gen, len(built)))
        built += made
        ends.append(len(built))
    shown = [0]

    def done(finished: int) -> None:  # how many queries have every ask finished (they finish nearly in order)
        n = bisect.bisect_right(ends, finished)
        if n >= shown[0] + PROGRESS_EVERY or n == len(queries) > shown[0]:
            shown[0] = n
            progress(n)

    raws = port.exchange(built, done)
    answers, errors = [], []
    for n, (q, (gen, start)) in enumerate(zip(queries, gens)):
        if n in failed:
            errors.append(f"{q['key']}: {failed[n]}")
            continue
        try:
            gen.send(raws[start:ends[n]])
        except StopIteration as finished:
            answers.append(finished.value)
        except RuntimeError as exc:
            errors.append(f"{q['key']}: {exc}")
    return answers, errors


def main() -> int:
    # a short-lived process that makes no reference cycles: the collector would only rescan the
    # hundreds of thousands of requests and answers it holds (a tenth of its CPU on two zones)
    gc.disable()
    queries = json.load(sys.stdin)
    answers, errors = answer_all(Port(), queries, lambda n: print(f"{PROGRESS}{n}", file=sys.stderr, flush=True))
    # json.dumps, not json.dump: dump streams through the pure-Python encoder, ~1 s of a reader's
    # CPU for the megabytes a two-zone fabric's QoS read-back returns; dumps uses the C one
    sys.stdout.write(json.dumps({"answers": answers, "errors": errors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
