"""Stop: refuse to end the turn while a debate's verdict is not filed (seed 002, wiki filing).

`{"decision": "block", "reason": ...}`: Claude Code keeps the model going with the reason as
its next instruction. Bounded as `ctxward.debate.unfiled` says (debates opened here only, never
under `stop_hook_active`, a few blocks per debate in all); quiet on our own failure: anything
that goes wrong here is logged to .ctxward/log/ and the turn ends as usual.
"""

from __future__ import annotations

from ctxward.hooktypes import NOTHING, HookEvent, Outcome


def handle(event: HookEvent) -> Outcome:
    reason = unfiled_reason(event, "stop-debate")
    return Outcome(decision="block", reason=reason) if reason else NOTHING


def unfiled_reason(event: HookEvent, label: str) -> str:
    """The block's reason when a debate's verdict waits to be filed, else '' (also on failure)."""
    if event.data.get("stop_hook_active") is True or not event.project.anchored:
        return ""
    try:
        from ctxward.debate.unfiled import count_block, holding

        held = holding(event.project)
        if not held:
            return ""
        from ctxward.core.config import load
        from ctxward.core.render import render

        reason = render(
            "debate/stop_unfiled.txt.j2",
            debates=held,
            wiki_dir=load(event.project).debate.wiki_dir,
        ).strip()
        for debate in held:
            count_block(event.project, debate)
        return reason
    except Exception:  # noqa: BLE001 - our failure never holds the user's turn
        from ctxward.core.log import log_failure

        log_failure(event.project, label)
        return ""
