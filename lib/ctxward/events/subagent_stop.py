"""SubagentStop: fires for every sub-agent, and for the compaction agent (agent_type "").

The sub-agent context economy (metadata-only reports, G7) fills this in; until then it is a no-op.
"""

from __future__ import annotations

from ctxward.hookio import NOTHING, HookEvent, Outcome


def handle(event: HookEvent) -> Outcome:
    return NOTHING
