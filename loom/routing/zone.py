"""One fat-tree zone of one subnet as the `fattree` engine sees it: its leaves, spines and cores
as local switch rows in position order, and the tree's shape (spines a leaf reaches, leaves
under a spine, parallel links, up-port indices)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from loom.model.schema import FatTree3

from .subnet import Subnet


class Zone:
    """Local switch indices of one zone of one subnet, by role and position."""

    def __init__(self, sn: Subnet, spec) -> None:
        self.spec = spec
        self.name = spec.name
        self.three = isinstance(spec, FatTree3)
        rows = [i for i in range(sn.n) if sn.switch(i).zone == spec.name]
        by_role = defaultdict(list)
        for i in rows:
            by_role[sn.switch(i).role].append(i)
        self.leaves = np.array(sorted(by_role["leaf"], key=lambda i: sn.switch(i).edge), dtype=np.int64)
        self.spines = np.array(sorted(by_role["spine"], key=lambda i: (sn.switch(i).pod or 0, sn.switch(i).position)), dtype=np.int64)
        self.cores = np.array(sorted(by_role["core"], key=lambda i: sn.switch(i).position), dtype=np.int64)
        self.S = spec.spines_per_pod if self.three else spec.spines  # spines reached from a leaf
        self.L = spec.leaves_per_pod if self.three else spec.leaves  # leaves under a spine
        self.links = spec.leaf_up // self.S
        self.U = spec.leaf_up
        self.down = spec.leaf_down
        if self.three:
            self.G = spec.cores // spec.spines_per_pod
            self.clinks = spec.spine_up // self.G
            self.spine_down = self.L * self.links

    def leaf_pod(self, edge: np.ndarray) -> np.ndarray:
        return edge // self.L if self.three else np.zeros_like(edge)

    def spine(self, pod: int, pos: int) -> int:
        return int(self.spines[pod * self.S + pos])
