"""`loom … --help` is answered from the text it printed before (loom/cli/helpcache.py): the same
bytes, without loading Typer, and only when nothing the text depends on has changed."""

from __future__ import annotations

import os
import subprocess
import sys

from loom.cli import helpcache

PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: print('typer loaded' if 'typer' in sys.modules else 'typer not loaded', file=sys.stderr))\n"
         "sys.argv = ['loom', *sys.argv[1:]]\n"
         "from loom.cli import main\n"
         "main()\n")


def _loom(tmp_path, *args, **env):
    e = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), **env}
    r = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60, env=e)
    return r.returncode, r.stdout, r.stderr.strip().splitlines()[-1]


def test_a_help_is_replayed_byte_for_byte_without_loading_typer(tmp_path):
    for args in (["--help"], ["sim", "up", "--help"], ["plan", "--help"]):
        first = _loom(tmp_path, *args)
        again = _loom(tmp_path, *args)
        assert first[0] == 0 and first[1].startswith("Usage: loom") and first[2] == "typer loaded", first
        assert again == (0, first[1], "typer not loaded"), (args, again)
    assert len(os.listdir(tmp_path / "cache" / "loom" / "help")) == 3


def test_what_the_text_depends_on_is_in_the_key(tmp_path):
    """Another environment (COLUMNS, NO_COLOR), words, or a damaged entry: printed the long way."""
    _loom(tmp_path, "--help")
    assert _loom(tmp_path, "--help", NO_COLOR="1")[2] == "typer loaded"
    assert _loom(tmp_path, "show", "--help")[2] == "typer loaded"
    for name in os.listdir(tmp_path / "cache" / "loom" / "help"):
        (tmp_path / "cache" / "loom" / "help" / name).write_bytes(b"\xff\xfe garbage")
    code, text, loaded = _loom(tmp_path, "--help")
    assert code == 0 and text.startswith("Usage: loom") and loaded == "typer loaded"
    assert _loom(tmp_path, "--help") == (0, text, "typer not loaded")


def test_only_a_help_that_ran_nothing_else_is_kept(tmp_path):
    # --help as an option's value, an option before it, a command that is not there, no --help
    for argv in (["show", "--switch", "--help"], ["check", "--json", "--help"], ["validate", "m.yaml"], []):
        assert helpcache.key(argv, "utf-8") is None, argv
    code, _, _ = _loom(tmp_path, "no-such-command", "--help")
    assert code == 2 and not (tmp_path / "cache" / "loom" / "help").exists()


def test_a_changed_source_is_another_key(tmp_path, monkeypatch):
    (tmp_path / "loom" / "cli").mkdir(parents=True)
    src = tmp_path / "loom" / "cli" / "model.py"
    src.write_text("x = 1\n")
    monkeypatch.setattr(helpcache, "_LOOM", str(tmp_path / "loom"))
    before = helpcache.key(["--help"], "utf-8")
    os.utime(src, ns=(0, 10**18))
    assert helpcache.key(["--help"], "utf-8") != before


def test_a_cache_that_cannot_be_written_costs_only_time(tmp_path):
    (tmp_path / "cache").write_text("a file where the directory would be")
    code, text, loaded = _loom(tmp_path, "--help")
    assert code == 0 and text.startswith("Usage: loom") and loaded == "typer loaded"


def test_what_is_not_a_whole_kept_help_is_a_miss(tmp_path, monkeypatch):
    """A FIFO (a hang if opened for reading), a directory, a huge file, one cut short or with a
    byte changed: each is a miss, answered at once, and the help is printed the long way."""
    import stat
    import threading

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = tmp_path / "loom" / "help"
    d.mkdir(parents=True)
    helpcache.store("k", "Usage: loom [OPTIONS]\n")
    whole = (d / "k").read_bytes()
    assert helpcache.load("k") == "Usage: loom [OPTIONS]\n"
    for damaged in (whole[:-3], whole.replace(b"OPTIONS", b"OPTIONZ"), b"\xff" * 100,
                    whole + b"x" * helpcache.LIMIT):
        (d / "k").write_bytes(damaged)
        assert helpcache.load("k") is None, damaged[:80]
    (d / "k").unlink()
    (d / "k").mkdir()
    assert helpcache.load("k") is None
    os.mkfifo(d / "f")
    assert stat.S_ISFIFO(os.stat(d / "f").st_mode)
    got = []
    reader = threading.Thread(target=lambda: got.append(helpcache.load("f")), daemon=True)
    reader.start()
    reader.join(5)
    assert got == [None], "load blocked on a FIFO"


def test_where_the_text_cannot_be_recorded_or_kept_it_is_printed_the_long_way(tmp_path, monkeypatch):
    """An ASCII stdout (Click then writes bytes past the recording stream: an empty help was kept
    and replayed), a working directory that was deleted, no absolute cache directory: the help
    is printed every time and nothing is kept."""
    for args, env in ((["--help"], {"PYTHONIOENCODING": "ascii"}), (["sim", "--help"], {"LC_ALL": "C", "PYTHONUTF8": "0",
                                                                                       "PYTHONIOENCODING": "ascii"})):
        first, again = _loom(tmp_path, *args, **env), _loom(tmp_path, *args, **env)
        assert first[0] == again[0] == 0 and first[1].startswith("Usage: loom") and again[1] == first[1], again
    assert not (tmp_path / "cache").exists()
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert helpcache.key(["--help"], "utf-8") is None
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert helpcache.key(["--help"], "utf-8") is None and helpcache.load("0" * 64) is None
