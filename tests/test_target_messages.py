"""Issue 34: messages fit the target — ssh errors whole (host, cause, the command to reproduce),
restore advice per target (no `loom sim up` on an SSH target), and a sweep that does not come
says who holds the subnet."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from loom.fabrics.infiniband import apply as applymod
from loom.fabrics.infiniband.inventory import SmHost
from loom.fabrics.infiniband.sim import SimError
from loom.fabrics.infiniband.ssh import SshTarget
from loom.fabrics.infiniband.target import SimTarget
from loom.push.errors import TargetError
from loom.push.ssh import MESSAGE_CAP, Connection, SshError, control_dir, whole
from loom.render.sm_host import SmPaths

from .sshfabric import free_port


def host(port: int, name: str = "mgmt0") -> SmHost:
    return SmHost(name, "127.0.0.1", None, port, 15, "mgmt0-hca0", SmPaths(), 27)


def test_an_unreachable_host_is_named_with_ssh_s_whole_message_and_the_command(tmp_path):
    port = free_port()  # nothing listens there
    sockets = control_dir()
    conn = Connection(host(port), None, sockets)
    with pytest.raises(SshError) as caught:
        conn.run("true")
    shutil.rmtree(sockets)
    msg = str(caught.value)
    assert msg.startswith("mgmt0: ssh cannot reach 127.0.0.1 (") and "Connection refused" in msg, msg
    command = msg.split("to reproduce: `")[1].rstrip("`")
    assert shlex.split(command) == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-p", str(port),
                                    "--", "127.0.0.1", "true"]
    again = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=30)
    assert again.returncode == 255 and "Connection refused" in again.stderr  # it does reproduce it


def test_the_sockets_directory_is_short_enough_for_ssh_under_a_long_tmpdir(tmp_path, monkeypatch):
    """ssh refuses a ControlPath of 108 bytes or more ("ControlPath too long"): a long TMPDIR (a
    CI runner's, pytest-xdist's) must not make every connection fail."""
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    made = control_dir()
    try:
        assert len(str(made)) + 58 <= 107 and made.is_dir() and made.parent == Path("/tmp"), made
    finally:
        made.rmdir()
    monkeypatch.setattr("tempfile.tempdir", "/tmp")
    made = control_dir()
    made.rmdir()
    assert made.parent == Path("/tmp")


def test_no_usable_directory_for_the_sockets_is_a_target_error_naming_it(tmp_path, monkeypatch):
    """A TMPDIR that is gone (and so /tmp, as the fallback of a long one) ends in a message, not
    a traceback."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "gone"))
    with pytest.raises(TargetError) as e:
        control_dir()
    assert f"under {tmp_path / 'gone'}" in str(e.value) and "TMPDIR" in str(e.value)

    def refused(*_a, **kw):
        if kw.get("dir") == "/tmp":
            raise PermissionError(13, "Permission denied")
        return real(*_a, **kw)

    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    real = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    with pytest.raises(TargetError) as e:
        control_dir()
    assert "under /tmp: Permission denied" in str(e.value)
    assert not list(deep.iterdir())  # the one too long for a socket is not left behind


def test_long_error_output_keeps_whole_lines_from_both_ends():
    lines = [f"line {i}: /very/long/path/{'x' * 60}/file{i}" for i in range(400)]
    text = whole("\n".join(lines))
    assert len(text) < MESSAGE_CAP + 200 and text.startswith("line 0: /very") and text.endswith("/file399")
    assert "lines left out" in text and all(f"/file{i}" in text for i in (0, 1, 398, 399))
    assert whole("a\n\n  b  \n") == "a / b"


class _Unreachable:
    """A target whose inputs can be written but whose fabric cannot be reached."""

    def __init__(self, real, tmp_path: Path) -> None:
        self.real, self.dir, self.written = real, tmp_path, []

    def write_inputs(self, files) -> None:
        self.written.append(files)

    def fabric_down(self) -> bool:
        return True

    def bring_up(self, model: str) -> str:
        return self.real.bring_up(model)


def test_restore_advice_fits_the_target(tmp_path):
    ssh = SshTarget("tiny", [host(free_port()), host(free_port(), "st00")], 12, tmp_path)
    try:
        msg = applymod._restore(_Unreachable(ssh, tmp_path), {"restore_conf": None, "model": "/m/tiny.yaml"}, 5)[1]
    finally:
        ssh.close()
    assert "loom sim up" not in msg and "mgmt0, st00" in msg and "systemctl start opensm" in msg, msg
    sim = SimTarget.__new__(SimTarget)
    msg = applymod._restore(_Unreachable(sim, tmp_path), {"restore_conf": None, "model": "/m/tiny.yaml"}, 5)[1]
    assert "`loom sim up /m/tiny.yaml`" in msg, msg


@pytest.mark.sim
def test_a_sweep_that_does_not_come_says_who_holds_the_subnet(tiny_up):
    def stuck(timeout: float) -> str:
        raise SimError(f"OpenSM did not finish a sweep within {timeout:.0f}s; see its log")

    with pytest.raises(SimError) as caught:
        SimTarget(tiny_up)._swept(stuck, 3)
    assert "within 3s" in str(caught.value) and "the fabric says: mgmt0-hca0 master" in str(caught.value), caught.value


def test_an_ssh_plan_of_an_older_loom_is_sent_back_to_plan(tmp_path):
    """Plans made before loom asked the fabric who is master carry no LIDs for their SM hosts."""
    from loom.push.errors import PlanError

    spec = {"kind": "ssh", "switches": 12, "hosts": [{**host(22).as_dict(), "lid": None}]}
    with pytest.raises(PlanError, match="made by an older loom .* run `loom plan` again"):
        SshTarget.from_spec("tiny", spec, tmp_path)
    SshTarget.from_spec("tiny", {**spec, "hosts": [host(22).as_dict()]}, tmp_path).close()
