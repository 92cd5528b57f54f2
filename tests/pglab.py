"""PostgreSQL clusters of our own on 127.0.0.1: a private data directory, port and socket
directory, never the system cluster.  NetBox's test harness (`tests/netboxlab.py`) makes a
throw-away one per start; the Terraform path keeps one under `.loom/tf/pg` for the `pg` state
backend (`make tf-plan|tf-apply` start it through `python -m tests.pglab up DIR`).

    python -m tests.pglab up DIR      # init DIR if new, start it if stopped; print its connection string
    python -m tests.pglab down DIR    # stop it (the data stay)
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PG_USER = "postgres"  # the Debian package's system user: PostgreSQL refuses to run as root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


def _as_pg(cmd: list) -> list:
    return ["runuser", "-u", PG_USER, "--", *cmd] if os.geteuid() == 0 else cmd


class Postgres:
    """A private cluster in `root`: own port, own socket directory, trust auth on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.data, self.sock, self.port = root / "pg", root / "pgsock", _free_port()

    def start(self) -> None:
        self.init()
        self.run()

    def init(self) -> None:
        for d in (self.data, self.sock):
            d.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(d, PG_USER, PG_USER)
        _run(_as_pg([PG_BIN / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]))

    def run(self) -> None:
        _run(_as_pg([PG_BIN / "pg_ctl", "-D", self.data, "-w", "-t", "60", "-l", self.data / "log", "-o",
                     f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 -c fsync=off "
                     "-c synchronous_commit=off -c full_page_writes=off", "start"]))

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists() and subprocess.run(
            _as_pg([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "status"]), capture_output=True).returncode == 0

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(_as_pg([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"]),
                           capture_output=True)

    def client(self, tool: str, *args) -> list:
        return [PG_BIN / tool, "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", *args]

    def conn_str(self, db: str) -> str:
        """For Terraform's `pg` backend (PG_CONN_STR); trust auth, so no password anywhere."""
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}?sslmode=disable"

    def database(self, db: str) -> str:
        """Create `db` unless it exists; its connection string."""
        have = _run(self.client("psql", "-tAc", f"SELECT 1 FROM pg_database WHERE datname = '{db}'", "postgres")).stdout
        if not have.strip():
            _run(self.client("createdb", db))
        return self.conn_str(db)


def up(root: Path, db: str = "loom_tf") -> str:
    """The cluster kept in `root`, initialised once, started if stopped (on its recorded port
    while free, else a new one), with database `db`; one caller at a time (file lock)."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        pg, port_file = Postgres(root), root / "port"
        if port_file.exists():
            pg.port = int(port_file.read_text())
        if not (pg.data / "PG_VERSION").exists():
            pg.init()
        if not pg.running():
            if not _free(pg.port):
                pg.port = _free_port()
            pg.run()
            port_file.write_text(f"{pg.port}\n")
        return pg.database(db)


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] in ("up", "down"):
        root = Path(argv[1]).resolve()
        if argv[0] == "up":
            print(up(root))
        else:
            Postgres(root).stop()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
