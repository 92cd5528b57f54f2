"""Collective-aware rank maps: the rank order that keeps each step's pairs on the fewest links.

A rank is an endpoint of plane 0 (a GPU–NIC pair: one NIC port of a job node; the other planes
repeat plane 0's placement).  Orders:
- **naive**: the job's nodes as given, each node's NICs in order — what a hostfile sorted by
  name gives;
- **leaf-contiguous** (fat trees, rings and halving-doubling): endpoints grouped by the leaf
  they are cabled to, leaves in fabric order, so a ring crosses between leaves once per leaf
  and the early halving-doubling steps stay under one leaf; for a tree, the binary tree laid
  over that order in pre-order, so each subtree is a run of neighbours;
- **HDRM** (EFLOPS §IV-B, halving-doubling on a BiGraph): a *physical group* is the endpoints of
  one switch, a *logical group* takes the i-th endpoint of every switch.  The base order of one
  logical group splits the pairs (2j, 2j+1) over the two parts, swapping a pair whose index j has
  an odd number of 1 bits (X, the first of each pair, goes to upper switch j; Y to lower switch
  j); logical group i uses X + i·N and Y + i·N, swapped when i has an odd number of 1 bits, with
  the first vector rotated left by i so that the same-index pairs of different logical groups
  take different links.  Every halving-doubling step then crosses between the parts on distinct
  links (the check in `loom.checks.congestion` measures it).
The rank files: `hostfile` (one line per rank: its node), `rankfile` (Open MPI: `rank R=node
slot=S`, S the node-local index of the GPU–NIC pair) and `ranks.tsv` (rank, node, NIC, local
index: what an NCCL launcher sets as RANK / LOCAL_RANK).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loom.expand import HOST, SWITCH, Fabric
from loom.routing.subnet import Subnet

COLLECTIVES = ("ring", "halving-doubling", "tree")


class RankError(ValueError):
    """The job or collective cannot be mapped as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Endpoint:
    node: str
    nic: str
    local: int  # index of the GPU–NIC pair on its node
    lid: int  # LID (InfiniBand) or loom's destination id (Ethernet) in plane 0
    switch: int  # local switch row in plane 0


def endpoints(f: Fabric, sn: Subnet, job: list[str]) -> list[Endpoint]:
    """Plane-0 endpoints of the job's nodes, in job order then NIC order."""
    unknown = [n for n in job if n not in f.node_index]
    if unknown:
        raise RankError(f"--job names nodes the model does not have: {', '.join(unknown[:5])}"
                        + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
    c = f.cables
    host = (c.a_kind == HOST) & (c.b_kind == SWITCH)
    cabled = set(c.a_dev[host].tolist())
    by_node: dict[int, list] = {}
    for p in f.ports:
        if p.plane == sn.plane and p.index in cabled:
            by_node.setdefault(p.node, []).append(p)
    out = []
    for name in job:
        for k, p in enumerate(by_node.get(f.node_index[name], [])):
            lid = int(sn.port_lid[p.index])
            out.append(Endpoint(name, p.nic, k, lid, int(sn.ca_switch[lid])))
    if len(out) < 2:
        raise RankError("the job needs at least two endpoints (NIC ports in plane 0)")
    return out


def steps(collective: str, P: int) -> list[list[tuple[int, int]]]:
    """Pairs (sender rank, receiver rank) of each step."""
    if collective == "ring":
        return [[(r, (r + 1) % P) for r in range(P)]]
    if collective == "halving-doubling":
        if P & (P - 1):
            raise RankError(f"halving-doubling needs a power-of-two number of ranks; the job has {P} "
                            "(fix: give --job a power-of-two number of endpoints)")
        return [[(r, r ^ (1 << k)) for r in range(P)] for k in range(P.bit_length() - 1)]
    if collective == "tree":
        depth = [(r + 1).bit_length() - 1 for r in range(P)]
        return [[(r, (r - 1) // 2) for r in range(1, P) if depth[r] == d] for d in range(max(depth), 0, -1)]
    raise RankError(f"--collective must be one of {', '.join(COLLECTIVES)}, not {collective!r}")


def leaf_order(sn: Subnet, eps: list[Endpoint]) -> list[int]:
    def key(i: int):
        s = sn.switch(eps[i].switch)
        return (s.zone, s.pod or 0, s.edge if s.edge is not None else -1, i)

    return sorted(range(len(eps)), key=key)


def _odd(x: int) -> bool:
    return bin(x).count("1") % 2 == 1


def hdrm_base(n: int) -> tuple[list[int], list[int]]:
    """One logical group of 2n ranks over n upper and n lower switches: (X, Y), X[k] on upper
    switch k, Y[k] on lower switch k (EFLOPS Fig. 10: n = 4 gives [0, 3, 5, 6], [1, 2, 4, 7])."""
    pairs = [(2 * j + 1, 2 * j) if _odd(j) else (2 * j, 2 * j + 1) for j in range(n)]
    return [a for a, _ in pairs], [b for _, b in pairs]


def hdrm_order(sn: Subnet, eps: list[Endpoint]) -> list[int]:
    """EFLOPS's HDRM (module doc): rank → endpoint index.  Needs the job on n upper and n lower
    switches with m endpoints on each, n and m powers of two."""
    groups: dict[int, list[int]] = {}
    for i, e in enumerate(eps):
        groups.setdefault(e.switch, []).append(i)
    parts = {"upper": [], "lower": []}
    for s in sorted(groups, key=lambda s: sn.switch(s).position):
        role = sn.switch(s).role
        if role not in parts:
            raise RankError("HDRM maps onto a BiGraph; use --collective ring or tree here, or a BiGraph model")
        parts[role].append(s)
    upper, lower = parts["upper"], parts["lower"]
    n = len(upper)
    m = {len(v) for v in groups.values()}
    if n != len(lower) or len(m) != 1 or n & (n - 1) or next(iter(m)) & (next(iter(m)) - 1):
        raise RankError("HDRM needs the job on as many upper as lower switches (a power of two) with the same "
                        f"power-of-two number of endpoints on each; the job has {len(upper)} upper and {len(lower)} "
                        f"lower switches with {sorted(m)} endpoints (fix: pick whole physical groups)")
    m = next(iter(m))
    N = 2 * n
    X, Y = (np.array(v) for v in hdrm_base(n))
    order = [-1] * (N * m)
    for i in range(m):
        first, second = (Y + i * N, X + i * N) if _odd(i) else (X + i * N, Y + i * N)
        first = np.roll(first, -i)  # left-shift by i: pairs of different logical groups take different links
        for k in range(n):
            order[int(first[k])] = groups[upper[k]][i]
            order[int(second[k])] = groups[lower[k]][i]
    return order


def tree_order(sn: Subnet, eps: list[Endpoint]) -> list[int]:
    """The binary tree (rank r's parent (r-1)//2) laid over the leaf-contiguous order in
    pre-order, so every subtree is a run of neighbouring endpoints: most parent–child pairs
    share a leaf."""
    leaves = leaf_order(sn, eps)
    P = len(eps)
    order = [-1] * P
    stack, pos = [0], 0
    while stack:
        r = stack.pop()
        order[r] = leaves[pos]
        pos += 1
        stack += [c for c in (2 * r + 2, 2 * r + 1) if c < P]
    return order


def rank_order(sn: Subnet, eps: list[Endpoint], collective: str) -> tuple[list[int], str]:
    """(rank → endpoint index, method name)."""
    if collective == "halving-doubling" and any(sn.switch(e.switch).role in ("upper", "lower") for e in eps):
        return hdrm_order(sn, eps), "HDRM"
    if collective == "tree":
        return tree_order(sn, eps), "leaf-contiguous subtrees"
    return leaf_order(sn, eps), "leaf-contiguous"


def rank_files(eps: list[Endpoint], order: list[int]) -> dict[str, str]:
    ranked = [eps[i] for i in order]
    return {
        "hostfile": "".join(f"{e.node}\n" for e in ranked),
        "rankfile": "".join(f"rank {r}={e.node} slot={e.local}\n" for r, e in enumerate(ranked)),
        "ranks.tsv": "rank\tnode\tnic\tlocal_rank\n" + "".join(f"{r}\t{e.node}\t{e.nic}\t{e.local}\n" for r, e in enumerate(ranked)),
    }
