"""Slurm's `block_sizes` (topology/block): the one reading of them, for the model's rules and the
checks of a rendered topology.yaml alike."""

from __future__ import annotations

MAX_BLOCK_LEVEL = 15


def check_block_sizes(sizes, block_nodes: dict[str, int] | None = None) -> list[str]:
    """`block_sizes` (node counts): positive integers, base first, each next a power of two times
    the one before; with `block_nodes` (block → node count), every block holds a base block."""
    if not isinstance(sizes, list) or not sizes or not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        return ["block_sizes must be a non-empty list of integers (node counts)"]
    problems = []
    base = sizes[0]
    if base <= 0:
        return [f"block_sizes: the base block size must be positive, got {base}"]
    for prev, size in zip(sizes, sizes[1:]):
        ratio = size // prev if prev > 0 and size % prev == 0 else 0
        if ratio < 2 or ratio & (ratio - 1):
            problems.append(f"block_sizes: {size} after {prev} is not a power of two times it (2×, 4×, ...)")
        elif size // base > 1 << MAX_BLOCK_LEVEL:
            problems.append(f"block_sizes: {size} is more than 2^{MAX_BLOCK_LEVEL} base blocks of {base}")
    for name, n in (block_nodes or {}).items():
        if n < base:
            problems.append(f"block {name} has {n} nodes, fewer than the base block size {base}")
    return problems
