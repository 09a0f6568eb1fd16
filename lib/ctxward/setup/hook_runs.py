"""Doctor runs every wired hook on a synthetic payload, exactly as the host would, and checks the
answer's shape and time.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxward.core.project import Project
from ctxward.core.values import Value
from ctxward.errors import CtxwardError
from ctxward.hosts.payloads import OPENCODE_RUNS, claude_payload, codex_payload, gemini_payload
from ctxward.setup import install
from ctxward.setup.diagnosis import (
    DOCTOR_PACK,
    DOCTOR_SLUG,
    FAIL,
    OK,
    SLOW_SECONDS,
    WARN,
    Check,
    WiredHook,
)

# The answer a correctly working hook gives in the scratch project (a rule is active there).
_EXPECTED_KEY = {
    (install.CLAUDE, "SessionStart"): "hookSpecificOutput",
    (install.CODEX, "SessionStart"): "hookSpecificOutput",
    (install.GEMINI, "BeforeModel"): "hookSpecificOutput",  # after a compression
    (install.OPENCODE, "SessionStart"): "system",
}


class _Run(Value):
    host: str
    event: str
    argv: list[str]
    payload: dict[str, Any]
    timeout: float
    where: str


def _runs(wired: list[WiredHook], opencode: list[str], root: Path) -> list[_Run]:
    runs: list[_Run] = []
    seen: set[tuple[str, str, str]] = set()
    for hook in wired:
        if hook.key in seen or hook.argv is None:  # reported, never run
            continue
        seen.add(hook.key)
        make = claude_payload if hook.host == install.CLAUDE else codex_payload
        if hook.host == install.GEMINI:
            make = gemini_payload
        runs.append(
            _Run(
                hook.host,
                hook.event,
                list(hook.argv),
                make(hook.event, root),
                hook.timeout,
                hook.where,
            )
        )
    for program in opencode:
        for name, (event, make_payload) in OPENCODE_RUNS.items():
            argv = [program, "hook", name, "--host", "opencode"]
            runs.append(_Run(install.OPENCODE, event, argv, make_payload(root), 30.0, "plugin"))
    return runs


def hook_checks(wired: list[WiredHook], opencode: list[str], env: Mapping[str, str]) -> list[Check]:
    """Run every hook doctor may run (`WiredHook.argv`; OpenCode's with `opencode`'s program)
    on a synthetic payload, in a scratch project."""
    if not any(hook.argv for hook in wired) and not opencode:
        return []
    checks = []
    with tempfile.TemporaryDirectory(prefix="ctxward-doctor-") as folder:
        root = Path(folder).resolve()
        (root / ".ctxward").mkdir()
        try:
            from ctxward.invariants.activate import activate

            activate(Project(root), DOCTOR_PACK, DOCTOR_SLUG)
        except CtxwardError as exc:
            return [Check("hooks.scratch", FAIL, "cannot set up the scratch project", str(exc))]
        run_env = {**env, "CLAUDE_PROJECT_DIR": str(root)}
        for run in _runs(wired, opencode, root):
            checks.append(_run_one(run, root, run_env))
    return checks


def _run_one(run: _Run, root: Path, env: Mapping[str, str]) -> Check:
    ident = f"hook.{run.host}.{run.event}"
    title = f"{run.host} {run.event}: `{shlex.join(run.argv)}`"
    fix = (
        "ctxward doctor --json shows the details; ctxward hook EVENT < payload.json runs it by hand"
    )
    program = run.argv[0]
    started = time.monotonic()
    try:
        done = subprocess.run(
            [program, *run.argv[1:]],
            input=json.dumps(run.payload).encode("utf-8"),
            capture_output=True,
            timeout=run.timeout,
            cwd=root,
            env=dict(env),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Check(ident, FAIL, title, f"no answer within its timeout of {run.timeout:g} s", fix)
    except OSError as exc:
        return Check(ident, FAIL, title, f"cannot start: {exc.strerror or exc}", fix)
    seconds = time.monotonic() - started
    stderr = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
    if done.returncode != 0:
        return Check(ident, FAIL, title, f"exit {done.returncode}: {stderr or 'no message'}", fix)
    stdout = done.stdout.decode("utf-8", "replace")
    answer: Any = None
    if stdout.lstrip().startswith("{"):
        try:
            answer = json.loads(stdout)
        except json.JSONDecodeError as exc:
            return Check(ident, FAIL, title, f"stdout is not valid JSON: {exc.msg}", fix)
    expected = _EXPECTED_KEY.get((run.host, run.event))
    if expected and not (isinstance(answer, dict) and answer.get(expected)):
        return Check(ident, FAIL, title, f"answered without {expected!r} for an active rule", fix)
    if isinstance(answer, dict) and (
        answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"
        or "deny" in answer
        or answer.get("decision") == "deny"
    ):
        return Check(ident, FAIL, title, "denied a small, well-formed dispatch", fix)
    detail = f"answered in {seconds:.2f} s (timeout {run.timeout:g} s)"
    if seconds > SLOW_SECONDS:
        return Check(ident, WARN, title, detail + f"; slower than {SLOW_SECONDS:g} s", "")
    return Check(ident, OK, title, detail)
