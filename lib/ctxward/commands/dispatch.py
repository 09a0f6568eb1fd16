"""The dispatch guard's CLI layer (seed 004 G9 "CLI 兜底"): `ctxward dispatch check` and
`ctxward thresholds`. Thin: read the prompt, call ctxward.guard.decide, echo a template or JSON.

Unlike the PreToolUse hook, this layer has `--force`: it lets a hard-reject through with the
warning FORCED_OVER_THRESHOLD and the time in `forcedAt`, and never passes the emergency tier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ctxward.commands import Group, echo_json, json_option, project_of
from ctxward.core.render import render
from ctxward.errors import EXIT_REJECTED

if TYPE_CHECKING:
    from ctxward.guard.decide import Decision

agent_type_option = click.option(
    "--agent-type",
    metavar="TYPE",
    help="Sub-agent type, for a dispatch.capacity_by_agent entry (default: general-purpose).",
)


def _capacity(ctx: click.Context, agent_type: str | None) -> tuple[int, str | None]:
    """The capacity in force for `agent_type`, and the config file it came from (if any)."""
    from ctxward.core.config import load
    from ctxward.guard.decide import capacity_for

    settings = load(project_of(ctx, anywhere=True))
    capacity = capacity_for(
        settings.dispatch.capacity_bytes, settings.dispatch.capacity_by_agent, agent_type
    )
    return capacity, settings.source


@click.group(cls=Group)
def dispatch() -> None:
    """Check a sub-agent prompt against the dispatch guard's size table before
    dispatching it.

    \b
    Example:
        ctxward dispatch check prompt.md --json
    """


@dispatch.command("check")
@click.argument("prompt_file", default="-", metavar="[PROMPT_FILE|-]")
@agent_type_option
@click.option(
    "--force",
    is_flag=True,
    help="Let a hard-reject through (warning FORCED_OVER_THRESHOLD); never the emergency tier.",
)
@json_option
@click.pass_context
def dispatch_check(
    ctx: click.Context,
    prompt_file: str,
    agent_type: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Measure PROMPT_FILE (or stdin) in UTF-8 bytes and apply the dispatch guard's size
    table.

    Exit 0 when the dispatch may go (ok, soft-warn, near-limit, or a forced hard-reject),
    3 when it is rejected (PROMPT_TOO_LARGE, PROMPT_EMERGENCY), 2 when the input is refused:
    not UTF-8, not a regular file (a FIFO or a device; pipe it on stdin instead), or larger
    than 32 MiB (far past every tier).

    \b
    Example:
        ctxward dispatch check prompt.md
        ctxward dispatch check - --agent-type Explore --json < prompt.md
    """
    from ctxward.commands.scrub import read_source
    from ctxward.guard.decide import decide

    data = read_source(prompt_file).encode("utf-8")  # valid UTF-8: its own bytes again
    size = len(data)
    capacity, _ = _capacity(ctx, agent_type)
    decision = decide(size, capacity, force=force)
    recorded = None
    if decision.forced and decision.forced_at:
        recorded = _record_forced(ctx, decision, agent_type, data)
    if as_json:
        echo_json({**decision.envelope(), **({"recordedIn": recorded} if recorded else {})})
    else:
        text = render("guard/dispatch_check.txt.j2", d=decision, force=force, recorded=recorded)
        click.echo(text, nl=False)
    if not decision.allowed:
        raise click.exceptions.Exit(EXIT_REJECTED)


def _record_forced(
    ctx: click.Context, decision: Decision, agent_type: str | None, data: bytes
) -> str | None:
    """`forcedAt` into the bank log (02-progress-log.md): where (None: it could not be, said
    in one warning line on stderr; the dispatch is let through all the same)."""
    import hashlib

    from ctxward.bank.forced import record
    from ctxward.errors import CtxwardError

    project = project_of(ctx, anywhere=True)
    try:
        path = record(
            project,
            forced_at=decision.forced_at or "",
            size=decision.size,
            tier=decision.tier.name,
            capacity=decision.capacity,
            agent_type=agent_type,
            sha256=hashlib.sha256(data).hexdigest(),
        )
    except (OSError, CtxwardError) as exc:  # the dispatch was let through all the same
        click.echo(f"ctxward: warning: forcedAt not recorded in the bank log: {exc}", err=True)
        return None
    return project.relative(path)


@click.command()
@click.option("--markdown", is_flag=True, help="Print the Markdown table (the README's).")
@json_option
@agent_type_option
@click.pass_context
def thresholds(ctx: click.Context, markdown: bool, as_json: bool, agent_type: str | None) -> None:
    """Print the dispatch guard's size table at the capacity in force.

    The percentages are the contract; .ctxward/config.yaml may only lower the capacity
    (dispatch.capacity_bytes, dispatch.capacity_by_agent). The README's table is this
    command's --markdown output in a project without a config.

    \b
    Example:
        ctxward thresholds --markdown
    """
    from ctxward.guard import thresholds as table

    if markdown and as_json:
        raise click.UsageError("--markdown and --json: pick one")
    capacity, source = _capacity(ctx, agent_type)
    rows = table.table(capacity)
    if as_json:
        echo_json({"capacityBytes": capacity, "agentType": agent_type, "tiers": rows})
        return
    name = "guard/thresholds.md.j2" if markdown else "guard/thresholds.txt.j2"
    click.echo(
        render(name, rows=rows, capacity=capacity, source=source, agent_type=agent_type),
        nl=False,
    )


COMMANDS = (dispatch, thresholds)
