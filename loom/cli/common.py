"""What every command shares, in one public module: the options spelled one way (the grammar of
docs/cli.md), the two consoles, loading a model with file:line errors, atomic writes, routing
with a clean refusal, the phase timer and progress lines, and the backend of a fabric — the one
place a command learns the technology (`loom.fabrics.backend_for`).  Exit codes everywhere: 0
success, 1 invalid model / failed check / refusal, 2 usage errors."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from loom import pipeline

if TYPE_CHECKING:  # the commands load numpy, pydantic and the rest when they run, not at start-up
    from loom.expand import Fabric
    from loom.model import ModelError

class _Console:
    """A Rich console made when a command first prints: importing Rich costs ~40 ms, which
    `loom --help` (Typer's own plain help) and every quiet command need not pay."""

    def __init__(self, **options: object) -> None:
        self._options, self._console = options, None

    def __getattr__(self, name: str) -> object:
        return getattr(self._made(), name)

    def __enter__(self) -> object:  # Rich's live displays hold the console as a context
        return self._made().__enter__()

    def __exit__(self, *exc: object) -> None:
        self._made().__exit__(*exc)

    def forget(self) -> None:
        """Made again at the next print: a new invocation in the same process (the tests' CliRunner)
        reads its own terminal (COLUMNS, NO_COLOR) instead of the first invocation's."""
        self._console = None

    def _made(self):
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console


err = _Console(stderr=True, soft_wrap=True)
out = _Console(soft_wrap=True)


def escape(text: str) -> str:
    """Rich's markup escape, imported when a message is printed (see `_Console`)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)

MODEL_ARG = typer.Argument(..., help="model file (YAML), e.g. topology/fire-flyer-2.yaml")
FORMAT_OPT = typer.Option("text", "--format", help="text or json")
JSON_OPT = typer.Option(False, "--json", help="same as --format json")


def format_of(fmt: str, as_json: bool, allowed: tuple[str, ...] = ("text", "json")) -> str:
    """The format asked for; `--json` is `--format json`; anything else is a usage error (exit 2).
    A command that asked for JSON is remembered (`JSON_ERRORS`, reset by the app's callback on
    every invocation), so that its errors are a JSON document on stdout too (`json_error`): a
    script reading stdout gets one either way."""
    if fmt not in allowed:
        raise typer.BadParameter(f"must be {', '.join(allowed[:-1])} or {allowed[-1]}, not {fmt!r}", param_hint="--format")
    fmt = "json" if as_json else fmt
    JSON_ERRORS["on"] = fmt == "json"
    return fmt


JSON_ERRORS = {"on": False}  # this invocation asked for --format json (`format_of`)


def json_wanted(fmt: str, as_json: bool) -> bool:
    return format_of(fmt, as_json) == "json"

ENGINE_OPT = typer.Option("auto", "--engine", help="routing engine: fattree, bigraph, or auto (by the zones' kind)")

TARGET_OPT = typer.Option("sim", "--target", help="sim: the embedded simulated fabric; ssh: the subnet-manager "
                          "hosts of the inventory's `subnet_managers` group (an Ethernet fabric: its switches, "
                          "the `frr_switches` group) (docs/targets.md)")
INVENTORY_OPT = typer.Option(None, "--inventory", help="with --target ssh: inventory directory (default inventory/<fabric>)")
SSH_CONFIG_OPT = typer.Option(None, "--ssh-config", help="with --target ssh: an ssh_config file (default: the user's)")
END_A = typer.Argument(..., help="a device and port, `z0-leaf3:21` (or `z0-leaf3/21`); a device alone: all its cables")
END_B = typer.Argument(None, help="the far end (optional; picks among parallel cables, or checks A's far end)")


def load_model(path: Path, marked: bool = True) -> Fabric:
    """The expanded model; a missing file is a usage error (exit 2), an invalid model a finding
    (exit 1).  `marked=False` keeps what `loom mark down` takes out of routing (the simulator's
    commands: a mark changes no cable)."""
    from loom.model import ModelError

    if not path.exists() and not path.is_symlink():
        print_error(f"{path}: no such file; give the path of a model file, e.g. topology/tiny.yaml")
        raise typer.Exit(2)
    try:
        with CLOCK.timing("load"):
            return pipeline.load(path, marked=marked)
    except ModelError as exc:
        print_model_error(path, exc)
        raise typer.Exit(1) from None


def print_model_error(path: Path, exc: ModelError, headline: str | None = None) -> None:
    """`error: <headline>` and each problem as `file:line: field: message` + `fix:` on stderr;
    with --format json also the JSON document on stdout (`json_error`)."""
    is_lock = exc.file.endswith(".lock.json")
    file = exc.file if is_lock else str(path)
    headline = headline or f"{file} is not a valid {'lock file' if is_lock else 'model'}"
    err.print(f"[red]error:[/red] {escape(headline)}", highlight=False)
    for p in exc.problems:
        err.print(p.render(file), highlight=False, markup=False)
    json_error(headline, [{"file": file, "line": p.line, "field": p.path, "message": p.message, "fix": p.fix}
                          for p in exc.problems])


def json_error(message: str, problems: list[dict] | None = None) -> None:
    """With `--format json`: the error as a JSON document on stdout, beside the text on stderr
    (`{"error": …, "problems": [{file, line, field, message, fix}]}`); without, nothing."""
    import json
    import sys

    if JSON_ERRORS["on"]:
        sys.stdout.write(json.dumps({"error": message, "problems": problems or []}, indent=2) + "\n")


def write(path: Path, data: str | bytes) -> None:
    from loom.files import write_atomic

    try:
        write_atomic(path, data)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {escape(str(path))}: {exc.strerror}", highlight=False)
        raise typer.Exit(1) from None


def write_under(root: Path, rel: str, data: str) -> None:
    """Write `root/rel`, refusing any `rel` that resolves outside `root` (names are checked when
    the model loads; this is the last line of defence)."""
    from loom.model.names import PathEscape, inside

    try:
        path = inside(root, rel)
    except PathEscape as exc:
        raise input_error(exc) from None
    write(path, data)


def print_error(exc: Exception | str) -> None:
    """`error: <message>`; the message may quote user input, so it is printed without markup."""
    err.print("[red]error:[/red] ", end="")
    err.print(str(exc), highlight=False, markup=False)


def input_error(exc: Exception, code: int = 1) -> typer.Exit:
    print_error(exc)
    json_error(str(exc))
    return typer.Exit(code)


def phase(name: str, fn, *args):
    """Run one phase with a spinner (and a bar for each countable piece of work inside it, see
    `loom.progress`) and print how long it took; `CLOCK` adds it to the command's total."""
    from loom.render.progress_bar import bars

    with CLOCK.timing(name, said=True) as took, bars(err, name):
        result = fn(*args)
    if not JSON_ERRORS["on"]:  # a JSON command keeps stderr for errors (scripts read `2>&1`)
        err.print(f"  {name}: {took():.2f}s", highlight=False)
    return result


class Clock:
    """Where one command's wall time went, said at its end (`total: …`) when it had a phase worth a
    line: start-up, each phase, and what no phase covered (printing, writing), so that the parts
    add up to the wall time — the phase lines alone once summed to 3 s of a 25 s command.  Phases
    inside a phase are printed but counted once, in the outer one."""

    def __init__(self) -> None:
        self.begin(0.0)

    def begin(self, startup: float) -> None:
        self.t0, self.startup = time.perf_counter() - startup, startup
        self.parts: dict[str, float] = {}
        self.depth, self.said = 0, False

    @contextmanager
    def timing(self, name: str, said: bool = False):
        """Time the block as phase `name`; yields a function returning its seconds so far."""
        t0 = time.perf_counter()
        self.depth += 1
        self.said |= said
        try:
            yield lambda: time.perf_counter() - t0
        finally:
            self.depth -= 1
            if self.depth == 0:
                self.parts[name] = self.parts.get(name, 0.0) + time.perf_counter() - t0

    def split(self, name: str, rest: str, inner: dict[str, float]) -> None:
        """Replace phase `name` by the phases timed inside it elsewhere (the push engine's) and
        `rest`, the remainder no inner phase covered; they are said by the command."""
        whole = self.parts.pop(name, 0.0)
        self.parts |= inner
        self.parts[rest] = max(0.0, whole - sum(inner.values()))
        self.said = True

    def total_line(self) -> str | None:
        if not self.said or JSON_ERRORS["on"]:
            return None
        wall = time.perf_counter() - self.t0
        parts = ({"start-up": self.startup} if self.startup else {}) | self.parts
        parts["other"] = max(0.0, wall - sum(parts.values()))
        # every phase the command went through is named, 0.00s too (a model read from the cache)
        return f"  total: {wall:.2f}s wall = " + " + ".join(f"{n} {s:.2f}s" for n, s in parts.items())


CLOCK = Clock()


def process_age() -> float:
    """Seconds since this process was started (Linux's /proc): the interpreter's and the imports'
    share of a command, which no timer inside it can see; 0 where /proc cannot say."""
    import os

    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def progress(msg: str) -> None:
    """A step of a long command; printed without markup: it may quote what a device printed."""
    err.print(f"  {msg}", highlight=False, markup=False)


def fail(exc: Exception | str) -> None:
    print_error(exc)
    json_error(str(exc))
    raise typer.Exit(1) from None


def route_model(model: Path, engine: str, fabric: Fabric | None = None):
    """The model's fabric (loaded unless given) and its routing tables per plane
    (`loom.pipeline.route`); an unknown engine is a usage error, an unroutable fabric exit 1."""
    with CLOCK.timing("imports"):  # numpy, scipy, the routing engines: most of a small fabric's time
        from loom.routing import RoutingError, get_engine

    try:
        get_engine(engine)
    except RoutingError as exc:
        raise input_error(exc, 2) from None
    fabric = fabric or load_model(model)
    try:
        return fabric, phase("route", pipeline.route, fabric, engine)
    except RoutingError as exc:
        err.print(f"[red]error:[/red] {escape(str(model))}: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None


def np_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o))


class Ui:
    """The command line as a backend sees it (`loom.fabrics.backend.Ui`)."""

    out = out
    err = err

    @staticmethod
    def progress(message: str) -> None:
        progress(message)

    @staticmethod
    def phase(name: str, fn, *args):
        return phase(name, fn, *args)


UI = Ui()


def backend_of(fabric: Fabric):
    """The backend of the model's technology (`loom.fabrics`), chosen here once for every command."""
    with CLOCK.timing("imports"):
        from loom.fabrics import backend_for

        return backend_for(fabric)


@contextmanager
def refusals(model: Path | None = None):
    """Turn what a backend refuses into the command's message and exit code: unsupported (its
    code, 2 by default), a plan, target or simulator refusal (1), an unroutable fabric (1, named
    with the model as `route` names it)."""
    from loom.fabrics import Unsupported
    from loom.push.errors import PlanError, TargetError
    from loom.routing import RoutingError

    try:
        yield
    except Unsupported as exc:
        print_error(exc)
        raise typer.Exit(exc.code) from None
    except (PlanError, TargetError) as exc:
        fail(exc)
    except RoutingError as exc:
        err.print(f"[red]error:[/red] {escape(str(model))}: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
