"""`loom watch --metrics` (issue 39, step 5): Prometheus text that prometheus_client's parser
reads, scraped again and again while a failing link is drained: link health, error rates,
destinations per port and the last reroute move as the fabric does.  Real ibsim + OpenSM, tiny."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from loom.fabrics.infiniband.sim import console

from .load import slack, wait_for, wait_line
from .simfabric import TINY, loom
from .test_watch_health import applied_model, events, with_health  # noqa: F401 (fixture)

pytestmark = pytest.mark.sim


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[str, list]:
    """{metric name: [(labels, value)]}; the parser raises on text that is not Prometheus'."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def value(metrics: dict, name: str, **labels) -> float | None:
    hits = [v for l, v in metrics.get(name, []) if all(l.get(k) == x for k, x in labels.items())]
    return hits[0] if hits else None


def test_metrics_are_served_and_follow_a_drain(applied_model):
    d, model = applied_model
    port = free_port()
    env = {**os.environ, "LOOM_STATE_DIR": os.environ["LOOM_STATE_DIR"]}
    proc = subprocess.Popen([sys.executable, "-m", "loom.cli", "watch", str(model), "--interval", "2", "--hold-down", "1",
                             "--health-interval", "1", "--metrics", f"127.0.0.1:{port}", "--for", "120"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = wait_line(proc, "first discovery done", 60)
        first = scrape(port)
        assert len(first["loom_link_health"]) == 60 and {v for _, v in first["loom_link_health"]} == {0}
        assert value(first, "loom_links", verdict="healthy") == 60 and value(first, "loom_links_drained") == 0
        before = value(first, "loom_port_destinations", switch="z0-leaf0", port="5")
        assert before and before > 0  # the design routes destinations up this leaf-spine link
        assert "loom_last_reroute_timestamp_seconds" not in first
        # errors rise on z0-leaf0/5; scrape all along while the watcher drains it
        scrapes, value_now = [], 0
        deadline = time.monotonic() + 60 * slack()
        while not any(e["kind"] == "drain" for e in events(d)):
            assert time.monotonic() < deadline, events(d)
            value_now += 4
            console(d.dir, [f'PerformanceSet "z0-leaf0"[5] PortCounters.SymbolErrorCounter={value_now}'])
            for _ in range(4):
                scrapes.append(scrape(port))
                time.sleep(0.25)
        after = wait_for("the drain in the metrics", lambda: (m := scrape(port)) and value(m, "loom_links_drained") == 1 and m)
        assert len(scrapes) >= 2
        assert value(after, "loom_link_health", cable="z0-leaf0/5") == 4  # failing
        assert value(after, "loom_port_errors_per_hour", cable="z0-leaf0/5", port="z0-leaf0/5",
                     counter="SymbolErrorCounter") >= 600
        assert value(after, "loom_port_destinations", switch="z0-leaf0", port="5") is None  # nothing routed out of it
        assert value(after, "loom_last_reroute_timestamp_seconds", kind="drain") > time.time() - 120
        assert value(after, "loom_last_reroute_entries", kind="drain") > 0
        assert value(after, "loom_watch_events_total", kind="drain") == 1
    finally:
        proc.terminate()
        out = seen + proc.communicate(timeout=30 * slack())[0]
    assert proc.returncode == 0, out
    with pytest.raises(OSError):  # the server stopped with the watcher
        scrape(port)


def test_a_bad_metrics_address_is_a_usage_error(tiny_up):
    code, out = loom("watch", TINY, "--metrics", "nowhere", "--for", "0")
    assert code == 2 and "HOST:PORT" in out, out
