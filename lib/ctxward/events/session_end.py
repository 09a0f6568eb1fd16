"""SessionEnd: write the session's seed 001 summary when the session ends.

Seed 001: "compress at session end". Wired by default (settings.example.json, hooks/hooks.json,
`ctxward install`) with a 30 s timeout: Claude Code gives SessionEnd hooks 1.5 s in all unless
the wiring raises it. PreCompact writes the same file before every compaction. Nothing reaches
the model or the user from here; a failure is one line on stderr and exit 1, and the session
ends regardless.
"""

from __future__ import annotations

from ctxward.hooktypes import NOTHING, HookEvent, Outcome


def handle(event: HookEvent) -> Outcome:
    from ctxward.sessions.store import write_from_hook

    write_from_hook(event.project, event.session_id, event.text("transcript_path"))
    return NOTHING
