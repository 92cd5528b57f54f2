"""The two sides of a model change, for `loom diff` and `loom cabling diff`: a file, a git
revision of the model (with its lock file at that revision), or the model as it is."""

from __future__ import annotations

from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loom.expand import Fabric


def model_at(model: Path, rev: str | None, file: Path | None, tmp: Path, label: str) -> tuple[Path, str]:
    """The model file of one side of a diff: a file, a git revision of MODEL (with its lock file
    at that revision beside it), or MODEL itself."""
    import subprocess

    from loom.inputs import InputError, git_revision

    if file is not None:
        return file, str(file)
    if rev is None:
        return model, "working tree"
    try:
        git_revision(rev)
    except InputError as exc:
        raise DiffError(str(exc)) from None
    if not model.resolve().parent.is_dir():
        raise DiffError(f"{model}: no such directory; give the path of the model in the repository")
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=model.resolve().parent, capture_output=True, text=True)
    if top.returncode != 0:
        raise DiffError(f"{model} is not in a git repository; use --{label}-file")
    rel = model.resolve().relative_to(top.stdout.strip())
    sha = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                         cwd=top.stdout.strip(), capture_output=True, text=True)
    if sha.returncode != 0:
        raise DiffError(f"{rev} is not a commit of the repository holding {model}")
    show = subprocess.run(["git", "show", f"{sha.stdout.strip()}:{rel}"], cwd=top.stdout.strip(), capture_output=True)
    if show.returncode != 0:
        raise DiffError(f"cannot read {rel} at revision {rev}: {show.stderr.decode(errors='replace').strip()}")
    path = tmp / label / model.name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(show.stdout)
    from loom.expand import lock_path

    lock = subprocess.run(["git", "show", f"{rev}:{lock_path(rel)}"], cwd=top.stdout.strip(), capture_output=True)
    if lock.returncode == 0:
        lock_path(path).write_bytes(lock.stdout)
    return path, f"{rev}"


def side(path: Path, base: Fabric | None, marked: bool = True) -> Fabric:
    """One side of a change: the model with its own lock file, else (the head of a change)
    with the lock the base gives, so a change is judged against the floor as it stands.
    `marked=False`: with what `loom mark down` routes around (the cabling, which a mark keeps)."""
    from loom.expand import lock_path, read_lock
    from loom.expand.lockfile import lock_of

    from loom.expand import load_fabric

    lock = read_lock(lock_path(path))
    if lock is None and base is not None:
        lock = lock_of(base, base.switch_lid_base)
    return load_fabric(path, lock, marked=marked)


class DiffError(Exception):
    """A side of a change that cannot be had (no such revision, not in git); a usage error."""
