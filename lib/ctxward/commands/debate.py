"""`ctxward debate open | round | close | list`: consensus debates (seed 002), JSON in, files out.

Thin: read the JSON (a file or stdin), call `ctxward.debate.store`, echo a template or JSON.
"""

from __future__ import annotations

import json
from typing import Any

import click

from ctxward.commands import Group, echo_json, json_option, project_of
from ctxward.commands.scrub import read_source
from ctxward.commands.subagents import json_errors
from ctxward.core.render import render
from ctxward.errors import BadInput

MAX_INPUT_BYTES = 1024 * 1024  # one opening or one round: a few KB

source_argument = click.argument("source", default="-", metavar="[FILE|-]")


def _read_json(source: str) -> Any:
    text = read_source(source, limit=MAX_INPUT_BYTES)
    where = "stdin" if source == "-" else source
    try:
        return json.loads(text)
    except ValueError as exc:
        raise BadInput(f"{where}: not JSON ({exc})") from None


def _page(ctx: click.Context, debate: dict[str, Any]) -> str:
    from ctxward.debate.store import wiki_page

    project = project_of(ctx)
    return project.relative(wiki_page(project, debate))


@click.group(cls=Group)
def debate() -> None:
    """Consensus debates: open one, record its rounds, close it to file the verdict.

    Verdicts are computed, not chosen: TIMEOUT, BUDGET_EXHAUSTED, CONSENSUS_REACHED (no further
    objections, or a position that survived new counters unchanged), DEADLOCK (neither side
    moved). Every verdict is filed to docs/wiki/consensus/<layer>-<slug>.md (`debate.wiki_dir`
    in .ctxward/config.yaml) by `close`; until then the Stop hook holds the turn.

    \b
    Example:
        echo '{"topic": "retry policy", "layer": "spec",
               "participants": [{"name": "critic", "role": "attacker"},
                                {"name": "proposer", "role": "defender"}]}' \\
            | ctxward debate open
        ctxward debate round spec-retry-policy round1.json
        ctxward debate close spec-retry-policy
    """


@debate.command("open")
@source_argument
@json_option
@click.pass_context
@json_errors
def debate_open(ctx: click.Context, source: str, as_json: bool) -> None:
    """Open a DebateSession from FILE (or stdin): {topic, layer, participants, budget?, slug?}.

    layer names the harness layer (spec, plan, verify: built-in budgets of 3/3/4 rounds and
    2K/3K/2K tokens per turn; any other name: 3 rounds, 2K). budget may set maxRounds,
    maxTokensPerRound, maxWallClockMs (default 120000) and convergenceRounds (default 1). The
    debate's id is <layer>-<slug>; slug defaults to the topic's words. Exit 2 when the debate,
    or its verdict page, exists already.

    \b
    Example:
        ctxward debate open opening.json --json
    """
    from ctxward.debate.store import open_debate, record_path

    project = project_of(ctx)
    opened = open_debate(project, _read_json(source))
    if as_json:
        echo_json(opened)
        return
    record = project.relative(record_path(project, opened["id"]))
    text = render("debate/opened.txt.j2", debate=opened, record=record, page=_page(ctx, opened))
    click.echo(text, nl=False)


@debate.command("round")
@click.argument("debate_id", metavar="ID")
@source_argument
@json_option
@click.pass_context
@json_errors
def debate_round(ctx: click.Context, debate_id: str, source: str, as_json: bool) -> None:
    """Record one round {attacker: Turn, defender: Turn | null} and compute the verdict.

    Turn: {agent, position, counter_to, evidence_refs, confidence_change (-1, 0, +1),
    tokens?}. An attacker turn with confidence_change 0 and an empty counter_to means "no
    further objections". Exit 2 once the debate has its verdict.

    \b
    Example:
        echo '{"attacker": {"agent": "critic", "position": "No further objections.",
               "counter_to": "", "confidence_change": 0}, "defender": null}' \\
            | ctxward debate round spec-retry-policy
    """
    from ctxward.debate.store import add_round

    updated = add_round(project_of(ctx), debate_id, _read_json(source))
    if as_json:
        echo_json(updated)
        return
    click.echo(render("debate/round.txt.j2", debate=updated, page=_page(ctx, updated)), nl=False)


@debate.command("close")
@click.argument("debate_id", metavar="ID")
@json_option
@click.pass_context
@json_errors
def debate_close(ctx: click.Context, debate_id: str, as_json: bool) -> None:
    """File ID's verdict to the wiki (giving it one first if it has none: TIMEOUT past the
    wall clock, else BUDGET_EXHAUSTED). Closing a filed debate again re-files a page that is
    gone.

    \b
    Example:
        ctxward debate close spec-retry-policy --json
    """
    from ctxward.debate.store import close_debate

    closed = close_debate(project_of(ctx), debate_id)
    if as_json:
        echo_json(closed)
        return
    click.echo(render("debate/closed.txt.j2", debate=closed), nl=False)


@debate.command("list")
@json_option
@click.pass_context
def debate_list(ctx: click.Context, as_json: bool) -> None:
    """List the project's debates: verdict, rounds, and whether the verdict is filed.

    \b
    Example:
        ctxward debate list --json
    """
    from ctxward.debate.store import list_debates

    found = list_debates(project_of(ctx, anywhere=True))
    if as_json:
        echo_json(
            [
                {
                    "id": item["id"],
                    "verdict": item["verdict"]["verdict"] if item["verdict"] else None,
                    "rounds": len(item["rounds"]),
                    "filed": item["filed"]["path"] if item["filed"] else None,
                }
                for item in found
            ]
        )
        return
    click.echo(render("debate/list.txt.j2", debates=found), nl=False)
