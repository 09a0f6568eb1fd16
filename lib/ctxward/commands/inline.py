"""`ctxward inline score|compress|stats|batch` (L1, seed 000 §12) and `ctxward handoff` (C11)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from ctxward.commands import Group, echo_json, echo_result, json_option, project_of
from ctxward.commands.scrub import read_source
from ctxward.compress.entries import Route
from ctxward.core.project import Project
from ctxward.core.render import render
from ctxward.core.values import Value
from ctxward.errors import EXIT_ERROR, BadInput

Callback = Callable[..., Any]  # a click command's function, before click makes it a command


class Source(Value):
    """--text or --file: where the entry comes from (stdin when neither), read when asked."""

    text: str | None
    file_: str | None

    def read(self) -> tuple[str, str]:
        """(label, text) from --text, --file or stdin."""
        if self.text is not None and self.file_ is not None:
            raise BadInput("give --text or --file, not both")
        if self.text is not None:
            return "text", self.text
        if self.file_ is not None:
            return ("stdin" if self.file_ == "-" else self.file_), read_source(self.file_)
        if sys.stdin.isatty():
            raise BadInput("no input: give --text, --file, or pipe the entry on stdin")
        return "stdin", read_source("-")


def _route_options(command: Callback) -> Callback:
    """--from, --to and --blocker, handed to `command` as one `route: Route`."""

    @functools.wraps(command)
    def with_route(
        *args: Any, sender: str | None, receiver: str | None, blocker: bool, **rest: Any
    ) -> Any:
        return command(*args, route=Route(sender, receiver, blocker), **rest)

    options = [
        click.option(
            "--from", "sender", metavar="AGENT", help="Sending agent (default: the entry's agent)."
        ),
        click.option(
            "--to",
            "receiver",
            metavar="AGENT",
            help="Next agent (default: the entry's `to`, else unknown: relevance 0.5).",
        ),
        click.option(
            "--blocker", is_flag=True, help="Count the entry as having or lifting a blocker."
        ),
    ]
    return _decorated(with_route, options)


def _input_options(command: Callback) -> Callback:
    """--text and --file as one `source: Source`, then the route options."""

    @functools.wraps(command)
    def with_source(*args: Any, text: str | None, file_: str | None, **rest: Any) -> Any:
        return command(*args, source=Source(text, file_), **rest)

    options = [
        click.option("--text", help="The entry or text to compress."),
        click.option(
            "--file", "file_", metavar="FILE", help="Read the entry from FILE ('-' for stdin)."
        ),
    ]
    return _route_options(_decorated(with_source, options))


def _decorated(function: Callback, options: Sequence[Callable[[Callback], Callback]]) -> Callback:
    for option in reversed(options):
        function = option(function)
    return function


def _tables(project: Project) -> Any:
    from ctxward.compress.scoring import load_tables
    from ctxward.core.config import load

    return load_tables(load(project).scoring)


def _echo_runs(runs: list[Any], as_json: bool, *, with_stats: bool) -> None:
    from ctxward.compress.engine import stats

    results = [result for run in runs for result in run.results]
    summary = stats(runs)
    if as_json:
        items = [result.as_dict() for result in results]
        if with_stats:
            echo_json({"results": items, "stats": summary})
        else:
            echo_json(items[0] if len(items) == 1 else items)
    else:
        click.echo(
            render(
                "compress/cli_compress.txt.j2",
                results=[result.as_dict() for result in results],
                stats=summary if with_stats else None,
            ),
            nl=False,
        )
    if results and not any(result.compressed for result in results):
        raise click.exceptions.Exit(EXIT_ERROR)


@click.group("inline", cls=Group)
def inline() -> None:
    """Inline compression of subtask summaries and text: scored, then kept, shortened or cut.

    Input is a subtask_summary (a ```yaml block whose top key is subtask_summary, or the bare
    mapping, YAML or JSON) or free text, from --text, --file or stdin. Everything is scrubbed of
    secrets first; no model is called. A file or stdin holds at most 32 MiB; a FIFO or a device
    named as a file is refused (pipe it on stdin instead).

    \b
    Example:
        ctxward inline score --file summary.yaml --to aphrodite
        ctxward inline compress --text "Fixed typo in README" --from hermes
    """


@inline.command("score")
@_input_options
@click.pass_context
def score_command(ctx: click.Context, source: Source, route: Route) -> None:
    """Print the priority score as JSON: dimensions, score, band, keywords.

    \b
    Example:
        ctxward inline score --text "Added JWT auth endpoint" --from hermes --to aphrodite
    """
    from ctxward.compress.engine import score_text

    _, content = source.read()
    scored = score_text(content, _tables(project_of(ctx, anywhere=True)), **route.as_dict())
    if not scored:
        raise BadInput("the input is empty")
    items = [score.as_dict() for _, score in scored]
    echo_json(items[0] if len(items) == 1 else items)


@inline.command("compress")
@_input_options
@json_option
@click.pass_context
def compress_command(ctx: click.Context, source: Source, route: Route, as_json: bool) -> None:
    """Scrub, score and compress with the band's template; the source is left untouched.

    The full scrubbed original is kept in .ctxward/offload/<sha256>.md. Entries the safety
    preflight refuses (in progress, escalated, blocked, NEEDS_REVISION/FAILED, ADRs, the active
    plan) are reported and not compressed; exit code 1 when nothing was compressed.

    \b
    Example:
        ctxward inline compress --file summary.yaml --to aphrodite
    """
    from ctxward.compress.engine import compress_text

    project = project_of(ctx)
    label, content = source.read()
    run = compress_text(content, _tables(project), project=project, label=label, **route.as_dict())
    if not run.results:
        raise BadInput("the input is empty")
    _echo_runs([run], as_json, with_stats=False)


@inline.command("stats")
@_input_options
@json_option
@click.pass_context
def stats_command(ctx: click.Context, source: Source, route: Route, as_json: bool) -> None:
    """Print bytes and estimated tokens (bytes/4) before and after, the ratio, entries per band.

    Nothing is written.

    \b
    Example:
        ctxward inline stats --file phase2-summaries.yaml --json
    """
    from ctxward.compress.engine import compress_text, stats

    label, content = source.read()
    run = compress_text(
        content, _tables(project_of(ctx, anywhere=True)), label=label, **route.as_dict()
    )
    summary = stats([run])
    echo_result(as_json, summary, "compress/cli_stats.txt.j2", stats=summary)


@inline.command("batch")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@_route_options
@json_option
@click.pass_context
def batch_command(
    ctx: click.Context,
    files: tuple[str, ...],
    route: Route,
    as_json: bool,
) -> None:
    """Compress many entries or files in one run, each entry scored on its own.

    A file may hold several entries (a YAML/JSON list, or several ```yaml blocks). A progress
    bar shows on a terminal.

    \b
    Example:
        ctxward inline batch .ctxward/memory-bank/.tmp/*.md --to themis
    """
    from ctxward.compress.engine import compress_many

    project = project_of(ctx)
    tables = _tables(project)
    sources = [(name, read_source(name)) for name in files]
    options: dict[str, Any] = {"project": project, **route.as_dict()}
    if sys.stderr.isatty() and not as_json:
        with click.progressbar(length=len(sources), label="compressing", file=sys.stderr) as bar:
            runs = compress_many(sources, tables, progress=lambda _: bar.update(1), **options)
    else:
        runs = compress_many(sources, tables, **options)
    _echo_runs(runs, as_json, with_stats=True)


@click.command("handoff")
@click.option("--phase", metavar="N", help="Only the entries of phase N.")
@json_option
@click.pass_context
def handoff_command(ctx: click.Context, phase: str | None, as_json: bool) -> None:
    """Hand off: compress the completed work staged in the memory bank's .tmp/, and list it.

    Run at a phase boundary; PreCompact runs the same at a session handoff. Idempotent: an
    entry already staged with the same content is left alone.

    \b
    Example:
        ctxward handoff --phase 2
    """
    from ctxward.compress.handoff import handoff

    project = project_of(ctx)
    report = handoff(project, _tables(project), phase=phase)

    def item(staged: Any) -> dict[str, Any]:
        return {
            "path": project.relative(staged.path),
            "agent": staged.agent,
            "phase": staged.phase,
            "band": staged.band,
            "score": staged.score,
        }

    data = {
        "compressed": [item(s) for s in report.compressed],
        "already": [item(s) for s in report.already],
        "skipped": [{"what": what, "reason": why} for what, why in report.skipped],
        "unrecognized": list(report.unrecognized),
        "bank": project.relative(project.bank_dir),
        "phase": phase,
    }
    echo_result(as_json, data, "compress/handoff.txt.j2", report=data)
