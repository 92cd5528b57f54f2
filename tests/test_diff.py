"""`loom diff` on the two-zone fabric: moved node, removed spine link, growth, broken head."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from loom.cli import app

TOPO = Path(__file__).parent.parent / "topology"
FF2 = TOPO / "fire-flyer-2.yaml"
runner = CliRunner()
STORAGE = 'homing: dual, name_pattern: "st{index:03d}"}'


def variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = FF2.read_text()
    assert old in text
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def diff(head: Path, *extra: str) -> tuple[int, dict]:
    r = runner.invoke(app, ["diff", str(FF2), "--base-file", str(FF2), "--head-file", str(head), "--format", "json", *extra])
    assert "Traceback" not in r.output, r.output
    return r.exit_code, (json.loads(r.output) if r.output.startswith("{") else {"output": r.output})


def test_moving_one_storage_node_reports_exactly_its_routes_and_cables(tmp_path):
    head = variant(tmp_path, "moved", STORAGE, STORAGE[:-1] + ", pinned: {st000: [36, 36]}}")
    code, d = diff(head)
    assert code == 0 and not d["regressions"]
    r = d["routing"]
    assert r["destinations_moved"] == ["st000-mlx5_0", "st000-mlx5_1"]
    assert r["destinations_rerouted"] == [] and r["destinations_added"] == [] and r["destinations_removed"] == []
    assert d["cables"]["moved"] == ["st000-mlx5_0/1: z0-leaf0/16 -> z0-leaf36/20",
                                    "st000-mlx5_1/1: z1-leaf0/16 -> z1-leaf36/20"]
    assert d["cables"]["added"] == [] and d["cables"]["removed"] == []
    assert 0 < r["lft_entries_changed"] <= 2 * 120  # its two LIDs, at most once per switch
    assert not d["growth"]


def test_removing_a_spine_link_is_a_balance_regression(tmp_path):
    z0 = "leaf_up: 20, oversubscription: 1}"
    head = variant(tmp_path, "cut", z0, "leaf_up: 20, oversubscription: 1, missing_links: [{leaf: 5, up_port: 3}]}")
    code, d = diff(head)
    assert code == 1
    assert d["head"]["verdicts"]["reachable"] and d["head"]["verdicts"]["deadlock_free"]  # still routes around it
    assert any("balance" in x for x in d["regressions"])
    assert d["cables"]["removed"] == ["z0-leaf5/24 <-> z0-spine3/6"]  # leaf port 21+3, spine port 1+5
    assert d["routing"]["ports_above_bound"] == [] and d["bound"] == "as-built"  # as good as the fabric allows
    _, dd = diff(head, "--design-bound")  # against the intact design: the leaf that lost a link
    above = dd["routing"]["ports_above_bound"]
    ports = [p for p in above if "paths" not in p]
    assert dd["bound"] == "design" and ports and all(p["switch"] == "z0-leaf5" and p["level"] == "leaf_up" for p in ports)
    # links into leaves carry the lost link's paths (z0-leaf5 sends spine 3's share in over the others)
    into = [p for p in above if "paths" in p]
    assert into and all(p["level"] == "spine_down" and p["switch"].startswith("z0-") and p["paths"] > p["bound"] for p in into)
    # a tolerance lets the degradation through
    code, _ = diff(head, "--balance-tolerance", "10")
    assert code == 0


def test_adding_a_compute_node_on_a_free_port_is_growth(tmp_path):
    head = variant(tmp_path, "grow", "subnet_manager: z0-m00", "  - {name: extra, node_type: a100-pcie, role: compute, count: 1, "
                   'zones: [z0], name_pattern: "z0-x{index:03d}"}\n\nsubnet_manager: z0-m00')
    code, d = diff(head)
    assert code == 0 and d["growth"], d["routing"]["destinations_rerouted"][:5]
    assert d["routing"]["destinations_added"] == ["z0-x000-mlx5_0"]
    assert d["cables"]["added"] == ["z0-x000-mlx5_0/1 -> z0-leaf35/20"]


def test_unparseable_head_exits_2_with_the_error(tmp_path):
    head = variant(tmp_path, "broken", "leaves: 40, spines: 20", "leaves: forty, spines: 20")
    r = runner.invoke(app, ["diff", str(FF2), "--base-file", str(FF2), "--head-file", str(head)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "zones[0].leaves" in r.output and "valid integer" in r.output


def test_markdown_and_git_revisions(tmp_path):
    repo = tmp_path / "repo"
    (repo / "topology").mkdir(parents=True)
    model = repo / "topology" / "ff2.yaml"
    model.write_text(FF2.read_text())
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    model.write_text(FF2.read_text().replace(STORAGE, STORAGE[:-1] + ", pinned: {st001: [37, 37]}}"))
    r = runner.invoke(app, ["diff", str(model), "--base", "HEAD", "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert "## loom diff: fire-flyer-2 (HEAD → working tree)" in r.output
    assert "destinations moved (their cabling changed): 2" in r.output
    assert "| reachable | ✅ | ✅ |" in r.output


def test_every_check_loom_check_runs_is_a_verdict_in_diff():
    """No placeholder verdicts: QoS is judged (n/a only for a model without traffic classes),
    Ethernet planes are routed and judged, and eBB is the figure `loom check` prints."""
    from loom.checks.compare import compare, evaluate
    from loom.expand import load_fabric
    from loom.render.diff_report import markdown

    tiny = evaluate("base", load_fabric(TOPO / "tiny.yaml"))
    assert tiny.verdicts() == {"reachable": True, "deadlock_free": True, "balance_within_bound": True, "qos_isolation": True}
    res = runner.invoke(app, ["check", str(TOPO / "tiny.yaml"), "--json"])
    assert json.loads(res.stdout)["ebb"] == tiny.balance()["ebb"]
    c4 = evaluate("base", load_fabric(TOPO / "c4-dualport.yaml"))
    assert c4.routed and all(v in (True, False) for k, v in c4.verdicts().items() if k != "qos_isolation")
    broken = evaluate("head", load_fabric(TOPO / "tiny.yaml"))
    broken.reports[0]["qos"] = {**broken.reports[0]["qos"], "ok": False}  # a planted QoS failure on head
    d = compare(tiny, broken)
    assert "qos_isolation held on base and fails on head" in d["regressions"]
    assert "| qos isolation | ✅ | ❌ |" in markdown(d)


def test_long_lists_say_how_many_more_and_sort_naturally():
    from loom.model.names import natural
    from loom.render.diff_report import _more

    assert sorted(["z0-leaf10", "z0-leaf2", "z0-leaf1"], key=natural) == ["z0-leaf1", "z0-leaf2", "z0-leaf10"]
    assert _more(list(range(45))) == ["… 15 more"] and _more(list(range(30))) == []


def test_an_overloaded_core_to_pod_link_is_counted_above_its_bound():
    """A core's one link into a pod is a group of one, always at its per-switch bound; `diff`
    counts it against the other links into the pod (CA-to-CA paths), as `loom check` judges it.
    The engine's own tables count none; a planted change that gives one link twice its share
    is counted, against the as-built bound and the design's."""
    from loom.checks import check_tables
    from loom.checks.compare import Side, compare
    from loom.expand import expand
    from loom.model import load_model
    from loom.render.diff_report import markdown
    from loom.routing import route

    from tests.test_into_balance import plant_core_link_imbalance

    fabric = expand(load_model(TOPO / "fat-tree-3.yaml"))
    t = route(fabric)[0]
    planted, name = plant_core_link_imbalance(t)
    side = {label: Side(label, fabric, [x], [check_tables(x, 0, None)]) for label, x in (("base", t), ("head", planted))}
    assert compare(side["base"], side["base"])["routing"]["ports_above_bound"] == []
    for design in (False, True):
        above = compare(side["base"], side["head"], design_bound=design)["routing"]["ports_above_bound"]
        into = [p for p in above if "paths" in p]
        assert [f"{p['switch']} port {p['port']} -> {p['peer']} (core_down)" for p in into] == [name], above
        assert into[0]["paths"] > into[0]["bound"]
    report = markdown(compare(side["base"], side["head"]))
    assert f"- {name.removesuffix(' (core_down)')} (core_down): {into[0]['paths']} CA-to-CA paths > {into[0]['bound']}" in report


def test_planted_table_edits_are_counted_entry_by_entry():
    """Three single-entry edits, each counted where it belongs: a route moved to another port
    (changed, its destination rerouted), an entry gone on head (removed), one new on head (added)."""
    from loom.checks.compare import Side, compare, evaluate
    from loom.expand import load_fabric
    from loom.routing.base import NO_ROUTE
    from loom.routing.subnet import NONE

    f = load_fabric(TOPO / "tiny.yaml")
    base = evaluate("base", f, ebb_samples=0)
    t = base.tables[0]
    sn = t.subnet
    cas = [int(l) for l in np.flatnonzero(sn.lid_port >= 0)]
    (r1, l1), (r2, l2), (r3, l3) = (0, cas[0]), (1, cas[1]), (2, cas[2])
    other = next(p for p in range(1, sn.peer_kind.shape[1]) if p != int(t.lft[r1, l1]) and sn.peer_kind[r1, p] != NONE)
    base_t = t.with_entries({(r3, l3): NO_ROUTE})
    head_t = t.with_entries({(r1, l1): other, (r2, l2): NO_ROUTE})
    r = compare(Side("base", f, [base_t, *base.tables[1:]], base.reports, base.qos),
                Side("head", f, [head_t, *base.tables[1:]], base.reports, base.qos))["routing"]
    assert (r["lft_entries_changed"], r["entries_added"], r["entries_removed"]) == (3, 1, 1)
    assert r["per_switch"] == {sn.name(r1): 1, sn.name(r2): 1, sn.name(r3): 1}
    assert r["destinations_rerouted"] == [sn.lid_name(l1)] and r["destinations_moved"] == []
    assert r["destinations_added"] == [] and r["destinations_removed"] == []
