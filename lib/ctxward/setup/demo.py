"""`ctxward demo`: the main job, end to end, in a throwaway project.

It activates two shipped skills, then feeds the hooks the payloads Claude Code 2.1.332 sends on an
automatic compaction (PreCompact -> SessionStart(compact) -> PostCompact), through the same code
path as the installed hook, and records what each step wrote and what the model would receive.
(After a manual /compact the CLI also shows the model PreCompact's own text, so SessionStart
then states only what that text lacks: docs/compaction.md.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ctxward.core.fsutil import atomic_write
from ctxward.core.paths import data_dir
from ctxward.core.project import Project
from ctxward.hookio import run_in_memory
from ctxward.invariants.activate import activate
from ctxward.invariants.read import load_plans

SESSION_ID = "7de73c29-a9cd-4608-aa26-55358a7f7df9"
SKILLS = ("deep-plan", "deep-review")
SLUG = "demo"


@dataclass
class Step:
    title: str
    note: str
    blocks: list[tuple[str, str]] = field(default_factory=list)  # (caption, text)


def _payload(root: Path, event: str, **extra: object) -> bytes:
    base = {
        "session_id": SESSION_ID,
        "transcript_path": f"/home/dev/.claude/projects/-demo/{SESSION_ID}.jsonl",
        "cwd": str(root),
        "prompt_id": "babaa76c-61b5-4abc-9598-70ea821317f1",
        "hook_event_name": event,
    }
    return json.dumps({**base, **extra}).encode("utf-8")


def _summary(rules_kept: list[str]) -> str:
    kept = "\n".join(f"- {rule}" for rule in rules_kept)
    return (
        "<analysis>The user planned and reviewed a change.</analysis>\n"
        "<summary>The user is reviewing the parser change. Active invariants:\n"
        f"{kept}\n</summary>"
    )


def _elide(stdout: str, context: str) -> str:
    """The hook's JSON with the long additionalContext replaced by a pointer to it."""
    placeholder = f"<the {len(context)} characters below>"
    return stdout.replace(json.dumps(context, ensure_ascii=False)[1:-1], placeholder)


def run_demo(root: Path, now: datetime | None = None) -> list[Step]:
    """Run the whole demo in `root` (an empty folder); return the steps for display."""
    project = Project(root.resolve())
    env = {"CLAUDE_PROJECT_DIR": str(project.root)}
    now = now or datetime.now(timezone.utc)
    steps = []

    for skill in SKILLS:  # as a user would have them: the shipped packs in .claude/skills/
        installed = project.root / ".claude" / "skills" / skill / "SKILL.md"
        atomic_write(installed, (data_dir("invariants") / skill / "SKILL.md").read_bytes())
        activate(project, skill, SLUG, now=now)
    invariants_md = project.plans_dir / SLUG / "invariants.md"
    steps.append(
        Step(
            "; ".join(f"ctxward activate {skill} --slug {SLUG}" for skill in SKILLS),
            "Each skill's frontmatter rules are written, verbatim, to the plan (additive).",
            [(project.relative(invariants_md), invariants_md.read_text(encoding="utf-8"))],
        )
    )

    code, out, err = run_in_memory(
        _payload(project.root, "PreCompact", trigger="auto", custom_instructions=None), env
    )
    plan = load_plans(project)[0]
    steps.append(
        Step(
            f"PreCompact (trigger auto) -> exit {code}",
            "Distils the payload file; stdout is appended to the compaction prompt as "
            "'Additional Instructions'.",
            [
                (
                    project.relative(plan.payload_path),
                    plan.payload_path.read_text(encoding="utf-8"),
                ),
                ("stdout -> the summarizer", out + err),
            ],
        )
    )

    code, out, err = run_in_memory(
        _payload(project.root, "SessionStart", source="compact", model="claude-opus-5-5"), env
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else err
    steps.append(
        Step(
            f"SessionStart (source compact) -> exit {code}",
            f"additionalContext ({len(context)} characters, cap 10,000) arrives as a system "
            "message right after the summary: this is what the model reads.",
            [("stdout (JSON)", _elide(out, context)), ("what the model receives", context)],
        )
    )

    rules = [rule for section in plan.sections for rule in section.rules]
    kept = rules[: len(rules) - 2]  # the mock summarizer drops the last two rules
    code, out, err = run_in_memory(
        _payload(project.root, "PostCompact", trigger="auto", compact_summary=_summary(kept)),
        env,
    )
    reports = sorted(project.compactions_dir.glob("*.json"))
    report_text = reports[-1].read_text(encoding="utf-8") if reports else err
    steps.append(
        Step(
            f"PostCompact (trigger auto) -> exit {code}, stdout {out!r}",
            "Checks every rule against the summary the model keeps; the summarizer here dropped "
            "two rules, and the report says which.",
            [(project.relative(reports[-1]) if reports else "error", report_text)],
        )
    )
    return steps
