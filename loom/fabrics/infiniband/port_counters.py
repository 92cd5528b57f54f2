"""Read the port counters and link state of both ends of every cable, through the target.

Two kinds of query per device, answered together by `loom.fabrics.infiniband.madquery` (the
simulator: one reader process beside ibsim; an SSH target: one on the master's host), so a
two-zone fabric is read in seconds, not the minutes a `perfquery` process per port costs:

- PortCounters and PortCountersExtended (PMA, the GMPs `perfquery` sends) go by LID — the
  performance class has no directed routes — to each switch's port 0 LID and each CA port's LID;
- PortInfo (state, active width and speeds) goes by directed route from the master's port, as
  the QoS read-back does, so a port reads even where the forwarding tables do not reach.

A device that does not answer is left out (its ends read as "did not answer"): one dead switch
must not hide the health of the rest of the fabric.
"""

from __future__ import annotations

import time

from loom.checks.link_health import cables_of_plane
from loom.expand import HOST, Fabric
from loom.routing.subnet import Subnet

from .qos_readback import directed_routes


def port_jobs(fabric: Fabric, sn: Subnet, sm_ca: str) -> list[dict]:
    """The madquery jobs of a full reading: per device with a cabled end, its counters by LID
    (key `c:<device>`) and its ports' PortInfo by directed route (key `l:<device>`)."""
    switch_dr, ca_dr = directed_routes(sn, sm_ca)
    row_of = {sn.switch(r).index: r for r in range(sn.n)}
    c = fabric.cables
    devices: dict[str, tuple[int, str | None, list[int]]] = {}  # name → (lid, directed route, ports)
    for i in cables_of_plane(fabric, sn.plane):
        for side in ("a", "b"):
            kind, dev, port = (int(getattr(c, f"{side}_{f}")[i]) for f in ("kind", "dev", "port"))
            if kind == HOST:
                hp = fabric.ports[dev]
                name, lid, path, port = hp.ca, hp.lid, ca_dr.get(hp.lid), hp.port
            else:
                s = fabric.switches[dev]
                name, lid, path = s.name, s.lid, switch_dr.get(row_of.get(dev, -1))
            devices.setdefault(name, (lid, path, []))[2].append(port)
    jobs = []
    for name, (lid, path, ports) in sorted(devices.items()):
        ports = sorted(set(ports))
        jobs.append({"key": f"c:{name}", "lid": lid, "counters": ports})
        if path is not None:
            jobs.append({"key": f"l:{name}", "path": path, "links": ports})
    return jobs


def read_ports(target, fabric: Fabric, sn: Subnet) -> dict:
    """{"at": time of the reading (monotonic seconds), "seconds": how long it took, "ends":
    {"device/port": {"counters": PortCounters, "ext": PortCountersExtended or {}, "link":
    [state, width, speed, extended speed]}}} for every cable end of `sn`'s plane that answered."""
    t0 = time.perf_counter()
    answers = target.smp(port_jobs(fabric, sn, target.sm_ca()), "the port-counter reading", every=False)
    counters, links = {}, {}
    for a in answers:
        name = a["key"][2:]
        if "counters" in a:
            for port, values in a["counters"].items():
                counters[f"{name}/{port}"] = (values, a["ext"].get(port, {}))
        else:
            for port, link in a["links"].items():
                links[f"{name}/{port}"] = link
    ends = {end: {"counters": values, "ext": ext, "link": links[end]}
            for end, (values, ext) in sorted(counters.items()) if end in links}
    return {"at": time.monotonic(), "seconds": round(time.perf_counter() - t0, 3), "ends": ends}
