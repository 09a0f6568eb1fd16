"""PreToolUse: the G9 dispatch guard on the sub-agent tool (Claude Code `Agent`, legacy `Task`),
and the previous phase's context brought to the sub-agent (`bank.inject`, seed 000 §8/§15).

Every other tool leaves at once with no answer, having imported nothing beyond the standard
library (`hookio` already answers them before this module is imported).

For a dispatch, by tier (`thresholds`): ok → no answer; soft-warn / near-limit → allow, with a
`systemMessage` for the user and `additionalContext` for the model; hard-reject / emergency →
C9 offload first (config `dispatch.offload`), then allow with `updatedInput` if that brought the
input under the hard-reject line, else `permissionDecision: "deny"` with a reason the model reads.

A dispatch the guard allows is given the memory bank's context of the phase promoted last, when
there is a trusted one and `bank.inject_context` is on: `updatedInput` with the block before the
prompt, measured again by the guard (a pointer instead when the block would raise the tier; the
prompt as it was when even that would). Host-agnostic: `tool_input` as the host sent it, with
only `prompt` changed. A failure while building it costs the sub-agent the context, never the
dispatch, and never turns a deny into an allow: the guard decides on the prompt as sent first.

This is the one handler that FAILS CLOSED. There is no override at this layer: no flag, no
environment variable, no config key. An input that cannot be measured is denied; an error
while handling a dispatch is turned into a deny by `hookio.run`.
"""

from __future__ import annotations

import os

from ctxward.guard import thresholds
from ctxward.hosts.claude_code import is_dispatch_tool

# `typing.TYPE_CHECKING` without importing typing: `needs_no_answer` is on the hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ctxward.core.project import Project
    from ctxward.guard.decide import Block, Decision, Measurement
    from ctxward.hooktypes import HookEvent, Outcome

# How many moved blocks a message lists by path (the host cuts hook strings at 10,000 chars).
LISTED_BLOCKS = 12
# Where a config that could lower the capacity lives: project.STATE_DIRNAME, config.CONFIG_FILE.
_CONFIG = os.path.join(".ctxward", "config.yaml")
# A memory bank whose context a dispatch may be given (bank.inject): its active context file.
_BANK = os.path.join(".ctxward", "memory-bank", "01-active-context.md")


def handle(event: HookEvent) -> Outcome:
    from ctxward.hooktypes import NOTHING

    tool = event.data.get("tool_name")
    if not is_dispatch_tool(tool):
        return NOTHING
    return guard_dispatch(event.project, str(tool), event.data.get("tool_input"))


def needs_no_answer(data: Mapping[str, Any], env: Mapping[str, str], payload_bytes: int) -> bool:
    """Whether this PreToolUse payload surely gets no answer, decided with the stdlib only.

    The hot path (`hookio` calls it before building the event): any tool but the sub-agent
    tool, or a measurable sub-agent call that is in tier ok at the default capacity when no
    config file could lower that capacity and no memory bank could give it context. The whole
    payload's length bounds the measured size from above (a JSON string never decodes to more
    UTF-8 bytes than it was written with), so "ok" here is "ok" in `handle`; anything else goes
    the full way.
    """
    if not is_dispatch_tool(data.get("tool_name")):
        return True
    ok_below = thresholds.SOFT_WARN.threshold(thresholds.DEFAULT_CAPACITY_BYTES)
    if payload_bytes >= ok_below or thresholds.input_problem(data.get("tool_input")):
        return False
    cwd = data.get("cwd")
    return not _config_may_apply(env, cwd if isinstance(cwd, str) and cwd else None)


def _config_may_apply(env: Mapping[str, str], cwd: str | None) -> bool:
    """Whether a .ctxward/config.yaml (or a memory bank's active context) exists where
    `project.find_root` could look for it.

    A superset of find_root's answer: $CLAUDE_PROJECT_DIR, and every folder from the start of
    the walk up to the filesystem root.
    """
    explicit = env.get("CLAUDE_PROJECT_DIR")
    if explicit and any(os.path.exists(os.path.join(explicit, p)) for p in (_CONFIG, _BANK)):
        return True
    try:
        folder = os.path.realpath(cwd if cwd else os.getcwd())
    except (OSError, ValueError):  # a NUL byte in cwd, a deleted working folder: cannot tell
        return True  # so the full path decides (and denies what it cannot handle)
    while True:
        if os.path.exists(os.path.join(folder, _CONFIG)) or os.path.exists(
            os.path.join(folder, _BANK)
        ):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def guard_dispatch(project: Project, tool: str, tool_input: object) -> Outcome:
    """The hook layer's answer for one sub-agent call (host-neutral: tool_input as sent)."""
    from ctxward.guard import decide as guard

    try:
        measured = guard.measure(tool_input)
    except guard.Unmeasurable as exc:
        return _deny(_render("guard/unmeasurable.md.j2", tool=tool, problem=str(exc)), None)
    capacity_bytes, capacity_by_agent, offload = dispatch_settings(project)
    capacity = guard.capacity_for(capacity_bytes, capacity_by_agent, measured.agent_type)
    decision = guard.decide(measured.size, capacity)
    if decision.allowed:
        given = _with_bank_context(project, tool, tool_input, measured, decision)
        return given if given is not None else _allowed(tool, decision)
    if not offload or not project.anchored:  # no project: no .ctxward/offload/ to move it to
        return _denied(tool, decision, measured)
    return _offload(project, tool, tool_input, measured, decision)


def dispatch_settings(project: Project) -> tuple[int, Mapping[str, int], bool]:
    """The project's `dispatch` config: (capacity_bytes, capacity_by_agent, offload).

    With no config file these are `config.DispatchConfig()`'s defaults, given here without
    importing `ctxward.core.config`: creating its dataclasses costs ~3 ms in a fresh interpreter
    (bench/hook_latency.py). test_events_pre_tool_use pins them to DispatchConfig's.
    """
    if not os.path.isfile(os.path.join(project.root, _CONFIG)):  # what `config.load` tests
        return thresholds.DEFAULT_CAPACITY_BYTES, {}, True
    from ctxward.core.config import load

    settings = load(project).dispatch
    return settings.capacity_bytes, settings.capacity_by_agent, settings.offload


def inject_enabled(project: Project) -> bool:
    """`bank.inject_context` (on without a config file: no import of ctxward.core.config then)."""
    if not os.path.isfile(os.path.join(project.root, _CONFIG)):
        return True
    from ctxward.core.config import load

    return load(project).bank.inject_context


def _with_bank_context(
    project: Project, tool: str, tool_input: Any, measured: Measurement, decision: Decision
) -> Outcome | None:
    """The allowed dispatch with the bank's context before its prompt (None: not given).

    Only a tool input whose `prompt` is the sub-agent's text (Claude Code `Agent`/`Task`,
    OpenCode `task`) is changed; any other shape is left as the host sent it.
    """
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("prompt"), str):
        return None
    if not project.anchored or not project.bank_dir.is_dir() or not inject_enabled(project):
        return None
    from ctxward.bank import inject
    from ctxward.guard import decide as guard
    from ctxward.hooktypes import Outcome

    try:
        context = inject.for_dispatch(project)
    except Exception:  # noqa: BLE001 - the context is a gift: its failure never costs the call
        return None
    if context is None or inject.already_given(measured.prompt, context.phase):
        return None
    for form, text in (("block", context.block), ("pointer", context.pointer)):
        updated = {**tool_input, "prompt": inject.splice(measured.prompt, text)}
        after = guard.decide(guard.measure(updated).size, decision.capacity)
        if not after.allowed or after.tier.percent > decision.tier.percent:
            continue  # it would raise the tier: the pointer next, else nothing
        facts = {"form": form, "c": context, "d": after, "added": after.size - decision.size}
        warn = _render("guard/warn_context.md.j2", tool=tool, d=after) if after.tier.percent else ""
        note = _render("bank/dispatch_note.md.j2", tool=tool, **facts)
        return Outcome(
            updated_input=updated,
            context="\n\n".join(part for part in (note, warn) if part),
            notice=_render("guard/warn_notice.txt.j2", d=after) if after.tier.percent else None,
        )
    return None


def _allowed(tool: str, decision: Decision) -> Outcome:
    from ctxward.hooktypes import NOTHING, Outcome

    if decision.tier.percent == 0:
        return NOTHING
    return Outcome(
        context=_render("guard/warn_context.md.j2", tool=tool, d=decision),
        notice=_render("guard/warn_notice.txt.j2", d=decision),
    )


def _denied(
    tool: str,
    decision: Decision,
    measured: Measurement,
    *,
    offload_tried: bool = False,
    **offload: Any,
) -> Outcome:
    """The deny, with what offloading moved and kept (`offload`: the template's own names)."""
    offload.setdefault("moved", [])
    reason = _render(
        "guard/deny_reason.md.j2",
        tool=tool,
        d=decision,
        m=measured,
        offload_tried=offload_tried,
        listed=LISTED_BLOCKS,
        **offload,
    )
    return _deny(reason, _render("guard/deny_notice.txt.j2", d=decision, moved=offload["moved"]))


def _deny(reason: str, notice: str | None) -> Outcome:
    from ctxward.hooktypes import Outcome

    return Outcome(decision="deny", reason=reason, notice=notice)


def _offload(
    project: Project,
    tool: str,
    tool_input: Any,
    measured: Measurement,
    decision: Decision,
) -> Outcome:
    """C9: move every block larger than 2 KB to a file, then decide again on what is left."""
    from ctxward.guard import decide as guard
    from ctxward.hooktypes import Outcome

    plan = guard.plan_offload(measured.prompt)
    if not plan.movable:
        return _denied(tool, decision, measured, offload_tried=True, kept_count=len(plan.kept))
    moved = [_store(project, block) for block in plan.movable]
    prompt = guard.splice(
        measured.prompt,
        [(block, item["pointer"]) for block, item in zip(plan.movable, moved, strict=True)],
    )
    updated = {**tool_input, "prompt": prompt}
    after = guard.decide(guard.measure(updated).size, decision.capacity)
    facts = {
        "moved": moved,
        "moved_bytes": plan.movable_bytes,
        "after": after,
        "offload_dir": project.relative(project.offload_dir) + "/",
    }
    if not after.allowed:
        return _denied(
            tool,
            decision,
            measured,
            offload_tried=True,
            kept_count=len(plan.kept),
            kept_bytes=plan.kept_bytes,
            **facts,
        )
    return Outcome(
        decision="allow",
        updated_input=updated,
        context=_render(
            "guard/offload_context.md.j2",
            tool=tool,
            before=decision,
            listed=LISTED_BLOCKS,
            **facts,
        ),
        notice=_render("guard/offload_notice.txt.j2", before=decision, **facts),
    )


def _store(project: Project, block: Block) -> dict[str, Any]:
    """Write one block to .ctxward/offload/ and return its pointer and facts.

    `offload` scrubs what it stores (DESIGN: scrub first), and the facts (size, sha256, first
    line) are those of the stored text: a block the scrubber changed is stored scrubbed, so the
    files reassemble the scrubbed prompt, not the original (the secret itself is what must not
    reach the disk). The text is scrubbed once, there (a 240 KB prompt: ~2.5 ms a pass).
    """
    from ctxward.core.offload import offload
    from ctxward.guard import decide as guard

    stored = offload(project, block.text, ext=block.ext)
    facts = {
        "kind": block.kind,
        "size": stored.size,
        "sha256": stored.sha256,
        "path": str(stored.path),
        "first_line": guard.headline(stored.text, block.kind),
    }
    return {**facts, "pointer": _render("guard/offload_pointer.txt.j2", **facts)}


def _render(name: str, **context: Any) -> str:
    from ctxward.core.render import render

    return render(name, **context).rstrip()
