"""PostToolUse and PostToolUseFailure: the drift observer (seed 002; logic in drift.observe) and
the context checks (large tool outputs, context pressure: ctxward.drift.context).

Every tool call is observed: one line in `.ctxward/sessions/<session id>.tools.jsonl`, the
bounded window in `<session id>.drift.json`. When a stuck-pattern signature starts to hold, when
a tool's output is over 2 KB (the first time for that tool in the session), or when the context
reaches a pressure stage (once per stage and context segment), the answer carries one factual
sentence each as `additionalContext`, which Claude Code puts next to the tool result.

At the 90% and 99% pressure stages the session's seed 001 summary is also written to
`.ctxward/sessions/<session id>.yaml` after the answer (seed 001: compress "when the context
budget is critically low"), as PreCompact does before a compaction.

An MCP tool's output over `context.large_output.offload_chars` (default 8,000 characters) is
written to `.ctxward/offload/` (scrubbed, on disk first, named by its sha256) and the answer
replaces it with a preview and the path (`hookSpecificOutput.updatedMCPToolOutput`, which Claude
Code accepts for MCP tools only). When the file cannot be written the output is left as it was.

On the installed hook path `hookio` observes the call first, with the standard library only
(`observe.observed_quietly`), and runs this handler only when a report is waiting; the handler
recognises the call as already observed and just takes the reports. Run any other way (`ctxward
hook post-tool-use`, the OpenCode plugin) it observes the call itself. Fails open, like every
hook but the dispatch guard: a problem is one stderr line and exit 1, and the tool result is
untouched.
"""

from __future__ import annotations

from typing import Any

from ctxward.core.drift_settings import LARGE_OUTPUT, PRESSURE
from ctxward.drift import observe, signatures, tell
from ctxward.drift.context import OFFLOAD
from ctxward.hooktypes import NOTHING, HookEvent, Outcome

CRITICAL_STAGE = 90  # the first of seed 002's stages that leaves little room


def handle(event: HookEvent) -> Outcome:
    reports = observe.record(event.project.root, event.name, event.data)
    if not reports:
        return NOTHING
    facts = [r for r in reports if r.get("signature") != OFFLOAD]
    updated = None
    if len(facts) < len(reports) and event.name == signatures.POST_TOOL_USE:
        updated, stored = _offload(event)
        for report in facts:
            if report.get("signature") == LARGE_OUTPUT and stored is not None:
                report["evidence"] = {**report.get("evidence", {}), **stored}
    context = tell.facts(event.project, facts, event.data) if facts else None
    return Outcome(
        context=context or None, updated_mcp_output=updated, after=_summary_when_low(event, facts)
    )


def _summary_when_low(event: HookEvent, facts: list[Any]) -> Any:
    """Seed 001 "compress … when the context budget is critically low": at the 90% and 99%
    stages the session summary is written (once the fact is out), as PreCompact would."""
    stages = [r["evidence"]["stage"] for r in facts if r.get("signature") == PRESSURE]
    if not stages or max(stages) < CRITICAL_STAGE or event.name != signatures.POST_TOOL_USE:
        return None
    transcript = event.text("transcript_path")

    def after() -> None:
        from ctxward.sessions.store import write_from_hook

        write_from_hook(event.project, event.session_id, transcript)

    return after


def _offload(event: HookEvent) -> tuple[Any, dict[str, Any] | None]:
    """The MCP output stored in .ctxward/offload/ and its preview, in the response's shape."""
    from ctxward.core.offload import offload
    from ctxward.core.render import render
    from ctxward.drift.context import output_text

    response = event.data.get("tool_response")
    text = output_text(response)
    stored = offload(event.project, text, ext="txt")
    settings = observe.limits_of(event.project.root).get("context") or {}
    shown = int(settings.get(LARGE_OUTPUT, {}).get("preview_chars", 1500))
    path = event.project.relative(stored.path)
    preview = render(
        "drift/offload_preview.md.j2",
        tool=str(event.data.get("tool_name") or ""),
        chars=len(text),
        path=path,
        sha256=stored.sha256,
        shown=min(shown, len(stored.text)),
        head=stored.text[:shown],
    ).rstrip("\n")
    return _shaped(response, preview), {"path": path, "sha256": stored.sha256}


def _shaped(response: object, text: str) -> object:
    """`text` in the shape of the MCP tool's response: its content blocks, or a string."""
    block = {"type": "text", "text": text}
    if isinstance(response, list):
        return [block]
    if isinstance(response, dict) and isinstance(response.get("content"), list):
        return {**response, "content": [block]}
    return text
