"""The cache of expanded fabrics (loom.expand.cache): a hit is the fabric a fresh expansion gives,
whatever changes an input misses, a damaged entry is a miss, and a cache that cannot be used
only costs time."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import loom.expand as expand_pkg
from loom.expand import cache as cachemod
from loom.expand import load_fabric
from loom.model import ModelError

ROOT = Path(__file__).resolve().parent.parent
TOPO = ROOT / "topology"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A cache of the test's own that keeps every fabric, however quickly it expands."""
    d = tmp_path / "cache"
    monkeypatch.setenv("LOOM_CACHE_DIR", str(d))
    monkeypatch.setattr(cachemod, "WORTH_SECONDS", 0.0)
    return d


@pytest.fixture
def expansions(monkeypatch) -> list[str]:
    """The models expanded (not read from the cache) from now on."""
    seen: list[str] = []
    real = expand_pkg._expanded

    def counted(path, lock, as_built):
        seen.append(Path(path).name)
        return real(path, lock, as_built)

    monkeypatch.setattr(expand_pkg, "_expanded", counted)
    return seen


def copied(tmp_path: Path, name: str = "tiny") -> Path:
    d = tmp_path / "m"
    d.mkdir(exist_ok=True)
    for f in (f"{name}.yaml", f"{name}.lock.json"):
        if (TOPO / f).exists():
            shutil.copy(TOPO / f, d / f)
    return d / f"{name}.yaml"


def assert_same(a, b) -> None:
    """Every field of two fabrics equal, numpy columns element by element."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "cables":
            for c in dataclasses.fields(x):
                assert np.array_equal(getattr(x, c.name), getattr(y, c.name)), c.name
                assert getattr(x, c.name).dtype == getattr(y, c.name).dtype, c.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("name", ["tiny", "fire-flyer-2", "roce-lab", "eflops-bigraph"])
def test_a_hit_is_the_fabric_a_fresh_expansion_gives(cache, expansions, monkeypatch, name):
    model = TOPO / f"{name}.yaml"
    kept = load_fabric(model)
    assert len(list(cache.glob("*.fabric"))) == 1
    hit = load_fabric(model)
    assert expansions == [model.name]  # the second came from the cache
    monkeypatch.setenv("LOOM_CACHE_DIR", "off")
    fresh = load_fabric(model)
    assert_same(hit, fresh)
    assert_same(kept, fresh)
    assert hit.switch_index == fresh.switch_index and hit.down_switches == fresh.down_switches


def test_whatever_changes_an_input_misses(cache, expansions, tmp_path, monkeypatch):
    model = copied(tmp_path)
    lock = model.with_name("tiny.lock.json")
    nodes = len(load_fabric(model).nodes)
    load_fabric(model)
    assert len(expansions) == 1
    grown = model.read_text().replace("count: 4", "count: 5", 1)
    assert grown != model.read_text()
    model.write_text(grown)
    assert len(load_fabric(model).nodes) == nodes + 1  # the model's bytes
    lock.write_text(json.dumps(json.loads(lock.read_text()), indent=4) + "\n")
    load_fabric(model)  # the lock's bytes (the same lock, written otherwise)
    lock.unlink()
    load_fabric(model)  # the lock gone
    load_fabric(model, as_built=False)
    monkeypatch.setattr(cachemod, "_code", lambda: b"another loom")
    load_fabric(model)
    assert len(expansions) == 6
    load_fabric(model)
    assert len(expansions) == 6


def test_a_damaged_entry_is_a_miss_and_goes(cache, expansions, tmp_path):
    model = copied(tmp_path)
    good = load_fabric(model)
    (entry,) = cache.glob("*.fabric")
    raw = entry.read_bytes()
    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0xFF
    head = len(b"loom-fabric-cache 1\n") + 32
    junk = os.urandom(2000)
    resigned = raw[:head - 32] + hashlib.sha256(junk).digest() + junk  # a right checksum over junk
    for damaged in (bytes(flipped), raw[:len(raw) // 3], b"", b"not a cache entry" + raw, resigned):
        entry.write_bytes(damaged)
        assert_same(load_fabric(model), good)
        assert entry.read_bytes() == raw  # removed, then kept anew
    assert len(expansions) == 6
    entry.unlink()
    os.mkfifo(entry)  # would block a plain read
    assert_same(load_fabric(model), good)


def test_a_model_that_fails_is_never_kept(cache, tmp_path):
    model = copied(tmp_path)
    model.write_text(model.read_text().replace("count: 4", "count: -4", 1))
    for _ in range(2):
        with pytest.raises(ModelError):
            load_fabric(model)
    assert list(cache.glob("*.fabric")) == []


def test_off_or_not_ours_writes_nothing(cache, expansions, tmp_path, monkeypatch):
    model = copied(tmp_path)
    monkeypatch.setenv("LOOM_CACHE_DIR", "off")
    load_fabric(model)
    load_fabric(model)
    assert not cache.exists() and len(expansions) == 2
    monkeypatch.setenv("LOOM_CACHE_DIR", str(cache))
    cache.mkdir()
    os.chown(cache, 65534, 65534)  # another user's directory (the tests run as root)
    load_fabric(model)
    assert list(cache.iterdir()) == []


def test_the_least_recently_used_go_first(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(cachemod, "KEEP", 2)
    a = copied(tmp_path)
    b, c = a.with_name("b.yaml"), a.with_name("c.yaml")
    b.write_text(a.read_text().replace("count: 4", "count: 3", 1))
    c.write_text(a.read_text().replace("count: 4", "count: 2", 1))
    for m in (a, b):
        load_fabric(m)
    first = {p.name for p in cache.glob("*.fabric")}
    os.utime(max(cache.glob("*.fabric"), key=lambda p: p.stat().st_mtime_ns), (1, 1))  # make one old
    load_fabric(a)  # a hit: a's entry is recent again
    load_fabric(c)
    kept = {p.name for p in cache.glob("*.fabric")}
    assert len(kept) == 2 and len(kept & first) == 1


def test_configs_only_from_the_cache_writes_the_same_files(tmp_path):
    """What the cache is for, as the user runs it: the 32,768-GPU fabric's one switch."""
    model, env = TOPO / "roce-4plane.yaml", {**os.environ, "LOOM_CACHE_DIR": str(tmp_path / "cache")}
    outs = []
    for n, cache_dir in enumerate((env["LOOM_CACHE_DIR"], env["LOOM_CACHE_DIR"], "off")):
        out = tmp_path / f"out{n}"
        r = subprocess.run([str(Path(sys.executable).parent / "loom"), "configs", str(model), "--only", "p0-fab-leaf0", "--out", str(out)],
                           env={**env, "LOOM_CACHE_DIR": cache_dir}, capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        outs.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert len(list((tmp_path / "cache").glob("*.fabric"))) == 1
    assert outs[0] and outs[0] == outs[1] == outs[2]


def test_the_directory_by_default_and_by_choice(monkeypatch, tmp_path):
    monkeypatch.delenv("LOOM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cachemod.cache_dir() == tmp_path / "xdg" / "loom" / "fabrics"  # beside the NetBox test cache, not in it
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cachemod.cache_dir() == tmp_path / "home" / ".cache" / "loom" / "fabrics"
    monkeypatch.setenv("LOOM_CACHE_DIR", "off")
    assert cachemod.cache_dir() is None
