"""Reading the fabric as built: `ibnetdiscover` run where the fabric can be reached.

Today that is the embedded simulated fabric (a client of ibsim, like `dump_fts`); on a real
fabric it runs on a subnet-manager host.  The text is parsed by `loom.expand.live`.
"""

from __future__ import annotations

import subprocess

from .daemon import READ_TIMEOUT, Daemons, client_dir
from .sim import SimError


def ibnetdiscover(d: Daemons) -> str:
    """The subnet as ibnetdiscover sees it from the subnet manager's port."""
    if d.fabric_down():
        d.health()
    try:
        with client_dir() as cwd:
            res = subprocess.run(["ibnetdiscover"], cwd=cwd, env=d.env(), capture_output=True, text=True,
                                 timeout=READ_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SimError(f"ibnetdiscover did not finish within {READ_TIMEOUT}s (is ibsim answering?)") from None
    if res.returncode != 0:
        raise SimError(f"ibnetdiscover failed (exit {res.returncode}): {res.stderr.strip()[-300:]}")
    return res.stdout
