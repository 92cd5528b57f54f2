"""Hostile input: every file a new user or an attacker could hand Loom is refused cleanly.

`tests/hostile/` holds model files (alias and merge-key bombs, deep nesting, huge numbers and
widths, names that climb out of directories or start new config lines, limits of the hardware);
each names what it tries in `# hostile:` and the message it must get in `# expect:`.  Files that
cannot live in git (100 MB, UTF-16, /dev/zero, a FIFO) are made here.  Every refusal must come
within seconds, as exit 1 with the file named, never a traceback.
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.model import ModelError, load_model
from loom.model.reading import parse_yaml

HERE = Path(__file__).parent
CORPUS = sorted((HERE / "hostile").glob("*.yaml"))
TINY = HERE.parent / "topology" / "tiny.yaml"
runner = CliRunner()


@contextmanager
def deadline(seconds: int):
    """Fail (instead of hanging the suite) when the block takes longer than `seconds`."""
    def expire(signum, frame):
        raise TimeoutError(f"took more than {seconds}s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refused(path: Path, expect: str, *args: str) -> str:
    with deadline(30):
        r = runner.invoke(app, ["validate", str(path), *args])
    out = " ".join(r.output.split())
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert str(path) in out
    assert expect in out, out
    return out


def expectation(path: Path) -> str:
    return next(l.removeprefix("# expect: ") for l in path.read_text().splitlines() if l.startswith("# expect: "))


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_hostile_model_refused_cleanly(path: Path):
    refused(path, expectation(path))


TEXT = TINY.read_text(encoding="utf-8")


@pytest.mark.parametrize("encoding,found", [("utf-16", "UTF-16"), ("utf-32", "UTF-32"), ("utf-16-le", "without a byte-order mark"),
                                            ("latin-1", "Latin-1")])
def test_other_encodings_are_named(tmp_path, encoding, found):
    path = tmp_path / "m.yaml"
    path.write_bytes(TEXT.replace("lab", "läb").encode(encoding, errors="replace"))
    out = refused(path, "is not UTF-8 text")
    assert found in out and "iconv" in out


def test_binary_file(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    refused(path, "is not UTF-8 text")


def test_nul_in_utf8(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_bytes(b"name: a\x00b\n")
    refused(path, "NUL characters")


def test_100_mb_file_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    with open(path, "wb") as fh:
        fh.truncate(100 * 1024 * 1024)  # sparse: costs no disk
    refused(path, "more than the limit of 4194304")


def test_size_cap_is_configurable(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_MAX_INPUT_BYTES", "1000")
    refused(TINY, "more than the limit of 1000", )
    monkeypatch.setenv("LOOM_MAX_INPUT_BYTES", "100000")
    assert runner.invoke(app, ["validate", str(TINY)]).exit_code == 0


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo", "dir"])
def test_special_files_refused_without_blocking(tmp_path, special):
    path = Path(special)
    if special == "fifo":
        path = tmp_path / "pipe.yaml"
        os.mkfifo(path)
    elif special == "dir":
        path = tmp_path
    refused(path, "a directory" if special == "dir" else "not a regular file")


def test_missing_file_is_a_usage_error():
    r = runner.invoke(app, ["validate", "/nonexistent/model.yaml"])
    assert r.exit_code == 2 and "/nonexistent/model.yaml: no such file" in r.output, r.output


@pytest.mark.parametrize("text,value", [("011", 11), ("0o11", 9), ("0x10", 16), ("yes", "yes"), ("no", "no"), ("on", "on"),
                                        ("~", None), ("1e3", 1000.0), ("True", True), ("12:30", "12:30"), ("'011'", "011")])
def test_yaml_1_2_scalars(text, value):
    assert parse_yaml("t", f"v: {text}\n")[1] == {"v": value}


def _model(tmp_path: Path, text: str) -> Path:
    """A copy of tiny with `text`, beside the catalogue it names."""
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    if not (tmp_path / "catalogue").exists():
        (tmp_path / "catalogue").symlink_to(TINY.parent / "catalogue")
    return path


def test_count_010_is_ten(tmp_path):
    path = _model(tmp_path, TEXT.replace("count: 9, zones: [z0]", "count: 010, zones: [z0]"))  # YAML 1.1 read 8
    assert load_model(path).node_groups[0].count == 10


def test_254_ports_is_the_infiniband_limit(tmp_path):
    load_model(_model(tmp_path, TEXT.replace("ports: 8", "ports: 254")))
    with pytest.raises(ModelError, match="at most 254 ports"):
        load_model(_model(tmp_path, TEXT.replace("ports: 8", "ports: 255")))
