"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import uuid
from pathlib import Path

TEMP_PREFIX = ".loom-tmp."


def _stage(path: Path, raw: bytes) -> str:
    """Write `raw` to a temp file beside `path` (fsynced, usual mode); return its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _stage_link(path: Path, source: Path) -> str:
    """Give `source`'s content a temp name beside `path` by a hard link, without copying it (an
    apply keeps 15 MB of tables three times over on a two-zone fabric); a copy where the file
    system refuses the link.  Loom replaces its files by rename, never in place, so the linked
    content cannot change under either name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f"{TEMP_PREFIX}{path.name}.{uuid.uuid4().hex[:12]}"
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", str(source))
            os.fsync(fd)  # durable before a second name makes it part of a new state (a no-op if it was)
        finally:
            os.close(fd)
        os.link(source, tmp, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EACCES, errno.ELOOP):
            raise
        return _stage(path, source.read_bytes())  # (ELOOP: a symlink, whose target's content is copied)
    return str(tmp)


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write `data` to a temp file beside `path`, fsync it, then rename it over `path`."""
    path = Path(path)
    write_all_atomic({path: data})
    return path


def write_all_atomic(files: dict[Path, str | bytes | Path | None]) -> None:
    """Write several files all or nothing: every temp file is written first (a full disk or
    read-only directory fails here, before any file changed), then each is renamed over its
    target; a rename refused (an immutable file) puts back the files already replaced.
    `None` removes the file; a Path gives it that file's content (`_stage_link`)."""
    files = {Path(p): d for p, d in files.items()}
    before = {p: p.read_bytes() if p.is_file() else None for p in files}  # a FIFO there is not read (it would block)
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            if data is not None:
                staged.append((_stage_link(path, data) if isinstance(data, Path)
                               else _stage(path, data.encode() if isinstance(data, str) else data), path))
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    done: list[Path] = []
    try:
        for tmp, path in staged:
            os.replace(tmp, path)
            done.append(path)
        for path, data in files.items():
            if data is None and path.exists():
                path.unlink()
                done.append(path)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        if done:
            write_all_atomic({p: before[p] for p in done})
        raise


def remove_temps(directory: Path) -> list[Path]:
    """Temp files a killed writer left behind in `directory` (not recursive); removed."""
    gone = [p for p in Path(directory).glob(f"{TEMP_PREFIX}*") if p.is_file()]
    for p in gone:
        p.unlink(missing_ok=True)
    return gone
