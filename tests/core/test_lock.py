"""The one lock (`ctxward.core.lock`), and every writer on a platform without `fcntl`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ctxward.core import lock
from ctxward.errors import CtxwardError

LIB = Path(__file__).resolve().parents[2] / "lib"


@pytest.mark.parametrize("portable", [False, True])
def test_exclusive_serialises_threads(tmp_path: Path, portable: bool) -> None:
    path = tmp_path / "x.lock"
    inside: list[int] = []
    overlaps: list[int] = []

    def work() -> None:
        for _ in range(20):
            with lock.exclusive(path, portable=portable):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(1)
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []


def test_a_linked_lock_file_is_refused_and_a_linked_owner_is_broken(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (tmp_path / "a.lock").symlink_to(victim)
    with pytest.raises(CtxwardError, match="symbolic link"), lock.exclusive(tmp_path / "a.lock"):
        pass
    (tmp_path / "b.lock.owner").symlink_to(victim)
    with lock.exclusive(tmp_path / "b.lock", portable=True, timeout=2):
        assert (tmp_path / "b.lock.owner").is_file()
    assert not victim.exists()


# A platform without fcntl (Windows has none): `import fcntl` raises ImportError in the child.
_WITHOUT_FCNTL = """
import json, sys
sys.modules["fcntl"] = None
from pathlib import Path
from ctxward.hookio import run_in_memory
from ctxward.invariants.activate import activate
from ctxward.core.lock import have_flock
from ctxward.core.project import Project

root = Path(sys.argv[1])
activate(Project(root), "deep-review", "portable")
env = {"CLAUDE_PROJECT_DIR": str(root)}
answers = {"flock": have_flock()}
for event, extra in [
    ("PreCompact", {"trigger": "auto", "custom_instructions": ""}),
    ("PostCompact", {"trigger": "auto", "compact_summary": "nothing kept"}),
    ("UserPromptSubmit", {"prompt": "go on"}),
    ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": {}}),
]:
    payload = {"hook_event_name": event, "session_id": "s1", "cwd": str(root),
               "transcript_path": str(root / "none.jsonl"), **extra}
    answers[event] = run_in_memory(json.dumps(payload).encode(), env)
print(json.dumps(answers))
"""


def test_every_writer_runs_without_fcntl(project: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(LIB)}
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_FCNTL, str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    answers = json.loads(result.stdout)
    assert answers.pop("flock") is False
    for event, (code, out, err) in answers.items():
        assert (code, err) == (0, ""), (event, out, err)
    assert "deep-review" in answers["PreCompact"][1]  # the rules went to the summarizer
    # PostCompact found every rule lost: the next prompt restates them, under the portable lock
    assert "lost" in answers["UserPromptSubmit"][1]
    assert list((project / ".ctxward" / "compactions").glob("*.json"))
    assert list((project / ".ctxward" / "sessions").glob("s1.tools.jsonl"))
