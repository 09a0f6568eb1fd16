"""`ctxward watch`: a thin command over ctxward.subagents.watch."""

from __future__ import annotations

import time

import click

from ctxward.commands import echo_json, json_option, project_of
from ctxward.core.render import render


@click.command()
@click.option("--once", is_flag=True, help="One reconciliation pass, then exit (CI, doctor).")
@click.option(
    "--debounce",
    type=click.IntRange(10, 10_000),
    default=300,
    show_default=True,
    metavar="MS",
    help="Apply a burst of changes once it has been quiet this long.",
)
@json_option
@click.pass_context
def watch(ctx: click.Context, once: bool, debounce: int, as_json: bool) -> None:
    """Keep payloads, plans and artifact records fresh while files change.

    Re-distills a plan's payload when its invariants.md changes; activates a skill again into
    every plan that names it when its frontmatter rules change; records ArtifactMeta for new
    sub-agent artifacts. Runs until Ctrl-C; --once does one pass and exits 1 when a problem is
    left (a missing or unreadable skill). --json prints one JSON object per line (--once: a list).

    \b
    Example:
        ctxward watch
        ctxward watch --once --json
    """
    from ctxward.subagents.watch import Report, Watcher, reconcile

    project = project_of(ctx)
    if once:
        reports = reconcile(project)
        if as_json:
            echo_json(reports)
        else:
            text = render("subagents/watch_once.txt.j2", reports=reports, root=project.root, at="")
            click.echo(text, nl=False)
        if any(report.action == "problem" for report in reports):
            raise click.exceptions.Exit(1)
        return

    def emit(report: Report) -> None:
        if as_json:
            import json

            click.echo(json.dumps(report.as_dict(), ensure_ascii=False))
        else:
            at = time.strftime("%H:%M:%S")
            click.echo(render("subagents/watch_report.txt.j2", r=report, at=at), nl=False)

    watcher = Watcher(project, quiet=debounce / 1000)
    if not as_json:
        folders = [project.relative(path) for path in watcher.planned_folders()]
        click.echo(
            render("subagents/watch_start.txt.j2", root=project.root, folders=folders), nl=False
        )
    try:
        watcher.run(emit)
    except KeyboardInterrupt:
        if not as_json:
            click.echo(render("subagents/watch_stopped.txt.j2"), nl=False)


COMMANDS = [watch]
