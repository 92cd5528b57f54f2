"""RoCE lossless cross-check: the switches' SONiC tables, the hosts' NIC settings and the
model's traffic classes agree — read back from the rendered files, not from the plan they
were made from, so a template or table builder that drifts is caught.

Proves, per switch `config_db.json` and per host's files:
- DSCP: DSCP_TO_TC_MAP sends every class's DSCP to its priority and the CNP DSCP to the CNP
  priority; hosts mark CNPs with the same DSCP and RDMA traffic with the first lossless
  class's (ToS = DSCP << 2) — on a BiGraph, a NIC cabled to the lower part with that class's
  lower-part DSCP, which the switches send to its lower-part priority;
- priorities: every port's `pfc_enable` and `pfcwd_sw_enable` (PORT_QOS_MAP, with a PFC_WD
  entry) are the model's lossless priorities, and every NIC's `--pfc` vector the same;
- PGs: TC_TO_PRIORITY_GROUP_MAP gives each lossless priority a PG of its own, and every port's
  BUFFER_PG holds a lossless profile there whose XOFF covers the port's speed and its
  CABLE_LENGTH (`loom.qos.lossless.headroom`);
- queues: TC_TO_QUEUE_MAP and MAP_PFC_PRIORITY_TO_QUEUE send each lossless priority to one
  queue, which has ECN (WRED with `ecn`) and a lossless BUFFER_QUEUE profile; the DWRR weights
  are the classes' shares, and every NIC's ETS weights the same;
- MTU: every switch port's MTU carries the hosts' MTU plus an 802.1Q Ethernet header, and the
  hosts' MTU carries a RoCE MTU frame.
Cost: O(ports × priorities) per switch, O(NICs) per host.
"""

from __future__ import annotations

import re

from loom.qos.lossless import L2_OVERHEAD, ROCE_OVERHEAD, Lossless, dwrr_weights, headroom
from loom.qos.plan import QosPlan

_MLNX = re.compile(r"^mlnx_qos -i (\S+) --trust (\S+) --pfc (\S+) --tsa (\S+) --tcbw (\S+)$", re.M)
_CNP = re.compile(r"^echo (\d+) > /sys/class/net/(\S+)/ecn/roce_np/cnp_dscp$", re.M)
_TOS = re.compile(r"/sys/class/net/(\S+)/device/infiniband/.*cma_roce_tos .* -t (\d+)")
_MTU = re.compile(r"^MTUBytes=(\d+)$", re.M)


def check_switch(name: str, db: dict, plan: QosPlan, ll: Lossless, host_mtu: int) -> list[str]:
    """Problems of one switch's config_db against the model's classes."""
    out = []
    pfc = ",".join(map(str, ll.pfc))
    want_dscp = {str(c.dscp): str(c.tc) for c in plan.classes} | {str(ll.cnp_dscp): str(ll.cnp_tc)} | \
        {str(c.part_dscp): str(c.part_tc) for c in plan.classes if c.part_tc is not None}

    def table(key: str) -> dict:
        return db.get(key, {})

    got = table("DSCP_TO_TC_MAP").get("AZURE", {})
    for d, tc in want_dscp.items():
        if got.get(d) != tc:
            out.append(f"{name}: DSCP_TO_TC_MAP sends DSCP {d} to priority {got.get(d, 'nothing')}, the model says {tc}")
    pgs = table("TC_TO_PRIORITY_GROUP_MAP").get("AZURE", {})
    queues = table("TC_TO_QUEUE_MAP").get("AZURE", {})
    pfc_q = table("MAP_PFC_PRIORITY_TO_QUEUE").get("AZURE", {})
    for t in ll.pfc:
        others = [o for o, pg in pgs.items() if pg == pgs.get(str(t)) and o != str(t)]
        if str(t) not in pgs or others:
            out.append(f"{name}: lossless priority {t} has no PG of its own (TC_TO_PRIORITY_GROUP_MAP)")
        if queues.get(str(t)) is None or pfc_q.get(str(t)) != queues.get(str(t)):
            out.append(f"{name}: lossless priority {t} goes to queue {queues.get(str(t))} but PFC pauses queue "
                       f"{pfc_q.get(str(t))} (TC_TO_QUEUE_MAP, MAP_PFC_PRIORITY_TO_QUEUE)")
    sched, wred, profiles = table("SCHEDULER"), table("WRED_PROFILE"), table("BUFFER_PROFILE")
    lengths = table("CABLE_LENGTH").get("AZURE", {})
    weights = dwrr_weights(plan)
    for port, entry in table("PORT").items():
        mtu = int(entry.get("mtu", 0))
        if mtu < host_mtu + L2_OVERHEAD:
            out.append(f"{name} {port}: MTU {mtu} cannot carry the hosts' {host_mtu}-byte frames (+{L2_OVERHEAD} bytes header)")
        qm = table("PORT_QOS_MAP").get(port, {})
        for k in ("pfc_enable", "pfcwd_sw_enable"):
            if qm.get(k) != pfc:
                out.append(f"{name} {port}: PORT_QOS_MAP {k} is {qm.get(k)!r}, the lossless priorities are {pfc!r}")
        if port not in table("PFC_WD"):
            out.append(f"{name} {port}: no PFC watchdog (PFC_WD)")
        length = lengths.get(port, "")
        need = headroom(int(entry.get("speed", 0)) // 1000, int(length[:-1]) if re.fullmatch(r"\d+m", length) else 0, mtu)
        for t in ll.pfc:
            queue = table("QUEUE").get(f"{port}|{queues.get(str(t))}", {})
            if "ecn" not in wred.get(queue.get("wred_profile", ""), {}):
                out.append(f"{name} {port}: queue of lossless priority {t} has no ECN marking (QUEUE, WRED_PROFILE)")
            if "lossless" not in table("BUFFER_QUEUE").get(f"{port}|{queues.get(str(t))}", {}).get("profile", ""):
                out.append(f"{name} {port}: queue of lossless priority {t} has no lossless buffer (BUFFER_QUEUE)")
            prof = profiles.get(table("BUFFER_PG").get(f"{port}|{pgs.get(str(t))}", {}).get("profile", ""), {})
            if not length:
                out.append(f"{name} {port}: no CABLE_LENGTH")
            elif int(prof.get("xoff", 0)) < need.xoff:
                out.append(f"{name} {port}: PG {pgs.get(str(t))} has {prof.get('xoff', 'no')} bytes of XOFF headroom, "
                           f"{need.xoff} needed at {need.speed_gbps}G over {length} (BUFFER_PG, BUFFER_PROFILE)")
        for t, w in weights.items():
            s = sched.get(table("QUEUE").get(f"{port}|{queues.get(str(t))}", {}).get("scheduler", ""), {})
            if s.get("weight") != str(w):
                out.append(f"{name} {port}: priority {t} has DWRR weight {s.get('weight')}, the model's share is {w}%")
                break
    return out


def check_host(name: str, files: dict[str, str], plan: QosPlan, ll: Lossless,
               lower: frozenset[str] = frozenset()) -> tuple[list[str], set[int]]:
    """Problems of one host's NIC settings against the model's classes, and the MTUs it sets;
    `lower`: its NICs cabled to a BiGraph's lower part."""
    out = []
    script = files.get("mlnx_qos.sh", "")
    pfc_vector = ",".join("1" if t in ll.pfc else "0" for t in range(8))
    weights = dwrr_weights(plan)
    nics = _MLNX.findall(script)
    if not nics:
        out.append(f"{name}: mlnx_qos.sh sets no NIC")
    for nic, trust, pfc, _tsa, tcbw in nics:
        if trust != "dscp":
            out.append(f"{name} {nic}: trusts {trust}, the switches classify by DSCP")
        if pfc != pfc_vector:
            out.append(f"{name} {nic}: PFC on {pfc}, the switches' lossless priorities are {','.join(map(str, ll.pfc))}")
        bw = tcbw.split(",")
        if any(bw[t] != str(w) for t, w in weights.items() if t < len(bw)):
            out.append(f"{name} {nic}: ETS weights {tcbw}, the model's shares give "
                       f"{','.join(str(weights.get(t, 0)) for t in range(8))}")
    for dscp, nic in _CNP.findall(script):
        if int(dscp) != ll.cnp_dscp:
            out.append(f"{name} {nic}: sends CNPs with DSCP {dscp}, the switches expect {ll.cnp_dscp}")
    for nic, tos in _TOS.findall(script):
        dscp = ll.part_roce_dscp if nic in lower and ll.part_roce_dscp is not None else ll.roce_dscp
        if dscp is not None and int(tos) != dscp << 2:
            out.append(f"{name} {nic}: RDMA traffic marked with ToS {tos}, the lossless class needs {dscp << 2} (DSCP {dscp})"
                       + (" on the BiGraph's lower part" if nic in lower else ""))
    mtus = {int(m) for text in files.values() for m in _MTU.findall(text)}
    for m in mtus:
        if m < ll.roce_mtu + ROCE_OVERHEAD:
            out.append(f"{name}: MTU {m} cannot carry a {ll.roce_mtu}-byte RoCE payload (+{ROCE_OVERHEAD} bytes headers)")
    return out, mtus


def check_roce_qos(plan: QosPlan, ll: Lossless, switches: dict[str, dict], hosts: dict[str, dict[str, str]],
                   lower: dict[str, frozenset[str]]) -> dict:
    """Every switch's config_db and every host's files given, against the classes; the JSON of
    `loom check`'s `roce_qos`.  `lower`: host → its NICs cabled to a BiGraph's lower part
    (`lower_part_nics`; required, since those NICs mark RoCE differently)."""
    problems = []
    host_mtus: set[int] = set()
    for name, files in hosts.items():
        p, mtus = check_host(name, files, plan, ll, lower.get(name, frozenset()))
        problems += p
        host_mtus |= mtus
    if len(host_mtus) > 1:
        problems.append(f"hosts disagree on the MTU: {sorted(host_mtus)}")
    host_mtu = max(host_mtus, default=ll.host_mtu)
    for name, db in switches.items():
        problems += check_switch(name, db, plan, ll, host_mtu)
    return {
        "ok": not problems,
        "switches": len(switches),
        "hosts": len(hosts),
        "priorities": [{"name": c.name, "priority": c.tc, "dscp": c.dscp, "lossless": c.lossless} for c in plan.classes]
        + [{"name": f"{c.name}/lower", "priority": c.part_tc, "dscp": c.part_dscp, "lossless": True}
           for c in plan.classes if c.part_tc is not None]
        + [{"name": "cnp", "priority": ll.cnp_tc, "dscp": ll.cnp_dscp, "lossless": False}],
        "pfc": list(ll.pfc),
        "mtu": {"switch": ll.switch_mtu, "host": host_mtu, "roce": ll.roce_mtu},
        "problems": problems,
    }


#: Above this many switches (hosts), `check_fabric` reads a sample: the first and last switch of
#: every role in every plane (node of every node type) — the tables are built per port by one
#: function, so the ends of each kind exercise every code path at ~1 s on the 32,768-GPU fabric.
FULL_CHECK = 256


def _ends(items: list, key) -> list:
    groups: dict = {}
    for x in items:
        groups.setdefault(key(x), []).append(x)
    return [x for g in groups.values() for x in dict.fromkeys((g[0], g[-1]))]


def check_fabric(fabric) -> dict:
    """Render the switches' and hosts' files of an Ethernet fabric (all, or the sample above
    FULL_CHECK) and cross-check them."""
    from loom.render.roce import RoceConfigs

    switches = list(fabric.switches)
    if len(switches) > FULL_CHECK:
        switches = _ends(switches, lambda s: (s.plane, s.role))
    cabled = sorted({p.node for p in fabric.ports})
    nodes = [fabric.nodes[n] for n in cabled]
    if len(nodes) > FULL_CHECK:
        nodes = _ends(nodes, lambda n: n.node_type)
    rc = RoceConfigs(fabric, switches={s.index for s in switches})
    report = check_roce_qos(rc.qos, rc.lossless, {s.name: rc.config_db(s) for s in switches},
                            {n.name: rc.host(n.index) for n in nodes}, lower_part_nics(fabric))
    report["sampled"] = len(switches) < len(fabric.switches) or len(nodes) < len(cabled)
    return report


def lower_part_nics(fabric) -> dict[str, frozenset[str]]:
    """Host → its NIC interfaces cabled to a BiGraph's lower part."""
    from loom.render.roce import host_ifname, lower_part_ports

    out: dict[str, set[str]] = {}
    for i in lower_part_ports(fabric):
        p = fabric.ports[i]
        out.setdefault(fabric.nodes[p.node].name, set()).add(host_ifname(p))
    return {k: frozenset(v) for k, v in out.items()}
