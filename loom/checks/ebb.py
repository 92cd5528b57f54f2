"""Effective bisection bandwidth (Hoefler, Schneider, Lumsdaine 2008).

Split a zone's (or the whole subnet's) CA ports at random into two halves and pair each port of one half with one of
the other; each pair is one flow from the first half to the second.  Every directed channel (switch-to-switch or host link) is
shared by the flows that cross it; a flow gets 1 / (most flows on any channel of its path).
eBB is the mean flow bandwidth over many random bisections: 1.0 means full bisection
bandwidth under this routing; static routing on a non-blocking fat tree typically gives ~0.8.
Sampling stops early once the 95 % confidence interval of that mean (over the bisections'
own means) is within ±CI_HALF_WIDTH: a large fabric's bisections barely differ (at the LID
limit 20,000 flows each, tight after MIN_SAMPLES), a small one's do and use every sample.  The
rule is deterministic for a seed, so every command reports one figure; the interval and the
bisections drawn are reported beside it.
Cost: O(samples × CAs × path length).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .paths import Walk

#: half-width of the 95 % interval at which sampling stops, and the bisections drawn before the
#: interval is trusted (a t-quantile would matter below ~10; 1.96 is within 5 % of it from 16 up)
CI_HALF_WIDTH, MIN_SAMPLES = 0.002, 16


@dataclass(frozen=True)
class Estimate:
    """An eBB figure: the mean, the half-width of its 95 % interval, the bisections drawn."""

    value: float
    ci95: float
    bisections: int


def effective_bisection_bandwidth(walk: Walk, samples: int = 200, seed: int = 1) -> dict[str, float]:
    """eBB within each zone of the subnet, {zone: eBB}, reproducible for a given seed."""
    return {zone: e.value for zone, e in zone_estimates(walk, samples, seed).items()}


def zone_estimates(walk: Walk, samples: int = 200, seed: int = 1) -> dict[str, Estimate]:
    """Each zone's eBB with its interval, `samples` bisections at most."""
    sn = walk.tables.subnet
    zone_of = np.array([sn.switch(i).zone for i in range(sn.n)])
    out = {}
    for zone in dict.fromkeys(zone_of.tolist()):
        cas = sn.ca_lids[zone_of[sn.ca_switch[sn.ca_lids]] == zone]
        if len(cas) >= 2:
            out[zone] = _ebb(walk, cas, samples, seed)
    return out


def fabric_ebb(walk: Walk, samples: int = 200, seed: int = 1) -> Estimate | None:
    """eBB over all CA ports of the subnet (bisections across zones: what a job spanning zones
    sees); None for fewer than two CAs."""
    cas = walk.tables.subnet.ca_lids
    return _ebb(walk, cas, samples, seed) if len(cas) >= 2 else None


def _ebb(walk: Walk, cas: np.ndarray, samples: int, seed: int) -> Estimate:
    sn, lft, nxt = walk.tables.subnet, walk.tables.lft, walk.next_switch
    rng = np.random.default_rng(seed)
    half = len(cas) // 2
    means: list[float] = []
    while len(means) < samples:
        perm = rng.permutation(cas)[: 2 * half]
        src, dst = perm[:half], perm[half:]
        means.append(float(_flow_bandwidth(sn, lft, nxt, src, dst).mean()))
        ci = _half_width(means)
        if len(means) >= MIN_SAMPLES and ci <= CI_HALF_WIDTH:
            break
    return Estimate(round(sum(means) / len(means), 4), round(_half_width(means), 4), len(means))


def _half_width(means: list[float]) -> float:
    """Half-width of the 95 % interval of the mean of `means` (0 for one value)."""
    k = len(means)
    return 1.96 * float(np.std(means, ddof=1)) / math.sqrt(k) if k > 1 else 0.0


def _flow_bandwidth(sn, lft, nxt, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    ports = sn.max_port + 1
    cur = sn.ca_switch[src].copy()
    chans = [sn.n * ports + src, sn.n * ports + (sn.max_lid + 1) + dst]  # host links in and out
    live = np.ones(len(src), bool)
    for _ in range(sn.n):
        if not live.any():
            break
        port = lft[cur, dst].astype(np.int64)
        ch = np.where(live, cur * ports + port, -1)
        chans.append(ch)
        step = nxt[cur, dst]
        live &= step >= 0
        cur = np.where(live, step, cur)
    paths = np.stack(chans, axis=1)
    load = np.bincount(paths[paths >= 0], minlength=1)
    worst = np.where(paths >= 0, load[np.maximum(paths, 0)], 0).max(axis=1)
    return 1.0 / worst
