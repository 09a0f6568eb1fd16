"""`ctxward bank promote|status|trim|close-sprint|context`: the L2 memory bank (seed 000)."""

from __future__ import annotations

import sys
from typing import Any

import click

from ctxward.commands import Group, echo_json, echo_result, json_option, project_of
from ctxward.errors import EXIT_ERROR


@click.group("bank", cls=Group)
@click.pass_context
def bank(ctx: click.Context) -> None:
    """The memory bank: what sub-agents did, promoted within a line budget at phase gates.

    The bank is .ctxward/memory-bank/ (.pantheon/memory-bank/ under `preset: pantheon`).
    Every command takes the bank's lock and finishes or undoes an interrupted promotion first.
    A transaction journal ctxward did not write on this machine for this bank (one a clone
    carried) is never replayed: it is set aside in .txn/ with one warning line, and the command
    does its own work and exits with its own code.

    \b
    Example:
        ctxward bank promote --phase 2 --to aphrodite
        ctxward bank context --phase 2
    """
    from ctxward.bank.state import refuse_untrusted

    # A journal a clone carried (or one from another project) is never replayed: it is set
    # aside with one warning line, and the command goes on with its own work and exit code.
    project = project_of(ctx, anywhere=True)  # each subcommand decides whether it writes
    refused = refuse_untrusted(project) if project.anchored else None
    if refused:
        click.echo(f"ctxward: warning: {refused}", err=True)


@bank.command("promote")
@click.argument("entries", nargs=-1, metavar="[ENTRIES...]")
@click.option("--phase", required=True, metavar="N", help="The phase gate (2, 2a, 3.1).")
@click.option(
    "--to", "receiver", metavar="AGENT", help="The next phase's agent (relevance, masks)."
)
@click.option(
    "--phases", type=int, metavar="TOTAL", help="Phases planned for the feature (default 8)."
)
@click.option(
    "--budget",
    "budget_lines",
    type=int,
    metavar="LINES",
    help="TOTAL_BUDGET for this promotion only (default: bank.total_budget, 100).",
)
@click.option("--feature", metavar="NAME", help="The feature (By Feature rows, learnings).")
@click.option("--date", metavar="YYYY-MM-DD", help="Date of entries without one (default: today).")
@click.option("--keep", is_flag=True, help="Leave the promoted .tmp/ entries in place.")
@json_option
@click.pass_context
def promote_command(
    ctx: click.Context,
    entries: tuple[str, ...],
    phase: str,
    receiver: str | None,
    phases: int | None,
    budget_lines: int | None,
    feature: str | None,
    date: str | None,
    keep: bool,
    as_json: bool,
) -> None:
    """Promote entries into the bank at a phase gate, in one transaction.

    ENTRIES are files holding subtask_summary / IMPL / REVIEW / PLAN entries (YAML or JSON,
    fenced or bare); without them, the entries staged in the bank's .tmp/ for the phase (by
    the SubagentStop hook and `ctxward handoff`) are promoted and then removed. Writes
    01-active-context.md, 02-progress-log.md, .tmp/ZZ-phase{N}-context.md and _xref/, or
    nothing. Exit code 4: the CRITICAL entries alone
    exceed the budget (nothing written).

    \b
    Example:
        ctxward bank promote summaries.yaml REVIEW-phase2.md --phase 2 --to aphrodite
    """
    from ctxward.bank.promote import promote

    project = project_of(ctx)
    options: dict[str, Any] = {
        "phase": phase,
        "receiver": receiver,
        "phases": phases,
        "budget_lines": budget_lines,
        "feature": feature,
        "date": date,
        "keep": keep,
    }
    if sys.stderr.isatty() and not as_json and len(entries) > 1:
        with click.progressbar(length=len(entries), label="promoting", file=sys.stderr) as bar:
            result = promote(project, entries, progress=lambda _: bar.update(1), **options)
    else:
        result = promote(project, entries, **options)
    data = result.as_dict(project)
    for warning in result.warnings:
        click.echo(f"ctxward: warning: {warning}", err=True)
    echo_result(as_json, data, "bank/cli_promote.txt.j2", report=data)
    if entries and not result.promoted and not result.unchanged and not result.discarded:
        raise click.exceptions.Exit(EXIT_ERROR)


@bank.command("status")
@json_option
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Budget used and left per phase, carryover, entries per band, the last promotion.

    \b
    Example:
        ctxward bank status --json
    """
    from ctxward.bank.view import status

    data = status(project_of(ctx, anywhere=True))
    echo_result(as_json, data, "bank/cli_status.txt.j2", status=data)


@bank.command("trim")
@json_option
@click.pass_context
def trim_command(ctx: click.Context, as_json: bool) -> None:
    """Trim ## Completed Phases back to the budget (LOW removed, then MEDIUM cut to 0.5).

    CRITICAL and HIGH entries are never trimmed; whatever is trimmed is archived first to
    _notes/archive/YYYY-MM-compressed-entries.md. Promotions run it on their own when the
    section passes 100 lines.

    \b
    Example:
        ctxward bank trim
    """
    from ctxward.bank.maintain import run_trim

    report = run_trim(project_of(ctx))
    if as_json:
        echo_json(report)
    else:
        click.echo(report["log"])


@bank.command("close-sprint")
@click.option("--dry-run", is_flag=True, help="Show what would go; change nothing.")
@json_option
@click.pass_context
def close_sprint_command(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Close a sprint: clean .tmp/, archive the cross-reference index, list unresolved entries.

    Only what is in the bank is removed from .tmp/ (and the ZZ artifacts); blocked, partial and
    not-yet-promoted entries are listed and stay, as do files ctxward does not recognise.

    \b
    Example:
        ctxward bank close-sprint --dry-run
    """
    from ctxward.bank.sprint import close_sprint

    project = project_of(ctx)
    data = close_sprint(project, dry_run=dry_run).as_dict(project)
    echo_result(as_json, data, "bank/cli_close_sprint.txt.j2", report=data)


@bank.command("context")
@click.option("--phase", required=True, metavar="N", help="The phase that just passed its gate.")
@click.option("--feature", metavar="NAME", help="Learnings of this feature (default: the bank's).")
@json_option
@click.pass_context
def context_command(ctx: click.Context, phase: str, feature: str | None, as_json: bool) -> None:
    """Print what the next phase's agent receives: learnings + the ZZ artifact of phase N.

    `## Previous Wave Learnings` comes from .ctxward/learnings/<feature>/learnings.md when it
    exists; `## Compressed Context (Phase N → Phase N+1)` from .tmp/ZZ-phase{N}-context.md.

    \b
    Example:
        ctxward bank context --phase 2 --feature auth-jwt
    """
    from ctxward.bank.view import context

    data = context(project_of(ctx, anywhere=True), phase, feature)
    if as_json:
        echo_json(data)
    else:
        click.echo(data["text"], nl=False)
