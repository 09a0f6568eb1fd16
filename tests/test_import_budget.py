"""The import budget of the hooks that run on every tool call and every prompt.

PreToolUse and PostToolUse run around every tool call, UserPromptSubmit before every prompt:
each is a fresh interpreter, so what it imports is paid every time. They may load the standard
library and ctxward's own modules, nothing else: no click, jinja2, yaml or watchdog, and not
`dataclasses` (which pulls in `inspect`). Checked with `python -X importtime` through the
installed entry point's own code path (`hookio.main`), against what a bare interpreter imports
at start-up.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FORBIDDEN = {"dataclasses", "inspect", "typing", "click", "jinja2", "yaml", "watchdog"}


def _imported(args: list[str], stdin: bytes, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    names = []
    for line in done.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":  # the header line
                names.append(name)
    return names


CASES = {
    "PreToolUse, a sub-agent dispatch": {
        "hook_event_name": "PreToolUse",
        "tool_name": "Agent",
        "tool_input": {"prompt": "Fix the typo in README.md", "description": "typo"},
    },
    "PreToolUse, another tool": {
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "README.md"},
    },
    "PostToolUse": {
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "README.md"},
        "tool_response": {"content": "hello"},
        "tool_use_id": "toolu_1",
    },
    "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": "hello"},
}


def _hook_imports(case: str, tmp_path: Path) -> list[str]:
    """What the hook imports for CASES[case], beyond what a bare interpreter starts with."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    payload = {"session_id": "s1", "cwd": str(project), **CASES[case]}
    lib = str(Path(__file__).resolve().parents[1] / "lib")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CLAUDE_PROJECT_DIR": str(project)}
    env["PYTHONPATH"] = lib
    start = set(_imported(["-c", "pass"], b"", env))
    hook = ["-c", "from ctxward.hookio import main; main()"]
    return [m for m in _imported(hook, json.dumps(payload).encode(), env) if m not in start]


@pytest.mark.parametrize("case", list(CASES))
def test_per_call_and_per_prompt_hooks_load_only_the_standard_library(case, tmp_path):
    loaded = _hook_imports(case, tmp_path)

    assert "ctxward.hookio" in loaded  # the probe saw the hook's imports at all
    foreign = [
        name
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "ctxward"
    ]
    assert not foreign, f"{case}: outside the standard library: {foreign}"
    heavy = sorted(FORBIDDEN & {name.split(".")[0] for name in loaded})
    assert not heavy, f"{case}: loads {heavy} on a per-call path"


@pytest.mark.parametrize("case", list(CASES))
def test_per_call_and_per_prompt_hooks_with_nothing_to_say_import_neither_json_nor_re(
    case, tmp_path
):
    """`import json` (which imports `re`) was most of a silent hook's own cost: the payload, the
    drift observer's state and log, the transcript's tail go through `ctxward.core.hotjson`."""
    loaded = _hook_imports(case, tmp_path)

    assert "ctxward.core.hotjson" in loaded
    heavy = sorted({"json", "re"} & set(loaded))
    assert not heavy, f"{case}: loads {heavy}"
