"""A plan file, whatever the technology: its version and header (fabric, model and its digest,
when and by whom, the target), its own digest, and what apply proves of it before anything else
(signed, made for this state directory, its model unchanged and valid).  The technology's
backend checks and applies the rest (`loom.fabrics.<technology>.plan`/`apply`)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from loom.expand import Fabric, load_fabric
from loom.model import ModelError

from .audit import who
from .errors import PlanError

PLAN_VERSION = 3  # 3: tables as JSON rows (2 held gzip blobs)


def plan_header(model_path: Path, fabric: Fabric, target) -> dict:
    """What every plan starts with: its version, fabric, model (path and digest), when and by
    whom it was made, and the target (with its state directory) it is for."""
    return {"version": PLAN_VERSION, "fabric": fabric.name, "model": str(model_path),
            "model_sha256": _sha256(model_path, "model"), "lock_sha256": _lock_digest(model_path),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "user": who()["user"], "state_dir": str(target.dir),
            "target": target.spec()}


def _sha256(path: Path, what: str, tables: bool = False) -> str:
    """Digest of a file read bounded (`loom.model.reading`: a regular file within the size cap of
    its kind), so a plan naming `/dev/zero` or a huge file as its model is refused, not read."""
    from loom.model.reading import read_bytes

    return hashlib.sha256(read_bytes(path, what, tables)).hexdigest()


def _lock_digest(model_path: Path) -> str | None:
    """Digest of the model's lock file (its marks and as-built entries are part of what the plan
    routes around), None without one."""
    from loom.expand import lock_path

    path = lock_path(model_path)
    if not path.exists():
        return None
    try:
        return _sha256(path, "lock file", tables=True)
    except ModelError as exc:
        raise PlanError(str(exc)) from None


def content_digest(plan: dict) -> str:
    """Digest of a plan's content, `plan_sha256` itself left out (indentation does not matter)."""
    body = {k: v for k, v in plan.items() if k != "plan_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def check_state_dir(plan: dict, where: str = "the plan", marker: str = "fabric.net") -> Path:
    """The plan's state directory, if it is one loom made for the plan's fabric (a directory
    named after it holding `marker`: `fabric.net` (`frr-lab.json` for an Ethernet fabric) written
    by `loom sim up`, or the SSH target's `target.json` written by `loom plan`); apply writes its lock and journal there, so a plan
    edited to name any other directory is refused before anything is written."""
    raw = plan.get("state_dir")
    d = Path(raw).resolve() if isinstance(raw, str) and raw and "\x00" not in raw else None
    if d is None or d.name != plan.get("fabric") or not d.is_dir() or not (d / marker).is_file():
        what = "the SSH target's state" if marker == "target.json" else "the simulated fabric"
        raise PlanError(f"{where}: its state_dir {raw!r} is not {what} of {plan.get('fabric')!r} "
                        f"(no {marker} written by loom there); run `loom plan` again")
    return d


def check_signed(plan: dict, required: tuple[str, ...], where: str) -> None:
    """PlanError unless the plan has the `required` keys and its own digest matches its content."""
    missing = [k for k in required if k not in plan]
    if missing:
        raise PlanError(f"{where} lacks {', '.join(missing)}: it was not made by this loom; run `loom plan` again")
    if content_digest(plan) != plan["plan_sha256"]:
        raise PlanError(f"{where} was modified after `loom plan` made it (plan_sha256 does not match its content); "
                        "run `loom plan` again")


def checked_model(plan: dict, where: str) -> Fabric:
    """The plan's model, expanded, if it is unchanged since the plan (its digest) and still valid."""
    model = Path(plan["model"])
    try:
        model_sha = _sha256(model, "model")
    except ModelError as exc:
        raise PlanError(f"{where}: cannot use its model: {exc}; run `loom plan` again") from None
    if model_sha != plan["model_sha256"]:
        raise PlanError(f"{where}: the model {model} changed since the plan was made; run `loom plan {model}` again")
    if "lock_sha256" in plan and _lock_digest(model) != plan["lock_sha256"]:
        raise PlanError(f"{where}: the lock file of {model} changed since the plan was made (a `loom mark`, a "
                        f"`loom lock`?); run `loom plan {model}` again")
    try:
        return load_fabric(model)
    except ModelError as exc:
        raise PlanError(f"{where}: its model {model} is no longer valid ({exc}); run `loom validate {model}`") from None


#: Plans are read whole and parsed into Python lists, ~10 bytes of memory per byte of table rows,
#: so they get a cap of their own below the 1 GB one of dumps: the two-zone Fire-Flyer 2 fabric's
#: plan (three sets of tables) is ~7 MB.
MAX_PLAN_BYTES_ENV = "LOOM_MAX_PLAN_BYTES"
DEFAULT_MAX_PLAN_BYTES = 256 * 1024 * 1024


def _room_for(path: Path) -> None:
    """PlanError, before anything is read, for a plan over its cap or one this machine has not
    the memory to parse (MemoryError half-way is what a 1 GB plan ended in)."""
    from loom.model.reading import cap_from_env, room_to_parse

    cap = cap_from_env(MAX_PLAN_BYTES_ENV, DEFAULT_MAX_PLAN_BYTES)
    try:
        size = path.stat().st_size
    except OSError:
        return  # the bounded read names what is wrong with the path
    if size > cap:
        raise PlanError(f"{path}: the plan is {size} bytes, more than the limit of {cap}; check it is a plan made by "
                        f"`loom plan`, or raise the limit with {MAX_PLAN_BYTES_ENV}=<bytes>")
    why = room_to_parse(path, "plan")
    if why:
        raise PlanError(why)


def read_plan(path: Path) -> dict:
    """A plan file of either technology, read bounded (regular file, the plan's size cap and
    the memory to parse it, UTF-8: `loom.model.reading`) and parsed; its shape is its backend's
    to check (`check_shape`), and apply checks far more (each backend's `check_plan`)."""
    from loom.model import ModelError
    from loom.model.reading import read_text

    _room_for(path)
    try:
        plan = json.loads(read_text(path, "plan", tables=True))
    except ModelError as exc:
        raise PlanError(f"{exc}; run `loom plan MODEL --out {path}`") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise PlanError(f"cannot read plan {path}: not valid JSON ({getattr(exc, 'msg', 'nested too deeply')}); "
                        f"run `loom plan MODEL --out {path}`") from None
    if not isinstance(plan, dict) or plan.get("version") != PLAN_VERSION:
        raise PlanError(f"{path} is not a loom plan of version {PLAN_VERSION}; make a new one with `loom plan`")
    return plan


def as_planned(plan: dict, fabric, where: str):
    """The fabric as it stood when the plan was made: the model's design without the cables the
    plan routes around (`as_built.cables_down`, declared and observed), so apply checks the very
    fabric the plan was made for; plans without the key are checked on `fabric` (the model's)."""
    from loom.expand.asbuilt import load_as_built, without_named

    as_built = plan.get("as_built")
    if as_built is not None and not isinstance(as_built, dict):
        raise PlanError(f"{where}: as_built is not a record of what is down; run `loom plan` again")
    down = (as_built or {}).get("cables_down")
    if down is None:
        return fabric
    design = load_as_built(plan["model"]).design
    if not isinstance(down, list) or any(not isinstance(c, str) or c not in design.cable_index for c in down):
        raise PlanError(f"{where}: as_built.cables_down names cables the model does not have; run `loom plan` again")
    return without_named(design, down)
