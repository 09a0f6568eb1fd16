"""`ctxward scrub`: print a file or stdin with its secrets redacted."""

from __future__ import annotations

import sys

import click

from ctxward.commands import echo_json, json_option, project_of
from ctxward.core.fsutil import MAX_NAMED_BYTES, read_named
from ctxward.errors import BadInput


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
@click.option(
    "--explain",
    is_flag=True,
    help="Print one line per redaction (line:column, type, rule id), not the text.",
)
@json_option
@click.pass_context
def scrub_command(ctx: click.Context, source: str, explain: bool, as_json: bool) -> None:
    """Print FILE (or stdin) with every secret replaced by [REDACTED:<type>].

    With --json, print {"text": ..., "redactions": [{"type", "position", "replacement"}]};
    positions refer to the input. With --explain, print instead one line per redaction,
    `LINE:COLUMN  TYPE  RULE  (N chars)`, RULE being the id of the rule that found it (with
    --json, each redaction also has its "rule"). FILE is a regular file (a FIFO or a device is
    refused) of at most 32 MiB, like stdin. The project's `scrub:` config section (allowlist,
    extra rules) is in force.

    \b
    Example:
        ctxward scrub .env
        git diff | ctxward scrub --json
        ctxward scrub --explain deploy.log
    """
    from ctxward.core.config import load
    from ctxward.core.scrub import explain as explain_text
    from ctxward.core.scrub import scrub

    load(project_of(ctx, anywhere=True))  # puts its `scrub:` section in force
    original = read_source(source)
    if explain:
        explained = explain_text(original)
        if as_json:
            echo_json({"redactions": [{**r, "rule": rule} for r, rule in explained]})
            return
        for redaction, rule in explained:
            start, end = redaction["position"]
            line = original.count("\n", 0, start) + 1
            column = start - (original.rfind("\n", 0, start) + 1) + 1
            kind = redaction["type"]
            click.echo(f"{line}:{column}  {kind}  {rule}  ({end - start} chars)")
        return
    text, redactions = scrub(original)
    if as_json:
        echo_json({"text": text, "redactions": redactions})
    else:
        click.echo(text, nl=False)
