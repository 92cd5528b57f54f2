"""`loom docs`: the references generated from the code (docs/model.md, docs/cabling.md,
docs/cli.md, docs/model.schema.json), so they cannot drift from it."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import out, write


def docs(ctx: typer.Context, out_dir: Path = typer.Option(Path("docs"), "--out", metavar="DIR", help="directory for the generated references")) -> None:
    """Write the references generated from the code: docs/model.md, docs/cabling.md, docs/cli.md
    and the model's JSON Schema docs/model.schema.json (editors validate YAML against it).

    Exit 0; 1 when a file cannot be written."""
    from loom.render.cabling_reference import columns_doc
    from loom.render.cli_doc import cli_reference
    from loom.render.model_doc import model_reference, model_schema

    for name, text in (("model.md", model_reference()), ("cabling.md", columns_doc()),
                       ("cli.md", cli_reference(ctx.find_root().command)), ("model.schema.json", model_schema())):
        write(out_dir / name, text)
        out.print(f"wrote {out_dir / name}", highlight=False, markup=False)
