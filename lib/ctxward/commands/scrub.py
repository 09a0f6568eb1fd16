"""`ctxward scrub`: print a file or stdin with its secrets redacted."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ctxward.commands import echo_json, json_option
from ctxward.errors import BadInput


def read_source(source: str) -> str:
    """The UTF-8 text of `source`: a file path, or `-` for stdin; BadInput names the problem."""
    if source == "-":
        raw = sys.stdin.buffer.read()
        where = "stdin"
    else:
        path = Path(source)
        if not path.is_file():
            raise BadInput(f"{source}: no such file")
        raw = path.read_bytes()
        where = source
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{where}: not UTF-8 (byte {exc.start})") from None


@click.command("scrub")
@click.argument("source", default="-", metavar="[FILE|-]")
@json_option
def scrub_command(source: str, as_json: bool) -> None:
    """Print FILE (or stdin) with every secret replaced by [REDACTED:<type>].

    With --json, print {"text": ..., "redactions": [{"type", "position", "replacement"}]};
    positions refer to the input.

    \b
    Example:
        ctxward scrub .env
        git diff | ctxward scrub --json
    """
    from ctxward.scrub import scrub

    text, redactions = scrub(read_source(source))
    if as_json:
        echo_json({"text": text, "redactions": redactions})
    else:
        click.echo(text, nl=False)
