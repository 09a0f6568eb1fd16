"""What `ctxward doctor` reports: a check, a diagnosis, a wired hook; which tool a matcher takes."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxward.core.values import Value
from ctxward.hosts.claude_version import ClaudeVersion
from ctxward.hosts.wiring import HookCommand
from ctxward.setup import install

OK, WARN, FAIL, INFO = "ok", "warn", "fail", "info"


SLOW_SECONDS = 2.0  # a hook answer slower than this is a warning (PreToolUse runs per dispatch)


SHOWN_CHARS = 120  # a command that is not ctxward's is shown cut to this many characters


SCRUBBED_CHARS = 4_000  # ... after scrubbing this much of it (a secret in it is not shown)


DOCTOR_PACK = "compaction-resilience"


DOCTOR_SLUG = "doctor"


# What each event's matcher must let through for ctxward's handler to do its job (Codex's
# sub-agent tools: hosts/codex.py DISPATCH_TOOLS).
CODEX_MATCHER_NEEDS = {"PreToolUse": ("spawn_agent", "multi_agent_v1send_input")}


MATCHER_NEEDS = {
    "PreToolUse": ("Agent", "Task"),
    "SessionStart": ("compact", "resume"),
    "PreCompact": ("manual", "auto"),
    "PostCompact": ("manual", "auto"),
    "BeforeTool": ("invoke_agent",),  # Gemini CLI's sub-agent tool: the dispatch guard
}


_EXACT_MATCHER = re.compile(r"[A-Za-z0-9_\- ,|]+")


class Check(Value):
    """One finding: `status` ok | warn | fail | info; `fix` says what to run when not ok."""

    id: str
    status: str
    title: str
    detail: str = ""
    fix: str = ""

    def as_dict(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "status": self.status,
            "title": self.title,
            "detail": self.detail or None,
            "fix": self.fix or None,
        }


@dataclass(slots=True)
class Diagnosis:
    project: str
    version: ClaudeVersion
    checks: list[Check] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(check.status == FAIL for check in self.checks)

    def counts(self) -> dict[str, int]:
        return {status: sum(c.status == status for c in self.checks) for status in (OK, WARN, FAIL)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "project": self.project,
            "claudeVersion": {
                "version": self.version.text,
                "source": self.version.source,
                "detail": self.version.detail or None,
            },
            "checks": [check.as_dict() for check in self.checks],
            "counts": self.counts(),
            "thresholds": self.thresholds,
        }


class WiredHook(Value):
    """One ctxward handler found in a host file."""

    host: str
    event: str
    handler: Mapping[str, Any]
    where: str  # the file's label
    command: HookCommand | None  # None: not a command install writes
    argv: tuple[str, ...] | None = None  # how doctor runs it; None: not run

    @property
    def timeout(self) -> float:
        value = self.handler.get("timeout")
        if self.host == install.GEMINI:  # Gemini CLI's timeouts are in milliseconds
            value = value / 1000 if isinstance(value, (int, float)) else None
        return float(value) if isinstance(value, (int, float)) and value > 0 else 60.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.host, self.event, json.dumps(self.handler, sort_keys=True))


def matcher_matches(matcher: object, value: str) -> bool:
    """Claude Code's matcher rule: empty or `*` matches all; a plain list is exact; else regex."""
    if matcher in (None, "", "*"):
        return True
    if not isinstance(matcher, str):
        return False
    if _EXACT_MATCHER.fullmatch(matcher):
        return value in {part.strip() for part in re.split(r"[|,]", matcher)}
    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False
