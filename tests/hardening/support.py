"""Helpers of the hardening suites, loaded by tests/hardening/conftest.py as `ctxward_hardening`.

What every suite shares: the counts reported at the end of the run, snapshots of a project's
state, the checks of "a documented exit code and one clear line", a deadline that turns a hang
into a failure, payload builders, and the fake secrets (tests/core/scrub/test_scrub.py's seeded
generator, reused, so that no realistic secret literal is committed anywhere).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import importlib.util
import json
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures" / "claude_code"
HOOKS = REPO / "hooks"
BIN = Path(sys.executable).parent
CTXWARD_HOOK = BIN / "ctxward-hook"
CTXWARD = BIN / "ctxward"

# --- counts reported at the end of the run (conftest.pytest_terminal_summary) ----------------

COUNTS: collections.Counter[str] = collections.Counter()


def count(what: str, n: int = 1) -> None:
    COUNTS[what] += n


def summary() -> list[str]:
    """The counts of this run, one line each (empty when no hardening test ran)."""
    return [f"ctxward hardening: {what}: {n:,}" for what, n in sorted(COUNTS.items())]


# --- the hook entry points --------------------------------------------------------------------


def hook_scripts() -> list[Path]:
    """Every hooks/<event>.py (the drift observer's included once it exists)."""
    return sorted(path for path in HOOKS.glob("*.py") if path.name != "__init__.py")


def script_event(path: Path) -> str:
    """`pre_tool_use.py` -> `PreToolUse`."""
    return "".join(part.capitalize() for part in path.stem.split("_"))


def entry_points() -> list[tuple[str, list[str]]]:
    """(label, argv) of every process a host starts: each hooks/*.py and ctxward-hook."""
    points = [(f"hooks/{p.name}", [sys.executable, str(p)]) for p in hook_scripts()]
    points.append(("ctxward-hook", [str(CTXWARD_HOOK)]))
    return points


def captured(name: str, root: Path, **overrides: Any) -> dict[str, Any]:
    """A payload captured from Claude Code (tests/fixtures/claude_code/NAME), cwd = `root`."""
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    data["cwd"] = str(root)
    data["transcript_path"] = str(root / "transcript.jsonl")
    data.update(overrides)
    return data


# One captured payload per event ctxward handles (Claude Code's shape).
EVENT_FIXTURES = {
    "PreCompact": "PreCompact.json",
    "SessionStart": "SessionStart.compact.json",
    "PostCompact": "PostCompact.json",
    "SubagentStop": "SubagentStop.json",
    "Stop": "Stop.json",
    "PreToolUse": "PreToolUse.json",
    "UserPromptSubmit": "UserPromptSubmit.json",
    "PostToolUse": "PostToolUse.json",
    "PostToolUseFailure": "PostToolUseFailure.json",
    "SessionEnd": "SessionEnd.json",
}


# --- state snapshots --------------------------------------------------------------------------

# Not state: tracebacks of internal errors (checked apart: there must be none) and lock files.
_NOT_STATE = (".ctxward/log/", ".ctxward/locks/")
_LOCKS = (".lock", ".lock.owner")  # the memory bank's lock file, and its owner (portable lock)


def state(root: Path) -> dict[str, bytes]:
    """Every state file ctxward keeps in `root` (.ctxward/, docs/plans/), by relative path."""
    found: dict[str, bytes] = {}
    for top in (root / ".ctxward", root / "docs" / "plans", root / ".claude"):
        if not top.is_dir():
            continue
        for path in sorted(top.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(_NOT_STATE) or path.name.endswith(_LOCKS) or path.is_dir():
                continue
            if path.is_symlink():
                found[rel] = b"-> " + os.readlink(path).encode()
            elif path.is_file():
                found[rel] = path.read_bytes()
    return found


def logs(root: Path) -> list[str]:
    folder = root / ".ctxward" / "log"
    return sorted(p.name for p in folder.glob("*")) if folder.is_dir() else []


def is_crash_log(name: str) -> bool:
    """A traceback hookio.run logged for an internal error (`<stamp>-<Event>.log`).

    The best-effort steps (the C8/C11 staging, the session summary) log their own failures as
    `<stamp>-<step>-<what>.log` and carry on, by design (README); those are not crashes.
    """
    label = name.split("-", 1)[-1].removesuffix(".log")
    return label == "hook" or label[:1].isupper()


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """The paths whose bytes differ, appeared or vanished."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def tree(folder: Path) -> dict[str, tuple[str, bytes]]:
    """Everything below `folder` (itself excluded), by relative path: (kind, bytes or link).

    A hostile-repository test takes one before and after a run on the folders outside the
    project (the victim's HOME, a folder a planted link points at) and asserts they are equal:
    nothing created, changed, moved or removed there.
    """
    found: dict[str, tuple[str, bytes]] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path).encode())
        elif path.is_dir():
            found[rel] = ("folder", b"")
        elif path.is_file():
            found[rel] = ("file", path.read_bytes())
        else:
            found[rel] = ("other", b"")
    return found


# ctxward's own per-user folders (the trust records and key, the template cache): the one place
# outside a project it writes, on purpose.
OWN_USER_FOLDERS = (".local/state/ctxward", ".cache/ctxward")


@contextlib.contextmanager
def untouched(*folders: Path, allowed: tuple[str, ...] = ()) -> Iterator[None]:
    """Fail when the body creates, changes or removes anything below one of `folders`, except
    below the relative paths `allowed` (and the folders leading to them)."""

    def kept(rel: str) -> bool:
        return not any(
            rel == own or rel.startswith(own + "/") or own.startswith(rel + "/") for own in allowed
        )

    before = [tree(folder) for folder in folders]
    yield
    for folder, was in zip(folders, before, strict=True):
        now = tree(folder)
        differ = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k) and kept(k))
        assert not differ, f"outside the project, below {folder}: {differ[:10]} changed"


# --- outcome checks ---------------------------------------------------------------------------

HOOK_EXIT_CODES = frozenset({0, 1})  # README "Exit codes": a hook never exits 2
CLI_EXIT_CODES = frozenset({0, 1, 2, 3, 4, 5})  # ctxward.errors' table (5: an OSError)


def hook_problem(code: int, out: str, err: str, event: str | None = None) -> str | None:
    """What is wrong with a hook's answer (None when it keeps the contract).

    The contract: exit 0 or 1; stderr empty or one line `ctxward: ...` (never a traceback,
    never an internal error: that is a bug); stdout empty, a JSON object, or (PreCompact) the
    summarizer's text.
    """
    if code not in HOOK_EXIT_CODES:
        return f"exit code {code}"
    if "Traceback" in err or "Traceback" in out:
        return f"a traceback: {err[-600:]}"
    lines = err.splitlines()
    if len(lines) > 1:
        return f"{len(lines)} lines on stderr: {err[:600]!r}"
    if lines and not lines[0].startswith("ctxward: "):
        return f"stderr is not one ctxward line: {err[:300]!r}"
    if "internal error" in err:
        return f"an internal error: {err.strip()}"
    if code == 1 and out:
        return f"exit 1 with stdout {out[:200]!r}"
    if out.startswith("{"):
        try:
            answer = json.loads(out)
        except ValueError:
            return f"stdout is not JSON: {out[:300]!r}"
        if not isinstance(answer, dict):
            return "stdout is JSON but not an object"
    elif out and event not in (None, "PreCompact"):
        return f"plain stdout for {event}: {out[:200]!r}"
    return None


def cli_problem(code: int, out: str, err: str) -> str | None:
    """What is wrong with a CLI run's end: a documented exit code and one clear line.

    A failure (exit != 0) ends with one line naming the problem: `ctxward: error: ...`, or
    click's own `Error: ...` after its usage lines for a malformed command line.
    """
    if code not in CLI_EXIT_CODES:
        return f"exit code {code}"
    if "Traceback" in err or "Traceback" in out:
        return f"a traceback: {err[-800:]}"
    if code not in (0, 3):  # 3: `dispatch check` rejected the prompt; its report is on stdout
        last = [line for line in err.splitlines() if line.strip()][-1:]
        if not last:
            return f"exit {code} with nothing on stderr"
        if not last[0].startswith(("ctxward: ", "Error: ")):
            return f"exit {code}, last stderr line is not a ctxward or click error: {last[0]!r}"
    return None


# --- a bound on every run ---------------------------------------------------------------------


class Hang(BaseException):
    """Raised by `deadline` in the main thread when a run does not end in time."""


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Fail (raise Hang) when the body runs longer than `seconds` (SIGALRM, main thread)."""

    def expire(signum: int, frame: object) -> None:
        raise Hang(f"{what}: still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def invoke_cli(
    root: Path,
    argv: list[str],
    stdin: bytes | str | None = None,
    *,
    seconds: float = 60,
    counter: str = "CLI fuzz cases",
) -> tuple[int, str, str]:
    """`ctxward ARGV` in-process on `root`, under a deadline; a raised exception fails the test.

    HOME is a folder beside the project (nothing reaches the real one); the case is counted
    under `counter` for the summary line.
    """
    from click.testing import CliRunner

    from ctxward.cli import cli

    env = {
        "CLAUDE_PROJECT_DIR": str(root),
        "HOME": str(root.parent / "home"),
        "CLAUDE_CODE_SESSION_ID": "",
        "COLUMNS": "100",
    }
    with deadline(seconds, f"ctxward {argv}"):
        result = CliRunner().invoke(cli, argv, input=stdin, env=env, prog_name="ctxward")
    count(counter)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        shown = "".join(traceback.format_exception(result.exception))
        raise AssertionError(f"ctxward {argv!r} raised:\n{shown[-3000:]}")
    return result.exit_code, result.stdout, result.stderr


# --- fake secrets -----------------------------------------------------------------------------


def _load_by_path(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def scrub_corpus() -> ModuleType:
    """tests/core/scrub/test_scrub.py, whose `Fake` builds every type of fake secret (seeded)."""
    corpus = TESTS / "core" / "scrub" / "test_scrub.py"
    return _load_by_path("ctxward_hardening_scrub_corpus", corpus)


@dataclass(frozen=True)
class Secret:
    kind: str  # the scrubber's type for it
    name: str  # the corpus case it comes from
    doc: str  # a realistic document holding it (a log, a config, JSON, ...)
    value: str  # the secret itself, as it appears in `doc`


@dataclass(frozen=True)
class Secrets:
    items: tuple[Secret, ...]
    fragments: frozenset[str]  # every 8-character window of secret material

    @property
    def kinds(self) -> set[str]:
        return {item.kind for item in self.items}

    def single_line(self) -> list[Secret]:
        """Secrets recognisable on their own, out of their document (`ghp_…`, a JWT, an AWS key
        id, …): safe to seed bare into a sentence. A password or a PuTTY key line is a secret
        only in its context (`password: …`): seed its whole `doc` instead."""
        from ctxward.core.scrub import scrub

        return [
            item
            for item in self.items
            if "\n" not in item.value
            and not self.leaks(scrub(f"rotate {item.value} now")[0])
            and not self.leaks(scrub(f"use {item.value}")[0])
        ]

    def leaks(self, text: str) -> list[str]:
        """The fragments of a secret found in `text` (empty: nothing leaked)."""
        if not text:
            return []
        windows = self.fragments
        return sorted({text[i : i + 8] for i in range(len(text) - 7)} & windows)


def _windows(secret: str) -> set[str]:
    return {line[i : i + 8] for line in secret.splitlines() for i in range(len(line) - 7)}


def secrets(seed: int = 20260102) -> Secrets:
    """One fake secret of every case of the scrubber's corpus, and their 8-character fragments.

    A fragment is secret material when the same case built from two other seeds does not have
    it: fixed parts (the `ghp_` prefix, a PEM header, a JWT's constant header) are not secrets.
    """
    corpus = scrub_corpus()
    cases = corpus.positives(corpus.Fake(seed))
    fixed: set[str] = set()
    for other in (seed + 1, seed + 2):
        for case in corpus.positives(corpus.Fake(other)):
            for value in case.secrets:
                fixed |= _windows(value)
    items = tuple(
        Secret(case.kind, case.name, case.doc, value) for case in cases for value in case.secrets
    )
    fragments = frozenset(w for item in items for w in _windows(item.value)) - fixed
    return Secrets(items, fragments)


def files_under(*roots: Path) -> Iterable[Path]:
    for root in roots:
        if root.is_dir():
            yield from (p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
