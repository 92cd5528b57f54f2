"""docs/cli.md: every command, its arguments and options, read from the command line itself.

Generated (`loom docs`) and checked fresh by a test, like docs/model.md, so the reference can
never describe a flag that no longer exists.
"""

from __future__ import annotations


def _params(cmd) -> list[str]:
    """One table row per argument and option, as `--help` describes it (declaration, help, default)."""
    import typer._click as click  # Typer's own click, which built the commands

    ctx = click.Context(cmd)
    rows = []
    for p in cmd.params:
        record = p.get_help_record(ctx) if not getattr(p, "hidden", False) else None
        if record is None or p.name == "help":
            continue
        decl, text = record
        rows.append(f"| `{decl}` | {' '.join(text.split()).replace('|', '/')} |")
    return rows


def _walk(group, prefix: str) -> list[tuple[str, object]]:
    """(command path, command) of every command under a group (Typer's own click: duck-typed)."""
    out = []
    for name in sorted(group.commands):
        cmd = group.commands[name]
        if cmd.hidden:
            continue
        path = f"{prefix} {name}"
        if hasattr(cmd, "commands"):
            out += _walk(cmd, path)
        else:
            out.append((path, cmd))
    return out


def cli_reference(group) -> str:
    lines = ["# Command-line reference", "",
             "Generated from the code by `loom docs`; a test fails when it is stale.", "",
             "Exit codes, everywhere: **0** success (no findings, no changes), **1** findings (a check fails, "
             "a regression, an invalid model, differences found), **2** usage or environment error "
             "(a bad flag, a missing file); each command's help below gives its own (a simulated fabric that "
             "is not running: 1 for `sim link`, `plan` and `apply`, 2 for `discover`). `loom plan` follows Terraform: "
             "0 no changes, 2 changes, 1 error.", "",
             "One grammar: every command that reports takes `--format text|json` (`--json` is an alias of "
             "`--format json`); `check` and `diff` also write `markdown` for a review. `--out` takes a FILE or "
             "a DIR, as its metavar below says. A missing input file is a usage error (exit 2).", ""]
    commands = _walk(group, "loom")
    lines += [f"- [`{path}`](#{path.replace(' ', '-')})" for path, _ in commands] + [""]
    for path, cmd in commands:
        usage = " ".join(p.name.upper() for p in cmd.params if p.param_type_name == "argument")
        lines += [f"## {path}", "", f"`{path} {usage} [OPTIONS]`".replace("  ", " "), ""]
        lines += [" ".join(line.split()) if line.strip() else "" for line in (cmd.help or "").splitlines()]
        rows = _params(cmd)
        if rows:
            lines += ["", "| argument / option | meaning |", "|---|---|", *rows]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
