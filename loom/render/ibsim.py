"""The ibsim net file of one InfiniBand subnet: every switch and CA with its cabled ports, link
speeds, and Loom's GUIDs (set with ibsim's `do Guid` console command so the simulated fabric
carries exactly the port GUIDs that Loom's guid2lid and LFT files name).  A switch that is down
(`missing_switches`) is left out with its cables: the simulated fabric is the fabric as it stands."""

from __future__ import annotations

from collections import defaultdict

from loom.expand import HOST, SWITCH, Fabric

WIDTH_SPEED = {100: "4xEDR", 200: "4xHDR", 400: "4xNDR", 800: "4xXDR"}


def ibsim_net(fabric: Fabric, plane: int = 0) -> str:
    c = fabric.cables
    name = {SWITCH: lambda d: fabric.switches[d].name, HOST: lambda d: fabric.ports[d].ca}
    port_no = {SWITCH: lambda d, p: p, HOST: lambda d, p: fabric.ports[d].port}
    links: dict[tuple[int, str], list[str]] = defaultdict(list)
    down = fabric.down_switches
    for i in range(len(c)):
        if int(c.plane[i]) != plane or any(int(k) == SWITCH and int(d) in down for k, d in
                                            ((c.a_kind[i], c.a_dev[i]), (c.b_kind[i], c.b_dev[i]))):
            continue
        speed = WIDTH_SPEED[int(c.speed_gbps[i])]
        ends = [(int(c.a_kind[i]), int(c.a_dev[i]), int(c.a_port[i])), (int(c.b_kind[i]), int(c.b_dev[i]), int(c.b_port[i]))]
        for (k, d, p), (k2, d2, p2) in (ends, ends[::-1]):
            owner = name[k](d)
            links[(k, owner)].append((port_no[k](d, p), f'[{port_no[k](d, p)}] "{name[k2](d2)}"[{port_no[k2](d2, p2)}] # lid 0 {speed}'))
    out = [f"# ibsim net of {fabric.name} plane {plane}, written by loom (same model => same file)", ""]
    for s in fabric.switches:
        if s.plane != plane or s.index in down:
            continue
        out.append(f'Switch {s.ports} "{s.name}"')
        out += [line for _, line in sorted(links[(SWITCH, s.name)])]
        out.append("")
    cas: dict[str, list] = {}
    for p in fabric.ports:
        if p.plane == plane:
            cas.setdefault(p.ca, []).append(p)
    for ca, ports in cas.items():
        nports = max(p.port for p in ports)
        out.append(f'Hca {nports} "{ca}"')
        out += [line for _, line in sorted(links[(HOST, ca)])]
        out.append("")
    for s in fabric.switches:
        if s.plane == plane and s.index not in down:
            out.append(f'do Guid "{s.name}" 0x{s.guid:016x}')
    for ca, ports in cas.items():
        out.append(f'do Guid "{ca}" 0x{ports[0].ca_guid:016x}')
        for p in ports:
            out.append(f'do Guid "{ca}"[{p.port}] 0x{p.guid:016x}')
    return "\n".join(out) + "\n"
