"""A real NetBox on 127.0.0.1 for the tests and `bench/netbox.py`: PostgreSQL, Redis and gunicorn
started on private ports and data directories, stopped afterwards (also on failure).

The expensive parts are built once and cached outside git, under
`~/.cache/loom/netbox-<version>/` (`LOOM_CACHE` overrides `~/.cache/loom`):
- `venv/`: Python 3.12 (pyenv) with NetBox from PyPI (NetBox 4.7 needs Python >= 3.12; the
  project's own venv is 3.11), ~2 min;
- `migrated.dump`: `pg_dump -Fc` of a freshly migrated database with one API user and token
  (`netbox migrate` takes ~8 min on 2 cores; the dump restores in ~2 s).
Each start makes a new PostgreSQL cluster (`initdb`, its own port and socket directory, never the
system cluster), restores the dump, starts Redis without persistence and gunicorn.

    python -m tests.netboxlab build     # build the cache (what `make netbox-cache` runs)
    python -m tests.netboxlab serve     # start one, print NETBOX_URL/NETBOX_TOKEN, wait for Ctrl-C
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.lifecycle import Started
from tests.load import slack
from tests.pglab import Postgres, _free_port, _run

VERSION = "4.7.3"
PYTHON = "3.12.1"
CACHE = Path(os.environ.get("LOOM_CACHE", Path.home() / ".cache" / "loom")) / f"netbox-{VERSION}"


def _python312() -> Path:
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() or str(Path.home() / ".pyenv")
    py = Path(root) / "versions" / PYTHON / "bin" / "python"
    if not py.exists():
        raise RuntimeError(f"Python {PYTHON} not found at {py}: install it with `pyenv install {PYTHON}`")
    return py


# ------------------------------------------------------------------------------ one instance


class NetBox(Started):
    """PostgreSQL + Redis + gunicorn serving NetBox from the cache; `url` and `token` once started."""

    def __init__(self, workers: int = 3) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="loom-netbox-"))
        os.chmod(self.root, 0o755)
        self.pg = Postgres(self.root)
        self.redis_port, self.http_port = _free_port(), _free_port()
        self.workers = workers
        self.procs: list[subprocess.Popen] = []
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.token = ""

    def start(self) -> None:
        ensure_cache()
        self.pg.start()
        self.procs.append(_redis(self.root, self.redis_port))
        _run(self.pg.client("createdb", "netbox"))
        _run(self.pg.client("pg_restore", "--no-owner", "-d", "netbox", CACHE / "migrated.dump"))
        self.token = (CACHE / "token").read_text().strip()
        conf = _configuration(self.root, self.pg.port, self.redis_port)
        self.procs.append(subprocess.Popen(
            [str(CACHE / "venv/bin/python"), "-m", "gunicorn", "--bind", f"127.0.0.1:{self.http_port}",
             "--workers", str(self.workers), "--timeout", "900", "--preload", "netbox.wsgi"],
            env=_env(conf), stdout=open(self.root / "gunicorn.log", "w"), stderr=subprocess.STDOUT,
            start_new_session=True))
        _wait_http(f"{self.url}/api/status/", self.procs[-1], self.root / "gunicorn.log")


    def stop(self) -> None:
        for p in reversed(self.procs):
            _stop(p)
        self.procs.clear()
        self.pg.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def env(self) -> dict[str, str]:
        return {"NETBOX_URL": self.url, "NETBOX_TOKEN": self.token}


def _redis(root: Path, port: int) -> subprocess.Popen:
    """Redis on 127.0.0.1:`port`, no persistence (NetBox's cache and task queue)."""
    return subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly",
                             "no", "--dir", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _configuration(root: Path, pg_port: int, redis_port: int) -> Path:
    """NETBOX_ROOT with conf/configuration.py for this instance (a test instance: secrets are
    random per start and never leave the temporary directory)."""
    conf = root / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "__init__.py").write_text("")
    redis = {"HOST": "127.0.0.1", "PORT": redis_port, "USERNAME": "", "PASSWORD": "", "SSL": False}
    (conf / "configuration.py").write_text(f"""
ALLOWED_HOSTS = ["*"]
DATABASES = {{"default": {{"ENGINE": "django.db.backends.postgresql", "NAME": "netbox", "USER": "postgres",
    "PASSWORD": "", "HOST": "127.0.0.1", "PORT": "{pg_port}", "CONN_MAX_AGE": 300}}}}
REDIS = {{"tasks": {json.dumps(redis | {"DATABASE": 0})}, "caching": {json.dumps(redis | {"DATABASE": 1})}}}
SECRET_KEY = {secrets.token_urlsafe(60)!r}
API_TOKEN_PEPPERS = {{1: {secrets.token_urlsafe(60)!r}}}
MAX_PAGE_SIZE = 5000
CHANGELOG_RETENTION = 0
LOGGING = {{}}
""".replace("false", "False").replace("true", "True"))
    return root


def _env(netbox_root: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "NETBOX_ROOT": str(netbox_root), "HOME": str(netbox_root),
            "DJANGO_SETTINGS_MODULE": "netbox.settings"}


def _wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    end = time.monotonic() + timeout * slack()
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # it answers (403 without a token: NetBox requires login)
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"NetBox did not answer at {url} within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


# ------------------------------------------------------------------------------------ cache


def ensure_cache() -> None:
    """Build the venv and the migrated dump if missing; one builder at a time (file lock)."""
    if (CACHE / "migrated.dump").exists() and (CACHE / "venv/.complete").exists():
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    os.chmod(CACHE, 0o755)
    with open(CACHE / ".build-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (CACHE / "venv/.complete").exists():
            _build_venv()
        if not (CACHE / "migrated.dump").exists():
            _build_dump()


def _build_venv() -> None:
    venv = CACHE / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    print(f"netboxlab: building {venv} (NetBox {VERSION}, Python {PYTHON}; ~2 min)", file=sys.stderr)
    _run([_python312(), "-m", "venv", venv])
    _run([venv / "bin/python", "-m", "pip", "install", "-q", f"netbox=={VERSION}"], timeout=1800)
    (venv / ".complete").touch()


def _build_dump() -> None:
    """Migrate a fresh database, add the API user and token, dump it (atomically)."""
    print("netboxlab: migrating a fresh NetBox database (~8 min on 2 cores, once)", file=sys.stderr)
    root = Path(tempfile.mkdtemp(prefix="loom-netbox-build-"))
    os.chmod(root, 0o755)
    pg, redis_port = Postgres(root), _free_port()
    redis = _redis(root, redis_port)
    try:
        pg.start()
        _run(pg.client("createdb", "netbox"))
        conf = _configuration(root, pg.port, redis_port)
        env = _env(conf)
        _run([CACHE / "venv/bin/python", "-m", "netbox", "migrate", "--no-input"], env=env, timeout=3600)
        token = secrets.token_hex(20)
        _run([CACHE / "venv/bin/python", "-m", "netbox", "shell", "-c",
              "from users.models import User, Token\n"
              "u = User.objects.create_superuser('loom', 'loom@example.invalid', None)\n"
              f"Token.objects.create(user=u, version=1, token='{token}', write_enabled=True)\n"], env=env, timeout=600)
        tmp = CACHE / "migrated.dump.tmp"
        _run(pg.client("pg_dump", "-Fc", "-f", tmp, "netbox"))
        (CACHE / "token.tmp").write_text(token + "\n")
        os.chmod(CACHE / "token.tmp", 0o600)
        os.replace(CACHE / "token.tmp", CACHE / "token")
        os.replace(tmp, CACHE / "migrated.dump")
    finally:
        pg.stop()
        _stop(redis)
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        ensure_cache()
        print(f"netboxlab: cache ready in {CACHE}")
        return 0
    if argv[:1] == ["serve"]:
        with NetBox() as nb:
            print(f"NETBOX_URL={nb.url}\nNETBOX_TOKEN={nb.token}", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
