"""Which Claude Code version this machine runs, and which hook events that version knows.

A settings file naming an event the running Claude Code does not know disables every hook in
that file (seen with 2.0.77 and PostCompact), so `ctxward install claude` leaves out the events
a version is KNOWN to lack, and only those. The version comes from, in order:

1. `--claude-version` (source "override");
2. `claude --version`, of the `claude` on PATH (absolute folders only), else of the native
   installer's launcher (`~/.local/bin/claude`) or the old local install
   (`~/.claude/local/claude`) (source "detected");
3. what Claude Code records on disk (source "recorded"): the native installer's
   `~/.local/share/claude/versions/<X.Y.Z>` (the highest), the `version` of the newest session
   transcript under `~/.claude/projects/` (every record carries the version that wrote it), or
   `firstStartVersion` in `~/.claude.json` (the first version that ran here: a lower bound);
   `$CLAUDE_CONFIG_DIR` replaces `~/.claude` when set;
4. none of them (source "unknown"): the version is not guessed. Every event is wired, and
   `ctxward doctor` says that it could not check them.

Seen with Claude Code 2.1.332 in a scratch HOME: one `claude -p` writes `~/.claude.json` with
`"firstStartVersion": "2.1.332"` and a transcript whose records carry `"version": "2.1.332"`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from ctxward.core.values import Value
from ctxward.errors import BadInput

Version = tuple[int, int, int]

# The Claude Code version that introduced each hook event (CHANGELOG; reference
# claude-code-hooks.md §2). None: the event exists, its first version is not documented.
EVENT_SINCE: dict[str, Version | None] = {
    "PreToolUse": (1, 0, 38),
    "PostToolUse": (1, 0, 38),
    "Stop": (1, 0, 38),
    "SubagentStop": (1, 0, 41),
    "PreCompact": (1, 0, 48),
    "UserPromptSubmit": (1, 0, 54),
    "SessionStart": (1, 0, 62),
    "SessionEnd": (1, 0, 85),
    "SubagentStart": (2, 0, 43),
    "PermissionRequest": (2, 0, 45),
    "Setup": (2, 1, 10),
    "TaskCompleted": (2, 1, 33),
    "TeammateIdle": (2, 1, 33),
    "ConfigChange": (2, 1, 49),
    "WorktreeCreate": (2, 1, 50),
    "WorktreeRemove": (2, 1, 50),
    "InstructionsLoaded": (2, 1, 69),
    "PostCompact": (2, 1, 76),
    "Elicitation": (2, 1, 76),
    "ElicitationResult": (2, 1, 76),
    "StopFailure": (2, 1, 78),
    "CwdChanged": (2, 1, 83),
    "FileChanged": (2, 1, 83),
    "TaskCreated": (2, 1, 84),
    "PermissionDenied": (2, 1, 89),
    "MessageDisplay": (2, 1, 152),
    "DirectoryAdded": (2, 1, 219),
    "Notification": None,
    "UserPromptExpansion": None,
    # Not in the CHANGELOG (reference §2 has no version): the event list of the published npm
    # builds has it from 2.0.56 on, not in 2.0.55 (cli.js of @anthropic-ai/claude-code).
    "PostToolUseFailure": (2, 0, 56),
    "PostToolBatch": None,
}
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_RECORDED = re.compile(rb'"version"\s*:\s*"(\d+\.\d+\.\d+)"')
_TAIL_BYTES = 64 * 1024  # of the newest transcript: its last records name the version
_JSON_LIMIT = 16 * 1024 * 1024  # ~/.claude.json: a few KB in practice


class ClaudeVersion(Value):
    """The Claude Code version install and doctor go by, and where it came from."""

    version: Version | None  # None: not found (source "unknown")
    source: str  # "override" | "detected" | "recorded" | "unknown"
    detail: str = ""  # the program that answered, the file that recorded it, or why none
    at_least: bool = False  # `version` is a lower bound (the first version run here)

    @property
    def text(self) -> str:
        if self.version is None:
            return "unknown"
        return ("at least " if self.at_least else "") + format_version(self.version)

    def knows(self, event: str) -> bool | None:
        """Whether this Claude Code knows `event`; None when that cannot be told (a version not
        found, a lower bound below the event's first version, an event of unknown age)."""
        known = event_known(event, self.version)
        return None if known is False and self.at_least else known


def parse_version(text: str) -> Version | None:
    """The first X.Y.Z in `text` (`claude --version` prints '2.1.332 (Claude Code)')."""
    match = _VERSION.search(text)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def format_version(version: Version) -> str:
    return ".".join(str(part) for part in version)


def event_known(event: str, version: Version | None) -> bool | None:
    """Whether Claude Code `version` knows `event`; None when ctxward cannot tell."""
    since = EVENT_SINCE.get(event)
    if since is None or version is None:
        return None
    return version >= since


def detect(
    override: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] | None = None,
    timeout: float = 15.0,
) -> ClaudeVersion:
    """`override` when given (BadInput when it is no version), else the first source that
    answers (module docstring); ClaudeVersion(None, "unknown", why) when none does."""
    if override is not None:
        version = parse_version(override)
        if version is None:
            raise BadInput(f"--claude-version {override!r} is not a version like 2.1.76")
        return ClaudeVersion(version, "override")
    env = os.environ if env is None else env
    from ctxward.hosts.wiring import program_on_path

    home = Path(env.get("HOME") or Path.home())
    config = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    programs = [
        (which or (lambda name: program_on_path(name, env)))("claude"),
        str(home / ".local" / "bin" / "claude"),
        str(config / "local" / "claude"),
    ]
    failures = []
    for program in dict.fromkeys(p for p in programs if p):
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            continue
        found, why = _ask(program, timeout)
        if found is not None:
            return ClaudeVersion(found, "detected", program)
        failures.append(why)
    for read in (_installed_versions, _newest_transcript):
        recorded = read(home, config)
        if recorded is not None:
            return ClaudeVersion(recorded[0], "recorded", recorded[1])
    first = _first_start(home, config)
    if first is not None:  # upgrades since are not recorded there: a lower bound only
        return ClaudeVersion(first[0], "recorded", first[1], at_least=True)
    why = "; ".join(failures) or "`claude` is not on PATH"
    return ClaudeVersion(None, "unknown", f"{why}, and no version is recorded under {config}")


def _ask(program: str, timeout: float) -> tuple[Version | None, str]:
    try:
        result = subprocess.run(
            [program, "--version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"`{program} --version` failed: {exc}"
    version = parse_version(result.stdout)
    if result.returncode != 0 or version is None:
        answer = " ".join((result.stdout + result.stderr).split())[:80] or "no output"
        return None, f"`{program} --version` gave no version (exit {result.returncode}: {answer})"
    return version, ""


def _installed_versions(home: Path, config: Path) -> tuple[Version, str] | None:
    """The highest version the native installer keeps (one entry per version, by name)."""
    folder = home / ".local" / "share" / "claude" / "versions"
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    versions = [v for v in map(_exact_version, names) if v is not None]
    if not versions:
        return None
    return max(versions), f"{folder}/{format_version(max(versions))}"


def _exact_version(name: str) -> Version | None:
    return parse_version(name) if re.fullmatch(r"\d+\.\d+\.\d+", name) else None


def _newest_transcript(home: Path, config: Path) -> tuple[Version, str] | None:
    """The version that wrote the newest transcript's last records."""
    newest: tuple[float, Path] | None = None
    try:
        projects = list(os.scandir(config / "projects"))
    except OSError:
        return None
    for folder in projects:
        try:
            entries = list(os.scandir(folder.path)) if folder.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith(".jsonl"):
                continue
            try:
                moment = entry.stat().st_mtime
            except OSError:
                continue
            if newest is None or moment > newest[0]:
                newest = (moment, Path(entry.path))
    if newest is None:
        return None
    from ctxward.core.fsutil import open_regular

    try:
        with open(open_regular(newest[1], follow_links=True), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read(_TAIL_BYTES)
    except OSError:
        return None
    found = _RECORDED.findall(tail)
    version = parse_version(found[-1].decode("ascii")) if found else None
    return (version, str(newest[1])) if version is not None else None


def _first_start(home: Path, config: Path) -> tuple[Version, str] | None:
    """`firstStartVersion` of Claude Code's state file: the first version run here."""
    from ctxward.core.fsutil import read_regular

    for path in dict.fromkeys((config / ".claude.json", home / ".claude.json")):
        try:
            data = json.loads(read_regular(path, follow_links=True, limit=_JSON_LIMIT))
        except (OSError, ValueError, RecursionError):
            continue
        value = data.get("firstStartVersion") if isinstance(data, dict) else None
        version = parse_version(value) if isinstance(value, str) else None
        if version is not None:
            return version, f"{path} (firstStartVersion)"
    return None
