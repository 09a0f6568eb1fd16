"""The one Jinja2 environment over templates/ (shipped, or a checkout's)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ctxward.core.paths import data_dir

if TYPE_CHECKING:
    import jinja2


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
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["tojson_compact"] = _tojson_compact
    return env


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between processes, in ~/.cache/ctxward/templates.

    Every hook is a cold interpreter, and compiling the few templates it renders costs more
    than rendering them (the PreToolUse deny path: bench/hook_latency.py). Jinja2 keys each
    entry by the template's source checksum, so an edited template is recompiled. A cache that
    cannot be read or written is skipped: it only ever costs the compile. A cache file that is
    not a regular file (a FIFO planted there) is skipped too, never waited on.
    """
    import contextlib
    import os

    import jinja2

    class TolerantCache(jinja2.FileSystemBytecodeCache):
        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            from ctxward.core.fsutil import open_regular

            try:
                with open(
                    open_regular(self._get_cache_filename(bucket), follow_links=True), "rb"
                ) as handle:
                    bucket.load_bytecode(handle)
            except (OSError, EOFError, ValueError, TypeError):
                bucket.reset()

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "ctxward", "templates")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return TolerantCache(folder)


def _tojson_compact(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def render(name: str, **context: Any) -> str:
    """Render the template `name` with `context`."""
    return environment().get_template(name).render(**context)


def template_names() -> list[str]:
    """Every shipped template (for tests and `ctxward doctor`-style checks)."""
    return sorted(environment().list_templates(extensions=["j2"]))
