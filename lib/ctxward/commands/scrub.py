"""`ctxward scrub`: print a file or stdin with its secrets redacted."""

from __future__ import annotations

import sys

import click

from ctxward.commands import echo_json, json_option
from ctxward.errors import BadInput
from ctxward.fsutil import MAX_NAMED_BYTES, read_named


def read_source(source: str, *, limit: int = MAX_NAMED_BYTES) -> str:
    """The UTF-8 text of `source`: a file path, or `-` for stdin; BadInput names the problem.

    A file is read only when it is a regular one (a FIFO or a device is refused, never waited
    on), and neither a file nor stdin past `limit` bytes (the rest is never read).
    """
    if source == "-":
        raw = sys.stdin.buffer.read(limit + 1)
        where = "stdin"
        if len(raw) > limit:
            raise BadInput(f"stdin: larger than {limit:,} bytes; refused")
    else:
        raw = read_named(source, limit=limit)
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
    positions refer to the input. FILE is a regular file (a FIFO or a device is refused) of
    at most 32 MiB, like stdin.

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
