"""One Jinja2 environment over `templates/`, named after the files they render."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

#: `loom/templates`: in a checkout a link to the top-level `templates/`, in a wheel the files themselves.
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined, keep_trailing_newline=True,
                       autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)


def render(template: str, **values) -> str:
    return environment().get_template(template).render(**values)
