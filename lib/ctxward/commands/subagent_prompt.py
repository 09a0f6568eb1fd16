"""`ctxward subagent-prompt`: the G8.6 sub-agent protocol and the G9 self-check block (seed
004), for a dispatcher to put at the top of a sub-agent's prompt. Templates:
`subagents/prompt_protocol.md.j2`, `subagents/prompt_self_check.md.j2`."""

from __future__ import annotations

import click

from ctxward.commands import echo_json, json_option, project_of


@click.command("subagent-prompt")
@click.option("--role", required=True, help="The sub-agent's role (rd, qa-perf, ...).")
@click.option("--batch", required=True, help="Its batch: the shared channel it reads and writes.")
@click.option("--rid", help="The request id of its artifact (default: the batch).")
@click.option("--idx", type=int, default=1, show_default=True, help="Its artifact's index.")
@click.option("--ext", default="md", show_default=True, help="Its artifact's extension.")
@click.option(
    "--session",
    metavar="SID",
    help="Pin the session id in every command (default: the sub-agent's own "
    "$CLAUDE_CODE_SESSION_ID, else 'local').",
)
@click.option(
    "--agent-type",
    metavar="TYPE",
    help="The sub-agent type, for its dispatch.capacity_by_agent entry in the self-check block.",
)
@click.option("--no-self-check", is_flag=True, help="Print the sub-agent protocol only.")
@json_option
@click.pass_context
def subagent_prompt(
    ctx: click.Context,
    role: str,
    batch: str,
    rid: str | None,
    idx: int,
    ext: str,
    session: str | None,
    agent_type: str | None,
    no_self_check: bool,
    as_json: bool,
) -> None:
    """Print the sub-agent protocol (peek at the shared channel, share blockers, share
    completion before the final heartbeat) and the dispatch self-check block for ROLE in BATCH.

    The self-check's byte thresholds are the dispatch guard's size table (`ctxward thresholds`)
    at the capacity in force (.ctxward/config.yaml `dispatch:`).

    \b
    Example:
        ctxward subagent-prompt --role rd --batch 003
        ctxward subagent-prompt --role qa-perf --batch 003 --agent-type Explore --json
    """
    from ctxward.core.config import load
    from ctxward.core.render import render
    from ctxward.guard.decide import capacity_for
    from ctxward.guard.thresholds import HARD_REJECT, TIERS
    from ctxward.subagents.artifacts import check_name
    from ctxward.subagents.reports import MAX_BYTES, MAX_LINES

    project = project_of(ctx, anywhere=True)
    for value, where in ((role, "role"), (batch, "batch"), (rid or batch, "rid"), (ext, "ext")):
        check_name(value, where)
    if session is not None:
        check_name(session, "session")
    settings = load(project).dispatch
    capacity = capacity_for(settings.capacity_bytes, settings.capacity_by_agent, agent_type)
    cli = "ctxward"
    session_flag = f" --session {session}" if session else ""
    artifact = (
        f"{cli} artifact path --rid {rid or batch} --role {role} --idx {idx} --ext {ext}"
        f"{session_flag}"
    )
    protocol = render(
        "subagents/prompt_protocol.md.j2",
        role=role,
        batch=batch,
        rid=rid or batch,
        idx=idx,
        artifact=artifact,
        cli=cli,
        session_flag=session_flag,
    ).strip()
    tiers = [
        {
            "name": tier.name,
            "percent": tier.percent,
            "threshold": tier.threshold(capacity),
            "code": tier.code,
            "warning": tier.warning,
            "summary": tier.summary,
        }
        for tier in TIERS
        if tier.percent
    ]
    self_check = (
        ""
        if no_self_check
        else render(
            "subagents/prompt_self_check.md.j2",
            cli=cli,
            capacity=capacity,
            agent_type=agent_type,
            agent_flag=f" --agent-type {agent_type}" if agent_type else "",
            tiers=tiers,
            hard=HARD_REJECT,
            max_lines=MAX_LINES,
            max_kb=MAX_BYTES // 1024,
        ).strip()
    )
    text = render("subagents/prompt.md.j2", protocol=protocol, self_check=self_check)
    if as_json:
        echo_json(
            {
                "role": role,
                "batch": batch,
                "capacityBytes": capacity,
                "protocol": protocol,
                "selfCheck": self_check or None,
                "prompt": text,
            }
        )
        return
    click.echo(text, nl=False)
