"""The watcher's Prometheus metrics (`loom watch --metrics ADDR`), so a site's Grafana shows the
fabric: link health, error rates, destinations routed per port, the last reroute.

A collector reads the watcher's state at every scrape (prometheus_client serves it from its
own thread; the watcher replaces, never mutates in place, what is read here: its verdict list,
its tables in force, its last event), so a scrape during a reroute sees the state before or
after it, never half of one.  Series per cable or port are bounded by the fabric: health per
cable, destinations per cabled switch port, error rates only where a counter is rising.
"""

from __future__ import annotations

import time

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from loom.checks.link_health import VERDICTS


class WatcherCollector(Collector):
    def __init__(self, watcher) -> None:
        self.w = watcher
        self.events: dict[str, int] = {}  # event kind → count, kept by `count`
        self.last: tuple | None = None  # (the last event, Unix time it ended)

    def count(self, event) -> None:
        """Called with every watcher event."""
        self.events[event.kind] = self.events.get(event.kind, 0) + 1
        self.last = (event, time.time())

    def collect(self):
        w, fabric = self.w, self.w.fabric.name
        links = w.links
        health = GaugeMetricFamily("loom_link_health", "link verdict per cable: " +
                                   ", ".join(f"{i} {v}" for i, v in enumerate(VERDICTS)), labels=["fabric", "cable"])
        for h in links:
            health.add_metric([fabric, h.cable_id], VERDICTS.index(h.verdict))
        yield health
        counts = GaugeMetricFamily("loom_links", "links per verdict at the last reading", labels=["fabric", "verdict"])
        for v in VERDICTS:
            counts.add_metric([fabric, v], sum(h.verdict == v for h in links))
        yield counts
        rates = GaugeMetricFamily("loom_port_errors_per_hour", "error counter growth over the health window, per "
                                  "cable end (only where rising)", labels=["fabric", "cable", "port", "counter"])
        for h in links:
            for e in h.ends:
                for counter, rate in e.rates.items():
                    if rate > 0:
                        rates.add_metric([fabric, h.cable_id, e.end, counter], rate)
        yield rates
        yield GaugeMetricFamily("loom_links_drained", "links the watcher routes around for their errors",
                                value=len(w.drained), labels=None)
        yield GaugeMetricFamily("loom_links_failing_kept", "failing links left in service: draining them would cut a "
                                "switch off, or their reroute failed a check", value=len(w.kept), labels=None)
        yield from self._destinations(fabric)
        yield from self._last_event(fabric)

    def _destinations(self, fabric: str):
        dest = GaugeMetricFamily("loom_port_destinations", "destinations (CA LIDs) the tables in force route out of "
                                 "each switch port", labels=["fabric", "switch", "port"])
        tables = w_tables(self.w)
        if tables is not None:
            sn = tables.subnet
            lids = np.asarray(sn.ca_lids, dtype=np.int64)
            for row in range(sn.n):
                ports = np.bincount(tables.lft[row, lids].astype(np.int64), minlength=sn.switch(row).ports + 1)
                for port in np.flatnonzero(ports[1:]) + 1:
                    dest.add_metric([fabric, sn.name(row), str(int(port))], int(ports[port]))
        yield dest

    def _last_event(self, fabric: str):
        when = GaugeMetricFamily("loom_last_reroute_timestamp_seconds", "when the last reroute (or return) ended, "
                                 "Unix time", labels=["fabric", "kind"])
        took = GaugeMetricFamily("loom_last_reroute_duration_seconds", "detection to verified tables, last reroute",
                                 labels=["fabric", "kind"])
        entries = GaugeMetricFamily("loom_last_reroute_entries", "forwarding entries the last reroute changed",
                                    labels=["fabric", "kind"])
        if self.last is not None:
            e, stamp = self.last
            when.add_metric([fabric, e.kind], stamp)
            took.add_metric([fabric, e.kind], e.seconds.get("total", 0.0))
            entries.add_metric([fabric, e.kind], e.entries)
        yield from (when, took, entries)
        total = CounterMetricFamily("loom_watch_events", "watcher events by kind", labels=["fabric", "kind"])
        for kind, n in sorted(self.events.items()):
            total.add_metric([fabric, kind], n)
        yield total


def w_tables(w):
    """The tables the watcher has in force (its last verified ones, else the design)."""
    return w.applied if w.applied is not None else w.design


def serve(watcher, address: str) -> tuple[WatcherCollector, object]:
    """Serve the watcher's metrics at `address` (`HOST:PORT`, e.g. 127.0.0.1:9464) on a thread
    of prometheus_client's; returns the collector (give it every event: `count`) and the server
    (`shutdown()` stops it).  ValueError for an address that is not HOST:PORT."""
    from prometheus_client import start_http_server

    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--metrics {address!r}: give HOST:PORT, e.g. 127.0.0.1:9464")
    registry = CollectorRegistry(auto_describe=False)
    collector = WatcherCollector(watcher)
    registry.register(collector)
    server, _thread = start_http_server(int(port), addr=host.strip("[]"), registry=registry)
    return collector, server
