"""One InfiniBand subnet (one plane) of a fabric as dense arrays indexed by (switch, port) and LID.

Routing engines, checks and renderers all read this view instead of walking cables: it is
built once per plane in O(cables) and every later question ("who is behind port 7 of leaf 3",
"which switch owns LID 812") is an array lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from loom.expand import SWITCH, Fabric

NONE, TO_SWITCH, TO_CA = 0, 1, 2
#: Height of each switch role: up-ports lead from layer n to layer n + 1.
LAYER = {"leaf": 0, "upper": 0, "lower": 0, "spine": 1, "core": 2}


@dataclass(frozen=True)
class Subnet:
    fabric: Fabric
    plane: int
    switches: np.ndarray  # global switch index for each local switch row
    max_port: int
    peer_kind: np.ndarray  # [sw, port] NONE / TO_SWITCH / TO_CA
    peer_dev: np.ndarray  # [sw, port] local switch index, or HostPort index
    peer_port: np.ndarray  # [sw, port] port number at the far end
    max_lid: int
    lid_switch: np.ndarray  # [lid] local switch owning the LID (port 0), -1 if a CA port's
    lid_port: np.ndarray  # [lid] HostPort index owning the LID, -1 if a switch's
    switch_lid: np.ndarray  # [sw] LID of each local switch
    ca_lids: np.ndarray  # LIDs of CA ports, ascending
    ca_switch: np.ndarray  # [lid] local switch a CA port is cabled to (-1 for switch LIDs)
    ca_switch_port: np.ndarray  # [lid] the switch port it is cabled to
    port_lid: np.ndarray  # [HostPort index] its LID in this subnet, -1 for ports of other planes

    @property
    def n(self) -> int:
        return len(self.switches)

    def name(self, sw: int) -> str:
        return self.fabric.switches[int(self.switches[sw])].name

    def switch(self, sw: int):
        return self.fabric.switches[int(self.switches[sw])]

    def lid_name(self, lid: int) -> str:
        if self.lid_switch[lid] >= 0:
            return self.name(int(self.lid_switch[lid]))
        return self.fabric.ports[int(self.lid_port[lid])].ca

    def out_port(self, entries: np.ndarray) -> np.ndarray:
        """The port table entries leave by, as indices into the [sw, port] arrays: 0 (nothing
        cabled) for "no route" (255) and anything past the last port."""
        entries = np.asarray(entries, dtype=np.int64)
        return np.where(entries <= self.max_port, entries, 0)

    def behind(self, lft: np.ndarray, rows, lids) -> np.ndarray:
        """The switch each entry of `rows` for `lids` leads to (-1: a CA, nothing cabled, no
        route); `rows` and `lids` broadcast (rows as a column against LIDs as a row: a matrix)."""
        rows, lids = np.broadcast_arrays(np.asarray(rows), np.asarray(lids))
        port = self.out_port(lft[rows, lids])
        return np.where(self.peer_kind[rows, port] == TO_SWITCH, self.peer_dev[rows, port], -1)

    @cached_property
    def up_port_mask(self) -> np.ndarray:
        """[sw, port] True where the port leads to a switch one layer up (leaf→spine, spine→core)."""
        layer = np.array([LAYER[self.switch(i).role] for i in range(self.n)])
        to_switch = self.peer_kind == TO_SWITCH
        peer_layer = layer[np.where(to_switch, self.peer_dev, 0)]
        return to_switch & (peer_layer == layer[:, None] + 1)

    @cached_property
    def lid_names(self) -> list[str | None]:
        """Name of every LID's owner (None for unused LIDs)."""
        return [self.lid_name(l) if (self.lid_switch[l] >= 0 or self.lid_port[l] >= 0) else None
                for l in range(self.max_lid + 1)]

    def lid_role(self, lid: int) -> str:
        """Role of the destination: the node's role for a CA port, 'switch' for a switch."""
        if self.lid_switch[lid] >= 0:
            return "switch"
        return self.fabric.nodes[self.fabric.ports[int(self.lid_port[lid])].node].role


def subnets(fabric: Fabric) -> list[Subnet]:
    return [subnet(fabric, p) for p in range(fabric.planes)]


def subnet(fabric: Fabric, plane: int) -> Subnet:
    sw_global = np.array([s.index for s in fabric.switches if s.plane == plane], dtype=np.int64)
    local = np.full(len(fabric.switches), -1, dtype=np.int64)
    local[sw_global] = np.arange(len(sw_global))
    max_port = max(fabric.switches[i].ports for i in sw_global)
    shape = (len(sw_global), max_port + 1)
    peer_kind = np.zeros(shape, np.int8)
    peer_dev = np.full(shape, -1, np.int64)
    peer_port = np.zeros(shape, np.int64)
    c = fabric.cables
    on = c.plane == plane
    if fabric.down_switches:  # a switch that is down carries nothing: its cables are not links
        down = np.zeros(len(fabric.switches), bool)
        down[list(fabric.down_switches)] = True
        for kind, dev in ((c.a_kind, c.a_dev), (c.b_kind, c.b_dev)):
            on &= ~((kind == SWITCH) & down[np.where(kind == SWITCH, dev, 0)])
    for near, far in (("a", "b"), ("b", "a")):
        nk, nd, np_ = (getattr(c, f"{near}_{x}")[on] for x in ("kind", "dev", "port"))
        fk, fd, fp = (getattr(c, f"{far}_{x}")[on] for x in ("kind", "dev", "port"))
        m = nk == SWITCH
        rows, cols = local[nd[m]], np_[m]
        peer_kind[rows, cols] = np.where(fk[m] == SWITCH, TO_SWITCH, TO_CA)
        peer_dev[rows, cols] = np.where(fk[m] == SWITCH, local[np.where(fk[m] == SWITCH, fd[m], 0)], fd[m])
        peer_port[rows, cols] = fp[m]
    ports = [p for p in fabric.ports if p.plane == plane]
    port_lid = np.full(len(fabric.ports) + 1, -1, np.int64)  # the extra last entry answers index -1
    if fabric.technology == "infiniband":
        switch_lid = np.array([fabric.switches[i].lid for i in sw_global], dtype=np.int64)
        for p in ports:
            port_lid[p.index] = p.lid
    else:
        # Ethernet has no LIDs; destinations get ids by the same rule (NIC ports, then switches)
        # so that engines and checks serve both: these ids never leave loom
        for k, p in enumerate(ports):
            port_lid[p.index] = k + 1
        switch_lid = np.arange(len(ports) + 1, len(ports) + 1 + len(sw_global), dtype=np.int64)
    max_lid = int(max(switch_lid.max(), port_lid.max()))
    lid_switch = np.full(max_lid + 1, -1, np.int64)
    lid_switch[switch_lid] = np.arange(len(sw_global))
    lid_port = np.full(max_lid + 1, -1, np.int64)
    ca_switch = np.full(max_lid + 1, -1, np.int64)
    ca_switch_port = np.zeros(max_lid + 1, np.int64)
    for p in ports:
        lid_port[port_lid[p.index]] = p.index
    ca_rows, ca_cols = np.nonzero(peer_kind == TO_CA)
    ca_lid = port_lid[peer_dev[ca_rows, ca_cols]]
    ca_switch[ca_lid] = ca_rows
    ca_switch_port[ca_lid] = ca_cols
    return Subnet(fabric, plane, sw_global, max_port, peer_kind, peer_dev, peer_port, max_lid, lid_switch, lid_port,
                  switch_lid, np.sort(ca_lid), ca_switch, ca_switch_port, port_lid)
