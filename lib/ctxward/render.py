"""The one Jinja2 environment over templates/ (shipped, or a checkout's)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent  # lib/ctxward -> repository root


def data_dir(name: str) -> Path:
    """Return the shipped templates/ or invariants/ folder (wheel first, then checkout)."""
    for candidate in (_PACKAGE / name, _CHECKOUT / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no {name}/ folder next to {_PACKAGE}")


@functools.cache
def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Markdown and plain text for agents, never HTML
    )
    env.filters["tojson_compact"] = _tojson_compact
    return env


def _tojson_compact(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def render(name: str, **context: Any) -> str:
    """Render the template `name` with `context`."""
    return environment().get_template(name).render(**context)


def template_names() -> list[str]:
    """Every shipped template (for tests and `ctxward doctor`-style checks)."""
    return sorted(environment().list_templates(extensions=["j2"]))
