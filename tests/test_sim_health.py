"""When the simulated fabric is gone, the error says why when ibsim said it: ibsim ends with an
`ibpanic:` line (for one, a client that died while ibsim was connecting back to it), and an
operator should not have to find that line in a log to know what happened."""

from __future__ import annotations

import subprocess

import pytest

from loom.fabrics.infiniband.daemon import Daemons
from loom.fabrics.infiniband.sim import SimError
from loom.push.procs import ProcessRef


def _dead_ibsim(tmp_path, log: str) -> Daemons:
    d = Daemons(tmp_path)
    gone = subprocess.Popen(["sleep", "0"])
    ref = ProcessRef.of(gone.pid, "sleep")
    gone.wait()
    (tmp_path / "ibsim.pid").write_text(ref.line())
    (tmp_path / "ibsim.log").write_text(log)
    return d


def test_a_fabric_gone_after_an_ibsim_panic_names_the_panic(tmp_path):
    d = _dead_ibsim(tmp_path, "sim> \n" * 2000 + "ibpanic: sim_ctl_new_client: can't connect to in socket "
                    "loom-tiny-1:in42: Connection refused\n")
    with pytest.raises(SimError) as e:
        d.health()
    said = str(e.value)
    assert "ibsim (the simulated fabric) is not running" in said
    assert "it stopped with: ibpanic: sim_ctl_new_client: can't connect to in socket" in said, said
    assert "loom sim up" in said


def test_a_fabric_gone_without_a_panic_says_only_that_it_is_gone(tmp_path):
    d = _dead_ibsim(tmp_path, "Network simulator ready.\nsim> \n")
    with pytest.raises(SimError) as e:
        d.health()
    assert "is not running; see" in str(e.value) and "stopped with" not in str(e.value)
