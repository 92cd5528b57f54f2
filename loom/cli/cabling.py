"""`loom cabling sheet|diff`: cabling sheets and change sheets.

`loom cabling MODEL` (the spelling cabling sheets were introduced with) stays the sheet: the
group puts `sheet` in front of anything that is not one of its commands."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import typer
from typer.core import TyperGroup

from .common import MODEL_ARG, err, escape, fail, load_model, out, print_model_error, write
from .sides import DiffError, model_at, side

SHEET_FORMATS = ("csv", "labels", "xlsx", "html")
DIFF_FORMATS = ("text", "csv", "labels", "html", "xlsx")


class SheetByDefault(TyperGroup):
    """A group whose first command, `sheet`, is also what `loom cabling MODEL ...` runs."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["sheet", *args]
        return super().parse_args(ctx, args)


cabling_app = typer.Typer(cls=SheetByDefault, no_args_is_help=True,
                          help="Cabling sheets (`loom cabling MODEL` = `loom cabling sheet MODEL`) and change sheets.")
OUT_OPT = typer.Option(None, "--out", metavar="FILE", help="file to write (default: standard output; xlsx needs it)")


def _format(fmt: str, allowed: tuple[str, ...]) -> str:
    if fmt not in allowed:
        raise typer.BadParameter(f"must be {', '.join(allowed[:-1])} or {allowed[-1]}, not {fmt!r}", param_hint="--format")
    return fmt


def _emit(text: str | bytes, out_file: Path | None, what: str) -> None:
    """The document on stdout, or written to `out_file` with a line saying so (every format alike)."""
    if out_file is None:
        sys.stdout.write(text)
    else:
        write(out_file, text)
        out.print(f"wrote {out_file} ({what})", highlight=False, markup=False)


@cabling_app.command("sheet")
def sheet_cmd(model: Path = MODEL_ARG,
              fmt: str = typer.Option("csv", "--format", help="csv, labels (label-printer CSV), xlsx or html"),
              out_file: Path | None = OUT_OPT) -> None:
    """One row per cable: both ends (rack, RU, device, port), label, length, part, media.

    Exit 0 written; 1 invalid model or a run no medium reaches; 2 usage error."""
    fmt = _format(fmt, SHEET_FORMATS)
    if fmt == "xlsx" and out_file is None:
        raise typer.BadParameter("xlsx needs --out FILE", param_hint="--format")
    fabric = load_model(model, marked=False)  # a cable marked down is still on the floor
    plan = cable_plan_of(model, fabric)
    if fmt == "xlsx":
        from loom.render.cabling_docs import to_xlsx

        _emit(to_xlsx(fabric, plan), out_file, f"{len(plan)} cables")
        return
    if fmt == "csv":
        from loom.render.cabling import to_csv

        text = to_csv(plan)
    elif fmt == "labels":
        from loom.render.labels import to_labels_csv

        text = to_labels_csv(plan)
    else:
        from loom.render.cabling_docs import to_html

        text = to_html(fabric, plan)
    _emit(text, out_file, f"{len(plan)} cables")


@cabling_app.command("diff")
def diff_cmd(models: list[Path] = typer.Argument(..., help="OLD NEW (model files), or MODEL with --base"),
             base: str | None = typer.Option(None, "--base", help="git revision: MODEL as it was there is OLD "
                                             "(the same meaning as `loom diff --base`)"),
             fmt: str = typer.Option("text", "--format", help="text (change sheet and pull list), csv, labels (label-"
                                     "printer CSV of the new and re-pulled cables only), html or xlsx (NEW's sheet with "
                                     "the change marked)"),
             only_changes: bool = typer.Option(False, "--only-changes", help="html, xlsx: only the racks and cables "
                                               "the change touches"),
             out_file: Path | None = OUT_OPT) -> None:
    """The change sheet a technician follows: cables to add, remove, move or re-pull, with the
    new lengths and parts, from OLD to NEW; its labels; NEW's cabling sheet with the change marked.

    Exit 0 written; 1 invalid model or unknown revision; 2 usage error."""
    from loom.model import ModelError
    from loom.render.cabling_diff import change_sheet, change_sheet_csv, change_sheet_text, pull_list

    fmt = _format(fmt, DIFF_FORMATS)
    if not ((len(models) == 2 and base is None) or (len(models) == 1 and base)):
        raise typer.BadParameter("give OLD NEW, or one MODEL with --base REV", param_hint="MODELS")
    if fmt == "xlsx" and out_file is None:
        raise typer.BadParameter("xlsx needs --out FILE", param_hint="--format")
    if only_changes and fmt not in ("html", "xlsx"):
        raise typer.BadParameter("--only-changes goes with --format html or xlsx (labels and the change sheet are "
                                 "the change only already)", param_hint="--only-changes")
    with tempfile.TemporaryDirectory(prefix="loom-cabling-") as tmp:
        new_p = models[-1]
        if base:
            try:
                old_p, _ = model_at(new_p, base, None, Path(tmp), "base")
            except DiffError as exc:
                fail(exc)
            (old_p.parent / "catalogue").symlink_to((new_p.parent / "catalogue").resolve())
        else:
            old_p = models[0]
        old_f = load_model(old_p, marked=False)  # marks move no cable
        try:
            new_f = side(new_p, old_f, marked=False)
        except ModelError as exc:
            print_model_error(new_p, exc)
            raise typer.Exit(1) from None
        new_plan = cable_plan_of(new_p, new_f)
        lines = change_sheet(old_f, cable_plan_of(old_p, old_f), new_f, new_plan)
    if fmt in ("labels", "html", "xlsx"):
        from loom.render.cabling_docs import change_marks, to_html, to_xlsx
        from loom.render.labels import to_labels_csv

        change = change_marks(old_f, lines, only_changes)
        if fmt == "xlsx":
            _emit(to_xlsx(new_f, new_plan, change), out_file, f"{len(lines)} change(s)")
            return
        text = (to_labels_csv([c for c in new_plan if c.cable_id in change["marks"]]) if fmt == "labels"
                else to_html(new_f, new_plan, change))
    else:
        text = change_sheet_csv(lines) if fmt == "csv" else change_sheet_text(lines, pull_list(lines, new_plan))
    _emit(text, out_file, f"{len(lines)} change(s)")


def cable_plan_of(path: Path, fabric):
    """The model's cabling plan; exits with the file, field and fix when it has none or its catalogue is bad."""
    from loom.model import ModelError, locate
    from loom.model.catalogue import load_catalogue
    from loom.render.cabling import cable_plan

    m = fabric.model
    if m.cabling is None:
        err.print(f"[red]error:[/red] {escape(str(path))}: the model has no `cabling:` section\n"
                  "  fix: add cabling: {site: <name>, catalogue: catalogue/nvidia-hdr.yaml}", highlight=False)
        raise typer.Exit(1)
    try:
        return cable_plan(fabric, load_catalogue(path, m.cabling.catalogue))
    except ModelError as exc:
        print_model_error(path, locate(path, exc) if not exc.file else exc)
        raise typer.Exit(1) from None
