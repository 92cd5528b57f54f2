"""Files and values given on the command line: read strictly, refused with a clear message,
never echoed, never a traceback (plans, --lfts, facts, catalogues, git revisions, options)."""

from __future__ import annotations

import json

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app

TOPOLOGY = Path(__file__).parent.parent / "topology"
TINY = TOPOLOGY / "tiny.yaml"
SECRET = "hunter2-do-not-print"
runner = CliRunner()


def run(*args: str, code: int = 1) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    assert r.exit_code == code, r.output
    return " ".join(r.output.split())


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("route")
    run("route", TINY, "--out", out, code=0)
    return (out / "lfts.dump").read_text()


def test_lfts_dump_of_loom_is_read(tmp_path, dump):
    (tmp_path / "d").write_text(dump)
    run("check", TINY, "--lfts", tmp_path / "d", "--ebb-samples", "5", code=0)


@pytest.mark.parametrize("mangle,expect", [
    (lambda d: SECRET + "\n" + d, ":1: not an LFT dump line"),
    (lambda d: d[: len(d) // 2] + "\x07garbage " + SECRET, "not an LFT dump line"),
    (lambda d: d.split("\n", 1)[1], "an entry before the first"),
    (lambda d: d.replace(" 001 #", " 250 #", 1), "port 250 on switch"),
    (lambda d: d.replace("0x0001 ", "0xc001 ", 1), "is not a unicast LID"),
    (lambda d: d.replace("guid 0x0002c9", "guid 0x0012c9"), "is not a switch of this model"),
    (lambda d: "", "holds no forwarding tables"),
])
def test_bad_lfts_dump(tmp_path, dump, mangle, expect):
    (tmp_path / "d").write_text(mangle(dump))
    out = run("check", TINY, "--lfts", tmp_path / "d")
    assert expect in out and SECRET not in out


def test_binary_lfts_dump(tmp_path):
    (tmp_path / "d").write_bytes(bytes(range(256)))
    assert "not UTF-8" in run("check", TINY, "--lfts", tmp_path / "d")


def test_ebb_samples_bounded():
    for bad in ("-5", "10000000"):
        assert "--ebb-samples" in run("check", TINY, "--ebb-samples", bad, code=2)


def test_garbage_facts(tmp_path):
    good = Path(__file__).parent / "facts" / "ff2-a100"
    for name in ("nvidia-smi-topo.txt", "lspci-vvv.txt", "numactl-H.txt"):
        shutil.copy(good / name, tmp_path / name)
    (tmp_path / "nvidia-smi-topo.txt").write_text(SECRET + "\n")
    out = run("host", "check", TOPOLOGY / "fire-flyer-2.yaml", "--host", "z0-c000", "--facts", tmp_path, code=2)
    assert "not the output of nvidia-smi topo -m" in out and SECRET not in out
    (tmp_path / "lspci-vvv.txt").write_bytes(b"\xff\xfe" + "x".encode("utf-16-le"))
    assert "not UTF-8" in run("host", "check", TOPOLOGY / "fire-flyer-2.yaml", "--host", "z0-c000", "--facts", tmp_path, code=2)


@pytest.mark.parametrize("content,expect", [
    ('{"version": 1, "fab', "not valid JSON"),
    ("[" * 100_000, "not valid JSON"),
    ("[]", "is not a loom plan"),
    (b"\xff\xfe" + "{}".encode("utf-16-le"), "not UTF-8"),
])
def test_bad_plan(tmp_path, content, expect):
    """Plans are read bounded and parsed strictly; what apply checks in a plan is loom.fabrics.infiniband.checked's."""
    path = tmp_path / "p.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert expect in run("apply", path)


@pytest.mark.parametrize("body,expect", [
    ({"version": 3, "plan_sha256": "x"}, "fabric: Field required"),
    ({"version": 2, "plan_sha256": "x"}, "is not a loom plan of version 3"),
])
def test_show_of_a_broken_plan_names_the_field(tmp_path, body, expect):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(body))
    assert expect in run("show", path)


def test_show_of_a_plan_cut_short_says_so(tmp_path):
    """Its last key (`plan_sha256`) gone: still a plan, not "not a valid model ... YAML syntax"."""
    path = tmp_path / "p.json"
    path.write_text('{\n "version": 3,\n "fabric": "tiny",\n "model": "/m/tiny.yaml",\n "model_sha256": "ce5d62aa0f19')
    out = run("show", path)
    assert "not valid JSON" in out and "YAML" not in out, out


@pytest.mark.parametrize("content", ["[1, 2]", ' \n[\n 1]', "[" * 100_000, '"a plan"', "3", "null"])
def test_show_of_json_that_is_no_object_answers_as_apply(tmp_path, content):
    """JSON that is not an object is no model (a mapping) and no plan: `show` refuses it as the plan
    reader of `apply` does, naming the file and the fix, not with "must hold a mapping"."""
    path = tmp_path / "p.json"
    path.write_text(content)
    shown, applied = run("show", path), run("apply", path)
    assert shown == applied and str(path) in shown and "loom plan" in shown and "valid model" not in shown, shown


def test_a_model_written_as_json_is_still_shown_as_a_model(tmp_path):
    """JSON is YAML: a model as a JSON object, or a YAML model in a `.json` file, stays a model."""
    import yaml

    as_json, as_yaml = tmp_path / "m.json", tmp_path / "y.json"
    as_json.write_text(json.dumps(yaml.safe_load(TINY.read_text())))
    as_yaml.write_text(TINY.read_text())
    assert run("show", as_json, code=0) == run("show", as_yaml, code=0) == run("show", TINY, code=0)
    (tmp_path / "s.yaml").write_text("[1, 2]")  # a YAML file is a model: its error is the model's
    assert "must hold a mapping" in run("show", tmp_path / "s.yaml")


def test_diff_revision_cannot_be_an_option(tmp_path):
    target = tmp_path / "written-by-git"
    for rev in (f"--output={target}", "-p", "HEAD:../../etc/passwd", "a b", "[/x]"):
        out = run("diff", TINY, f"--base={rev}", code=2)
        assert "is not a git revision" in out
    assert not target.exists()


def test_diff_missing_model(tmp_path):
    run("diff", tmp_path / "nowhere" / "m.yaml", "--base", "HEAD", code=2)


def _model_with_catalogue(tmp_path: Path, catalogue: bytes) -> Path:
    model = tmp_path / "m.yaml"
    model.write_text(TINY.read_text())
    (tmp_path / "catalogue").mkdir()
    (tmp_path / "catalogue" / "nvidia-hdr.yaml").write_bytes(catalogue)
    return model


@pytest.mark.parametrize("catalogue,expect", [
    (f"password: {SECRET}\n".encode(), "not a valid cable catalogue"),
    (f"media: [{{kind: DAC, speeds: [HDR], max_m: 3, lengths: {{1: {SECRET}}}, x: [[[{SECRET}]]]}}]\n".encode(), "not a valid cable catalogue"),
    (b"\x00\x01\x02" * 100, "binary data"),
    (b"media: " + b"[" * 1000 + b"]" * 1000, "nested deeper than"),
])
def test_bad_catalogue_not_echoed(tmp_path, catalogue, expect):
    out = run("cabling", _model_with_catalogue(tmp_path, catalogue), "--format", "csv")
    assert expect in out and SECRET not in out


def test_xlsx_write_error(tmp_path):
    (tmp_path / "dir.xlsx").mkdir()
    assert "cannot write" in run("cabling", TINY, "--format", "xlsx", "--out", tmp_path / "dir.xlsx")


@pytest.mark.parametrize("model,expect", [("/dev/zero", "not a regular file"), ("/proc/self/environ", "changed since the plan")])
def test_a_plan_naming_a_special_file_as_its_model_is_refused_unread(model, expect):
    """Issue 35: a plan's `model` is read bounded like any model (it was read to MemoryError)."""
    from loom.push.errors import PlanError
    from loom.push.planfile import checked_model

    with pytest.raises(PlanError) as exc:
        checked_model({"model": model, "model_sha256": "0" * 64}, "the plan")
    assert model in str(exc.value) and expect in str(exc.value), exc.value


def test_a_plan_over_its_cap_or_the_memory_is_refused_unread(tmp_path, monkeypatch):
    """A plan is parsed whole: one over its own cap (LOOM_MAX_PLAN_BYTES) or larger than this
    machine can parse is refused before it is read (a 1 GB plan ended in MemoryError)."""
    import loom.model.reading as reading

    path = tmp_path / "p.json"
    path.write_text('{"version": 3, "rows": [' + ",".join(["[1,2]"] * 20_000) + "], \"plan_sha256\": \"x\"}")
    monkeypatch.setenv("LOOM_MAX_PLAN_BYTES", "10000")
    out = " ".join(run("show", path).split())
    assert f"{path}" in out and "more than the limit of 10000" in out and "LOOM_MAX_PLAN_BYTES" in out
    monkeypatch.delenv("LOOM_MAX_PLAN_BYTES")
    monkeypatch.setattr(reading, "available_memory", lambda: 1_000_000)
    out = " ".join(run("apply", path).split())
    assert "may take" in out and "0 MB are available" in out
    dump = tmp_path / "lfts.dump"  # an LFT dump is parsed whole too
    dump.write_text("Unicast lids [0x0-0x10] of switch Lid 1 guid 0x0000000000000001 (x):\n" + "0x0001 001 : (x)\n" * 20_000)
    out = run("check", TOPOLOGY / "tiny.yaml", "--lfts", dump)
    assert f"{dump}" in out and "may take" in out


@pytest.mark.parametrize("record, expect", [("{not json", "not valid JSON"), ('{"phase": "halfway"}', "no phase of intent"),
                                            ('{"phase": "written", "texts": ["../../etc/passwd"]}', "no phase of intent")])
def test_a_damaged_apply_journal_is_named_with_what_to_do(tmp_path, monkeypatch, record, expect):
    """The journal of an interrupted apply, damaged (a disk that filled, a hand edit): the next
    command names it and says how to go on (it was a JSONDecodeError traceback)."""
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path))
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "apply.journal").write_text(record)
    out = run("sim", "status", TOPOLOGY / "tiny.yaml")
    assert "apply.journal" in out and expect in out and "move" in out and "loom plan" in out, out
