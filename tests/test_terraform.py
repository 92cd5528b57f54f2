"""The Terraform path end to end: OpenTofu (built from the Go module proxy, cached) with the loom
provider from its filesystem mirror, on the simulated tiny fabric, state in a private
PostgreSQL (`pg` backend, locking) or a local file; plus the JSON interface the provider reads.

OpenTofu, the provider and the CLI config come from `make tf-tools` (seconds when warm)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from loom.expand import load_fabric
from loom.fabrics.infiniband.qos_readback import directed_routes
from loom.routing import subnet

from .pglab import Postgres
from .simfabric import TINY, loom
from .test_apply_faults import _smp_set

ROOT = Path(__file__).parent.parent
LOOM_BIN = Path(sys.executable).parent / "loom"


# ------------------------------------------------------------------ the JSON interface (quick)


def test_fabric_json_names_every_record():
    code, out = loom("fabric", TINY, "--format", "json")
    assert code == 0, out
    doc = json.loads(out)
    f = doc["fabric"]
    assert doc["interface"] == 1 and f["name"] == "tiny" and f["technology"] == "infiniband"
    fabric = load_fabric(TINY)
    assert len(f["switches"]) == len(fabric.switches) and len(f["cables"]) == len(fabric.cables)
    port = f["ports"][0]
    assert port["switch"] and port["switch_port"] and port["guid"].startswith("0x")
    cable = next(c for c in f["cables"] if c["kind"] != "host")
    assert cable["label"].startswith(cable["id"]) and cable["length_m"] > 0 and cable["media"]  # tiny has cabling:
    for kind in ("switches", "nodes", "ports", "cables"):
        assert len({tuple(sorted(r)) for r in f[kind]}) == 1, f"{kind}: records of one kind must share their keys"


def test_tf_commands_answer_a_bad_model_with_file_line_and_field(tmp_path):
    bad = tmp_path / "tiny.yaml"
    text = Path(TINY).read_text()
    bad.write_text(text.replace("ports: 8", "ports: -3", 1))
    line = text[:text.index("ports: 8")].count("\n") + 1
    for args in (["tf", "routing", str(bad)], ["tf", "netbox", str(bad)], ["fabric", str(bad), "--format", "json"]):
        code, out = loom(*args)
        assert code == 1, out
        e = json.loads(out)["errors"][0]
        assert (e["file"], e["line"]) == (str(bad), line) and e["path"].endswith(".ports") and e["fix"], e


def test_tf_routing_without_a_running_fabric_is_an_error_document(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    code, out = loom("tf", "routing", TINY)
    assert code == 1 and "not up" in json.loads(out)["errors"][0]["message"], out


def test_switch_tables_name_each_switch_its_ports_peers_and_a_change():
    """`loom tf routing`'s `switches` (what loom_routing.switches shows in `tofu plan`): per switch a
    digest of its table, the destinations it routes and how many leave by each "PORT PEER"; one
    entry moved changes that switch's digest and two of its port counts, nothing else."""
    from loom.cli.terraform import _switch_tables
    from loom.push.packing import table_rows
    from loom.routing import route

    fabric = load_fabric(TINY)
    rows = table_rows(route(fabric)[0])
    tables = _switch_tables(fabric, rows)
    leaf = tables["z0-leaf0"]
    assert leaf["lid"] == rows["z0-leaf0"]["lid"] and leaf["destinations"] == len(rows["z0-leaf0"]["rows"])
    assert set(leaf["per_port"]) >= {"1 z0-c00-hca0", "5 z0-spine0", "6 z0-spine1"}, leaf["per_port"]
    assert sum(leaf["per_port"].values()) == leaf["destinations"] - 1  # its own LID leaves by no port
    i, (lid, port) = next((i, r) for i, r in enumerate(rows["z0-leaf0"]["rows"]) if r[1] == 5)
    rows["z0-leaf0"]["rows"][i] = [lid, 6]  # one destination moved from spine0's port to spine1's
    moved = _switch_tables(fabric, rows)
    assert [n for n in tables if tables[n] != moved[n]] == ["z0-leaf0"]
    assert moved["z0-leaf0"]["lft_digest"] != leaf["lft_digest"]
    assert moved["z0-leaf0"]["per_port"]["5 z0-spine0"] == leaf["per_port"]["5 z0-spine0"] - 1
    assert moved["z0-leaf0"]["per_port"]["6 z0-spine1"] == leaf["per_port"]["6 z0-spine1"] + 1


# ------------------------------------------------------------------ OpenTofu end to end (slow)


@pytest.fixture(scope="module")
def tools():
    """`make tf-tools`: OpenTofu (cached in ~/.cache/loom), the provider mirror and CLI config."""
    r = subprocess.run(["make", "-s", "tf-tools"], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout + r.stderr
    version = re.search(r"^TOFU_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    cache = Path(os.environ.get("LOOM_CACHE", Path.home() / ".cache/loom"))
    return cache / f"tofu-{version}/tofu", ROOT / ".loom/tf/tofurc"


@pytest.fixture
def pg():
    """A private PostgreSQL for the pg backend (its directory readable by the postgres user)."""
    root = Path(tempfile.mkdtemp(prefix="loom-tf-pg-"))
    os.chmod(root, 0o755)
    server = Postgres(root)
    try:
        server.start()
        yield server.database("loom_tf")
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


class Root:
    """A copy of terraform/tiny (and the model) in a temporary directory, run with `tofu`."""

    def __init__(self, tools, tmp: Path, env: dict[str, str], backend: str = "pg") -> None:
        self.tofu, config = tools
        shutil.copytree(ROOT / "terraform/modules", tmp / "terraform/modules")
        self.dir = tmp / "terraform/tiny"
        self.dir.mkdir(parents=True)
        shutil.copy(ROOT / "terraform/modules/root.tf", self.dir / "main.tf")
        shutil.copy(ROOT / "terraform/tiny/backend.tf", self.dir / "backend.tf")
        if backend == "local":  # the documented fallback: an override file
            (self.dir / "backend_override.tf").write_text('terraform {\n  backend "local" {}\n}\n')
        shutil.copytree(ROOT / "topology", tmp / "topology", ignore=shutil.ignore_patterns("*.lock.json"))
        shutil.copy(ROOT / "topology/tiny.lock.json", tmp / "topology")
        self.model = tmp / "topology/tiny.yaml"
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(("NETBOX_", "PG_CONN"))}
        self.env = {**inherited, "TF_CLI_CONFIG_FILE": str(config), "TF_DATA_DIR": str(tmp / "tfdata"),
                    "TF_IN_AUTOMATION": "1", "LOOM_BIN": str(LOOM_BIN), **env}

    def cmd(self, *args: str) -> list[str]:
        return [str(self.tofu), f"-chdir={self.dir}", args[0], "-no-color", "-input=false", *args[1:]]  # flags first

    def run(self, *args: str, timeout: float = 300) -> tuple[int, str]:
        r = subprocess.run(self.cmd(*args), env=self.env, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr

    def plan(self, *variables: str) -> tuple[int, str]:
        return self.run("plan", "-detailed-exitcode", *variables)

    def apply(self, *variables: str) -> tuple[int, str]:
        return self.run("apply", "-auto-approve", *variables)


@pytest.mark.slow
@pytest.mark.sim
def test_init_plan_apply_drift_repair_and_the_state_lock(tools, pg, tiny_up, tmp_path):
    tf = Root(tools, tmp_path, {"PG_CONN_STR": pg})
    code, out = tf.run("init")
    assert code == 0, out
    code, out = tf.plan()
    assert code == 2 and "LFT entries on" in out and "loom_routing.this[0] will be created" in out, out
    code, out = tf.apply()
    assert code == 0 and "1 added" in out, out
    code, out = tf.plan()
    assert code == 0 and "No changes" in out, out
    assert loom("plan", str(tf.model))[0] == 0  # loom agrees: the live tables are the model's

    # a hand edit of one switch table, by SMP behind OpenSM's back
    sn = subnet(load_fabric(TINY), 0)
    switch_dr, _ = directed_routes(sn, tiny_up.sm_host)
    row = next(r for r in range(sn.n) if sn.name(r) == "z1-leaf1")
    _smp_set(tiny_up, "lft", switch_dr[row], str(int(sn.ca_lids[0])), "255")
    code, out = tf.plan()
    assert code == 2 and "will be updated in-place" in out and "drift" in out and "out-of-sync" in out, out
    # the plan names the one switch whose table changes, and the port its destination leaves by
    changed = re.findall(r'~ "([\w-]+)" = \{', out)
    assert changed == ["z1-leaf1"] and "~ lft_digest" in out and "unchanged elements hidden" in out, out
    # the planted "no route" entry: the switch routes one destination fewer, and one port carries it again
    assert re.search(r"~ destinations = (\d+) -> (\d+)", out).groups() == ("38", "39"), out
    before, after = map(int, re.search(r'~ "\d+ z1-spine\d"\s+= (\d+) -> (\d+)', out).groups())
    assert after == before + 1, out

    # two applies at once: the second finds the pg state locked (the first repairs the drift)
    first = subprocess.Popen(tf.cmd("apply", "-auto-approve"), env=tf.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        seen = ""
        while "Reading..." not in seen and first.poll() is None:  # the lock is held before the first read
            seen += first.stdout.readline()
        code, out = tf.run("apply", "-auto-approve", "-lock-timeout=0s")
        assert code == 1 and "Error acquiring the state lock" in out, out
        rest, _ = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0 and "1 changed" in seen + rest, seen + rest
    code, out = tf.plan()
    assert code == 0 and "No changes" in out, out

    # adopting a fabric Terraform does not manage yet: import by model path (relative to the root
    # module) and target; the next plan has nothing to do
    address = "module.fabric.loom_routing.this[0]"
    r = subprocess.run([str(tf.tofu), f"-chdir={tf.dir}", "state", "rm", "-no-color", address], env=tf.env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    code, out = tf.run("import", address, "../../topology/tiny.yaml,sim")
    assert code == 0 and "Import successful" in out, out
    code, out = tf.plan()
    assert code == 0 and "No changes" in out, out
    code, out = tf.run("import", address, ",sim")
    assert code == 1 and "MODEL[,target[,inventory[,ssh_config]]]" in " ".join(out.split()), out


@pytest.mark.slow
def test_a_bad_model_is_a_diagnostic_with_file_and_line(tools, tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    tf = Root(tools, tmp_path, {}, backend="local")
    text = tf.model.read_text()
    tf.model.write_text(text.replace("ports: 8", "ports: -3", 1))
    line = text[:text.index("ports: 8")].count("\n") + 1
    code, out = tf.run("init")
    assert code == 0, out
    code, out = tf.plan()
    flat = " ".join(out.split())  # tofu wraps long diagnostics
    assert code == 1 and f"{tf.model}:{line}: switch_models.SW8.ports" in flat and "fix:" in flat, out
    assert "panic" not in out and "Traceback" not in out, out


@pytest.mark.slow
def test_loom_netbox_against_a_live_netbox(tools, tmp_path):
    from .netboxlab import NetBox

    with NetBox(workers=1) as nb:
        # the token only from the environment, never a variable
        tf = Root(tools, tmp_path, {"NETBOX_TOKEN": nb.token}, backend="local")
        variables = ("-var", "target=", "-var", f"netbox_url={nb.url}")
        assert tf.run("init")[0] == 0
        code, out = tf.plan(*variables)
        assert code == 2 and "loom_netbox.this[0] will be created" in out and "to create" in out, out
        t0 = time.monotonic()
        code, out = tf.apply(*variables)
        assert code == 0 and "1 added" in out, out
        code, out = tf.plan(*variables)
        assert code == 0 and "No changes" in out, out
        state = (tf.dir / "terraform.tfstate").read_text()
        assert nb.token not in state and nb.token not in out  # the secret never reaches the state
        assert time.monotonic() - t0 < 300


@pytest.mark.slow
def test_provider_unit_tests():
    """`go test` of terraform/provider (the runner, the diagnostics, the schemas)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    r = subprocess.run(["nice", "-n", "10", go, "test", "./..."], cwd=ROOT / "terraform/provider", capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_every_reference_fabric_has_a_valid_root_module(tools, tmp_path):
    fabrics = {p.stem for p in (ROOT / "topology").glob("*.yaml")}
    roots = {p.parent.name for p in (ROOT / "terraform").glob("*/backend.tf")}
    assert fabrics == roots, f"root modules missing: {fabrics - roots}, without a model: {roots - fabrics}"
    tofu, config = tools
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(config), "TF_DATA_DIR": str(tmp_path / "data")}
    # a copy: `tofu init` writes a lock file beside the module, and one a `make tf-init` left in
    # the working tree names the checksum of a provider built before (a rebuild refuses it)
    shutil.copytree(ROOT / "terraform", tmp_path / "terraform", symlinks=True,
                    ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*"))
    root = tmp_path / "terraform/fire-flyer-2"
    r = subprocess.run([str(tofu), f"-chdir={root}", "init", "-backend=false", "-no-color", "-input=false"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(tofu), f"-chdir={root}", "validate", "-no-color"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "configuration is valid" in r.stdout, r.stdout + r.stderr
