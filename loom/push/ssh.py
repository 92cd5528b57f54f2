"""OpenSSH as Loom's transport to the hosts of a site, whatever the technology: subnet-manager
hosts (InfiniBand, `loom.fabrics.infiniband.ssh`) and switches (Ethernet,
`loom.fabrics.ethernet.ssh`).  The system client runs it, so the user's `ssh_config`, agent,
ProxyJump and known_hosts all apply; one multiplexed connection per host (ControlMaster, the
control sockets in a private 0700 directory removed at the end).  Nothing secret is kept or
logged.  The hosts come from an Ansible inventory directory, read here with the same bounds as a
model file."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from loom.model import ModelError
from loom.model.reading import load_yaml

from .errors import PlanError, TargetError

CONNECT_TIMEOUT = 10  # seconds for ssh to reach a host
MESSAGE_CAP = 4000  # characters of a host's error output kept in a message (its first and last lines beyond)


class SshError(TargetError):
    """A host could not be reached or a command on it failed; the message names host and command."""


def clean(value, what: str, where: str) -> str:
    """A value that reaches an ssh command line: text, no option look-alike, no control characters."""
    if not isinstance(value, str) or not value or value.startswith("-") or any(ord(c) < 32 for c in value):
        raise PlanError(f"{where}: {what} {value!r} is not a usable host name, user or path; fix the inventory "
                        "(subnet_managers group) and run `loom plan` again")
    return value


def read_inventory_yaml(path: Path) -> dict:
    """An inventory file as a mapping ({} when absent), read bounded like a model file."""
    if not path.exists():
        return {}
    try:
        data = load_yaml(path, "inventory file")
    except ModelError as exc:
        raise PlanError(str(exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PlanError(f"{path}: an inventory file must be a mapping; fix it or run `loom inventory` again")
    return data


class Connection:
    """`ssh` to one host, multiplexed: the first command opens the master connection, the
    next ones reuse it; `close` ends it."""

    def __init__(self, host, ssh_config: str | None, control_dir: Path) -> None:
        self.host = host
        self.options = [*(["-F", ssh_config] if ssh_config else []), "-o", "BatchMode=yes",
                        "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
                        *(["-p", str(host.port)] if host.port else []), *(["-l", host.user] if host.user else [])]
        self.base = ["ssh", *self.options, "-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/%C",
                     "-o", "ControlPersist=300"]

    def reproduce(self, command: str = "true") -> str:
        """The ssh command a user can run to see the failure for themselves (the options Loom
        uses, without its private connection sharing)."""
        return shlex.join(["ssh", *self.options, "--", self.host.destination, command])

    def run(self, script: str, stdin: str | None = None, timeout: float = 120, ok: tuple[int, ...] = (0,),
            what: str | None = None) -> subprocess.CompletedProcess:
        """Run a POSIX sh script on the host; raise SshError unless it exits with one of `ok`.
        The error names the host, what ran (`what`, else the script's start), ssh's or the
        command's whole message, and the ssh command that reproduces it."""
        given, what = what, what or _short(script)
        try:
            # errors="replace": a host's output is not ours to trust, and bytes that are not UTF-8
            # (a description typed in latin-1, a binary) must reach the reader, not raise here
            res = subprocess.run([*self.base, "--", self.host.destination, script], input=stdin, capture_output=True,
                                 text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SshError(f"{self.host.name}: `{what}` gave no answer within {timeout:.0f}s; to try the connection: "
                           f"`{self.reproduce()}`") from None
        if res.returncode == 255:
            raise SshError(f"{self.host.name}: ssh cannot reach {self.host.destination} ({whole(res.stderr) or 'no message'}); "
                           f"to reproduce: `{self.reproduce()}`")
        if res.returncode not in ok:
            raise SshError(f"{self.host.name}: `{what}` exited with {res.returncode}: {whole(res.stderr) or 'no message'}; "
                           f"to reproduce: `{self.reproduce(given or (script if len(script) <= 200 else 'true'))}`")
        return res

    def close(self) -> None:
        subprocess.run([*self.base, "-O", "exit", "--", self.host.destination], capture_output=True, timeout=10)


def whole(text: str) -> str:
    """A host's error output for a message: every line, joined; beyond MESSAGE_CAP characters its
    first and last lines with how much was left out between (never cut mid-line)."""
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    joined = " / ".join(lines)
    if len(joined) <= MESSAGE_CAP:
        return joined
    head, tail = [], []
    while lines and len(" / ".join(head + tail)) < MESSAGE_CAP // 2:
        head.append(lines.pop(0))
        if lines:
            tail.insert(0, lines.pop())
    return " / ".join(head) + f" / [... {len(lines)} lines left out ...] / " + " / ".join(tail)


def _short(script: str) -> str:
    """The start of a script, for a message."""
    one = " ".join(script.split())
    return one if len(one) <= 80 else one[:80] + " …"


# a Unix socket's path holds at most 107 bytes; ssh adds the 40 hex digits of %C and, while it
# sets the master up, a 17-character suffix
_SOCKET_PATH_MAX, _SSH_ADDS = 107, 1 + 40 + 17


def control_dir() -> Path:
    """A private directory for the multiplexed connections' sockets: under TMPDIR, or under /tmp
    when TMPDIR's path is too long for a socket (ssh would refuse every connection).  Neither
    usable (missing, full, read-only) is a TargetError saying so, not a traceback."""
    where = tempfile.gettempdir()
    try:
        made = Path(tempfile.mkdtemp(prefix="loom-ssh-"))
        if len(os.fsencode(made)) + _SSH_ADDS <= _SOCKET_PATH_MAX:
            return made
        made.rmdir()
        where = "/tmp"
        return Path(tempfile.mkdtemp(prefix="loom-ssh-", dir=where))
    except OSError as exc:
        raise TargetError(f"cannot make a directory for ssh's connection sockets under {where}: {exc.strerror}; "
                          "point TMPDIR at a writable directory with a short path") from None


def close_all(conns, control: Path) -> None:
    """End the multiplexed connections and remove their control directory (idempotent)."""
    if control.exists():
        for c in conns:
            try:
                c.close()
            except (OSError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(control, ignore_errors=True)
