"""The MAD reader keeps many requests in flight: every answer must land under the query that
asked it, whatever order the answers come in, with requests that get no answer sent again and
named when they never do.  A stand-in for libibumad answers out of order (and drops what a test
says); a run on the simulated fabric reads two switches' tables in one window."""

from __future__ import annotations

import ctypes
import errno
import time
import hashlib

import pytest

from loom.fabrics.infiniband import madquery
from loom.fabrics.infiniband.madquery import DATA_AT, MAD_SIZE, Port, answer_all

HEAD = 64  # sizeof(struct ib_user_mad), what umad_size() says


@pytest.fixture(params=["python", "c"])
def loop(request, monkeypatch):
    """Each test of the exchange runs on both of its loops: madquery's own, and madexchange.c's
    (built here as `loom sim` builds it; `make setup` installs the compiler)."""
    if request.param == "c":
        from loom.fabrics.infiniband.compiled import exchange_library

        lib = exchange_library()
        assert lib, "madexchange.c did not build: is cc installed (`make setup`)?"
        monkeypatch.setenv(madquery.MADEXCHANGE, lib)
    else:
        from loom.fabrics.infiniband import qos_readback

        monkeypatch.delenv(madquery.MADEXCHANGE, raising=False)
        monkeypatch.setattr(qos_readback, "exchange_library", lambda: None)  # the simulator's readers too
    return request.param


def content(mad: bytes) -> bytes:
    """What the stand-in fabric holds for a request: a function of its route (hop count and
    initial path), attribute, modifier and PortSelect, so an answer given to the wrong request shows."""
    return hashlib.sha512(mad[128:129 + mad[7]] + mad[16:18] + mad[20:24] + mad[DATA_AT:DATA_AT + 2]).digest()


class FakeUmad:
    """libibumad's calls the reader makes, over a fabric that answers the newest request first
    (every window comes back reversed), drops the first `drop[key]` sends of a request and
    answers those in `status` with an error status."""

    def __init__(self, drop: dict[bytes, int] | None = None, status: set[bytes] = frozenset()) -> None:
        self.queue: list[bytes] = []
        self.drop, self.status, self.sends = dict(drop or {}), status, 0
        calls = {"umad_init": lambda: 0, "umad_open_port": lambda ca, port: 3,
                 "umad_register": lambda fd, cls, *_: {0x81: 0, 0x04: 1}[cls], "umad_size": lambda: HEAD,
                 "umad_set_addr": lambda *_: 0, "umad_set_pkey": lambda *_: 0, "umad_send": self.send,
                 "umad_recv": self.recv}
        for name, call in calls.items():  # plain functions: the reader sets argtypes on them
            setattr(self, name, lambda *args, call=call: call(*args))

    def send(self, fd, agent, buf, length, timeout, retries):
        packet = bytes(buf)[:HEAD + MAD_SIZE]
        self.sends += 1
        key = content(packet[HEAD:])
        if self.drop.get(key, 0) > 0:
            self.drop[key] -= 1
        else:
            self.queue.append(packet)
        return 0

    def recv(self, fd, buf, length, timeout):
        if not self.queue:
            return -errno.ETIMEDOUT
        packet = bytearray(self.queue.pop())  # the newest first: answers out of order
        mad = packet[HEAD:]
        key = content(bytes(mad))
        mad[3] |= 0x80  # a GetResp
        if mad[1] == madquery.SMI_DIRECT_CLASS:
            mad[4] |= 0x80  # coming back (the directed route's D bit)
        if key in self.status:
            mad[5] = 0x0C  # "unsupported attribute / modifier"
        mad[DATA_AT:DATA_AT + 64] = key
        ctypes.memmove(buf, bytes(packet[:HEAD] + mad), HEAD + MAD_SIZE)
        return 0


def expect(path: str, attr: int, mod: int) -> bytes:
    return content(madquery.dr_smp(madquery.hops_of(path), attr, mod))


TWO_TABLES = [{"key": "spine", "path": "0,1", "lft": [0, 1, 2, 3, 4, 5]},
              {"key": "leaf", "path": "0,1,7", "lft": [0, 1, 2, 3, 4, 5]},
              {"key": "leaf/3", "path": "0,1,7", "out": 3, "ins": [0, 1, 2, 3]}]


def lft_of(path: str, blocks: list[int]) -> dict[str, list[int]]:
    return {str(b): list(expect(path, madquery.ATTR_LFT, b)) for b in blocks}


def test_answers_out_of_order_land_under_their_own_keys(loop):
    fake = FakeUmad()
    answers, errors = answer_all(Port(window=16, lib=fake), TWO_TABLES)
    assert errors == []
    assert [a["key"] for a in answers] == ["spine", "leaf", "leaf/3"]
    assert answers[0]["lft"] == lft_of("0,1", list(range(6)))
    assert answers[1]["lft"] == lft_of("0,1,7", list(range(6)))
    assert answers[0]["lft"] != answers[1]["lft"]  # two tables: swapped answers would show
    rows = answers[2]["sl2vl"]
    assert rows == {str(i): madquery.sl2vl(expect("0,1,7", madquery.ATTR_SL2VL, (i << 8) | 3)) for i in range(4)}
    assert answers[2]["vlarb"] == {"low": madquery.vlarb(expect("0,1,7", madquery.ATTR_VLARB, (1 << 16) | 3)),
                                   "high": madquery.vlarb(expect("0,1,7", madquery.ATTR_VLARB, (3 << 16) | 3))}


def test_the_window_bounds_what_is_in_flight(loop):
    """No more than `window` requests are out unanswered at once (what hardware's VL15 can take)."""
    fake, most = FakeUmad(), [0]
    send = fake.umad_send

    def counted(*args):
        send(*args)
        most[0] = max(most[0], len(fake.queue))
        return 0
    fake.umad_send = counted
    answers, errors = answer_all(Port(window=4, lib=fake), TWO_TABLES)
    assert errors == [] and len(answers) == 3 and most[0] == 4


def test_a_dropped_request_is_sent_again_and_one_never_answered_is_named(monkeypatch, loop):
    monkeypatch.setattr(madquery, "TIMEOUT_MS", 30)
    once, never = expect("0,1", madquery.ATTR_LFT, 2), expect("0,1,7", madquery.ATTR_LFT, 4)
    fake = FakeUmad(drop={once: 1, never: madquery.TRIES})
    answers, errors = answer_all(Port(window=16, lib=fake), TWO_TABLES)
    assert [a["key"] for a in answers] == ["spine", "leaf/3"]
    assert answers[0]["lft"] == lft_of("0,1", list(range(6)))
    assert errors == ["leaf: no answer from 0,1,7 (attribute 0x19, modifier 0x4)"]
    assert fake.sends == 6 + 6 + 6 + 1 + (madquery.TRIES - 1)


def test_an_error_status_and_a_bad_route_fail_their_query_only(loop):
    fake = FakeUmad(status={expect("0,1", madquery.ATTR_LFT, 5)})
    queries = TWO_TABLES + [{"key": "bad", "path": "0,x", "lft": [0]}]
    answers, errors = answer_all(Port(window=16, lib=fake), queries)
    assert [a["key"] for a in answers] == ["leaf", "leaf/3"]
    assert errors == ["spine: error status 0xc from 0,1 (attribute 0x19, modifier 0x5)", "bad: bad directed route 0,x"]


def test_counters_without_the_extended_ones_keep_the_32_bit_ones(loop):
    """A node that refuses PortCountersExtended (status) still reports its PortCounters."""
    fake = FakeUmad(status={content(madquery.pma_get(2, madquery.ATTR_PORT_COUNTERS_EXT))})
    [a], errors = answer_all(Port(lib=fake), [{"key": "c:sw", "lid": 5, "counters": [1, 2]}])
    assert errors == [] and sorted(a["counters"]) == ["1", "2"] and sorted(a["ext"]) == ["1"]


@pytest.mark.sim
def test_two_switches_tables_read_in_one_window_match_dump_fts(tiny_up, loop):
    """On the simulated fabric: every block of every switch's table, all in one reader run (many
    requests of different switches in flight at once), equals what `dump_fts` reads."""
    from loom.expand import load_fabric
    from loom.fabrics.infiniband.lft_readback import BLOCK, read_blocks
    from loom.fabrics.infiniband.target import SimTarget
    from loom.render.opensm import tables_from_dump
    from loom.routing import subnet

    from .simfabric import TINY

    sn = subnet(load_fabric(TINY), 0)
    target = SimTarget(tiny_up)
    live = tables_from_dump(sn, tiny_up.dump_fts(), "live")
    blocks = list(range(sn.max_lid // BLOCK + 1))
    back = read_blocks(target, sn, {row: blocks for row in range(sn.n)})
    assert sorted(back) == list(range(sn.n))
    for row in range(sn.n):
        got = [port for b in blocks for port in back[row][b]][1:sn.max_lid + 1]
        assert got == live.lft[row, 1:].tolist(), sn.name(row)
    assert len({tuple(live.lft[row].tolist()) for row in range(sn.n)}) > 1  # the tables differ: a swap would show


def test_an_sl2vl_row_reads_sl_0_first_from_the_high_nibble():
    """IBA 14.2.5.8: byte i holds SL 2i's VL in its high nibble, SL 2i+1's in its low one."""
    assert madquery.sl2vl(bytes([0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]) + bytes(56)) == "0123456789abcdef"


def test_a_lost_request_is_sent_again_while_answers_keep_coming(monkeypatch, loop):
    """The oldest request's deadline is looked at every `EXPIRE_EVERY` answers, not only when
    the queue runs dry: a request lost early is sent again while the others still flow (under
    the simulator the queue rarely empties before the end)."""
    monkeypatch.setattr(madquery, "TIMEOUT_MS", 20)
    monkeypatch.setattr(madquery, "EXPIRE_EVERY", 16)
    blocks = list(range(600))
    lost = expect("0,1", madquery.ATTR_LFT, 0)
    fake, resent_at = FakeUmad(drop={lost: 1}), []
    send, recv = fake.umad_send, fake.umad_recv

    def noting(fd, agent, buf, *rest):
        if content(bytes(buf)[HEAD:HEAD + MAD_SIZE]) == lost and fake.drop[lost] == 0:
            resent_at.append(fake.sends)
        return send(fd, agent, buf, *rest)

    def slow(*args):  # oldest first, as ibsim answers, and 0.1 ms each: the lost request's deadline passes mid-flow
        time.sleep(0.0001)
        if fake.queue:
            fake.queue.append(fake.queue.pop(0))
        return recv(*args)
    fake.umad_send, fake.umad_recv = noting, slow
    answers, errors = answer_all(Port(window=16, lib=fake, nap=0.0), [{"key": "spine", "path": "0,1", "lft": blocks}])
    assert errors == [] and answers[0]["lft"] == lft_of("0,1", blocks)
    assert resent_at and resent_at[0] < len(blocks) - 16, resent_at  # before the last window was sent


@pytest.mark.sim
def test_a_switch_that_drops_its_queries_is_named_and_the_rest_read(tiny_up, loop):
    """ibsim's `Error` command drops every SL2VL query to one switch: each of its ports is named
    unanswered (after every try), and every other port's tables are read."""
    import json
    import os
    import subprocess

    from loom.expand import load_fabric
    from loom.fabrics.infiniband.daemon import client_dir
    from loom.fabrics.infiniband.qos_readback import READER, qos_jobs
    from loom.fabrics.infiniband.sim import console
    from loom.routing import subnet

    from .simfabric import TINY

    sn = subnet(load_fabric(TINY), 0)
    jobs, lost = qos_jobs(sn, tiny_up.sm_host), sn.name(0)
    console(tiny_up.dir, [f'Error "{lost}" 100 {madquery.ATTR_SL2VL}'])
    env = tiny_up.env() | ({madquery.MADEXCHANGE: os.environ[madquery.MADEXCHANGE]} if loop == "c" else {})
    with client_dir() as cwd:
        r = subprocess.run(READER, input=json.dumps(jobs), env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got, mine = json.loads(r.stdout), [j["key"] for j in jobs if j["key"].startswith(f"{lost}/")]
    assert mine and sorted(e.split(": ")[0] for e in got["errors"]) == sorted(mine), got["errors"]
    assert all("no answer from" in e and "attribute 0x17" in e for e in got["errors"]), got["errors"]
    assert sorted(a["key"] for a in got["answers"]) == sorted(j["key"] for j in jobs if j["key"] not in mine)


def test_an_interrupt_in_the_progress_callback_stops_the_exchange(monkeypatch, loop):
    """A Ctrl-C lands in the progress callback (the only Python the C loop runs): the exchange
    stops there and raises it — ctypes alone would print it and go on to the end."""
    monkeypatch.setattr(madquery, "EXPIRE_EVERY", 4)
    fake = FakeUmad()
    port = Port(window=4, lib=fake)
    built = [port.build((madquery.SMP, "0,1", madquery.ATTR_LFT, b)) for b in range(64)]

    def interrupted(finished: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        port.exchange(built, interrupted)
    assert fake.sends < len(built)
