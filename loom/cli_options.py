"""Options every command spells the same way: the one grammar of docs/cli.md, in one place for
`loom.cli` and the command modules beside it (`cli_ranks`, `cli_slurm`, `netbox.commands`)."""

from __future__ import annotations

import typer

MODEL_ARG = typer.Argument(..., help="model file (YAML), e.g. topology/fire-flyer-2.yaml")
FORMAT_OPT = typer.Option("text", "--format", help="text or json")
JSON_OPT = typer.Option(False, "--json", help="same as --format json")


def format_of(fmt: str, as_json: bool, allowed: tuple[str, ...] = ("text", "json")) -> str:
    """The format asked for; `--json` is `--format json`; anything else is a usage error (exit 2)."""
    if fmt not in allowed:
        raise typer.BadParameter(f"must be {', '.join(allowed[:-1])} or {allowed[-1]}, not {fmt!r}", param_hint="--format")
    return "json" if as_json else fmt


def json_wanted(fmt: str, as_json: bool) -> bool:
    return format_of(fmt, as_json) == "json"
