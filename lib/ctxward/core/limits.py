"""Bounds: each hook's time budget, the sizes the hooks read from a repository, and parsed input.

Time. The host waits a set time for each hook (HOST_TIMEOUT_SECONDS: what settings.example.json
and hooks/hooks.json wire, pinned by tests/core/test_limits.py); past it, it goes on as if the hook
had not run, so a dispatch guard that times out lets the dispatch through. Each hook therefore
has a budget of half its host timeout (BUDGET_SECONDS, the one table), enforced by the
watchdog in `hookio.run`: when it runs out, the dispatch guard denies the call and every other
hook gives up quietly (the compaction hooks have written their rules by then). The other half
is for what happens outside `run`: the interpreter's start, reading the payload, a loaded
machine.

Size. What a hook reads from the repository may have been committed by anyone, at any size:
`.ctxward/config.yaml` (MAX_CONFIG_BYTES) and each plan (MAX_PLAN_BYTES, MAX_PLAN_RULES) are
refused past these, in one line. What the compaction hooks read of what the session wrote is
cut: the compaction summary PostCompact checks the rules against (MAX_CHECKED_SUMMARY_CHARS),
the transcript PreCompact summarizes (MAX_SCANNED_MESSAGE_CHARS of each message,
MAX_SCANNED_TRANSCRIPT_CHARS in all).

Parsed input (JSON, YAML): nesting depth, alias expansion, valid Unicode.

Parsing succeeds on inputs that later break a reader: JSON nested a few hundred levels deep
passes `json.loads` and then exhausts the recursion of the functions that walk it (measuring,
scrubbing, hashing); a YAML "billion laughs" document is a few hundred bytes whose aliases expand
to billions of values when walked; `"\\ud800"` is valid JSON but no UTF-8 text can hold it, so
every writer fails on it. `problem` finds all three in one iterative walk (no recursion), bounded
by `max_nodes` (so a bomb is refused after that many visits, not expanded).

Standard library only: the hook path imports it when a payload looks nested or escaped.
"""

from __future__ import annotations

MAX_DEPTH = 100  # host payloads and ctxward's own inputs nest a few levels

# Seconds the host waits for each hook (settings.example.json, hooks/hooks.json; SessionEnd's
# is wired explicitly, since Claude Code gives it 1.5 s unless a timeout raises it).
HOST_TIMEOUT_SECONDS = {
    "PreCompact": 30,
    "SessionStart": 30,
    "PostCompact": 30,
    "SubagentStop": 30,
    "Stop": 10,
    "SessionEnd": 30,
    "PreToolUse": 10,
    "UserPromptSubmit": 10,
    "PostToolUse": 10,
    "PostToolUseFailure": 10,
}
BUDGET_SECONDS = {event: seconds / 2 for event, seconds in HOST_TIMEOUT_SECONDS.items()}

MAX_CONFIG_BYTES = 64 * 1024  # a config is a few lines; YAML costs ~0.25 s per 64 KB to load
MAX_PLAN_BYTES = 256 * 1024  # a plan holds a few skills' rules: ~2-20 KB
MAX_PLAN_RULES = 2_000  # the injected text holds ~100 rules; each one costs every compaction
MAX_CHECKED_SUMMARY_CHARS = 256 * 1024  # PostCompact's search for the rules (real: ~10-80 KB)
MAX_SCANNED_MESSAGE_CHARS = 64 * 1024  # what a session summary reads of one message
MAX_SCANNED_TRANSCRIPT_CHARS = 4 * 1024 * 1024  # ... and of a whole transcript


def problem(
    value: object, *, max_nodes: int | None = None, max_depth: int = MAX_DEPTH
) -> str | None:
    """Why parsed `value` is refused, or None: too deep, expands past `max_nodes` values (YAML
    aliases: each visit of a shared value counts), or holds a lone UTF-16 surrogate."""
    stack: list[tuple[object, int]] = [(value, 1)]
    visited = 0
    while stack:
        item, depth = stack.pop()
        visited += 1
        if max_nodes is not None and visited > max_nodes:
            return f"expands to more than {max_nodes:,} values (YAML aliases?)"
        if depth > max_depth:
            return f"nests deeper than {max_depth} levels"
        if isinstance(item, str):
            if not _encodable(item):
                return "holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not text"
        elif isinstance(item, dict):
            for key, inner in item.items():
                stack.append((key, depth + 1))
                stack.append((inner, depth + 1))
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((inner, depth + 1) for inner in item)
    return None


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
