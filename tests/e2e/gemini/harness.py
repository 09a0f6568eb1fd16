"""Drive the pinned Gemini CLI against mock_gemini.py, with only loopback reachable.

The network namespace comes from the Claude Code harness (``../harness.py``): the mock is the
first process of a private namespace (``unshare -n``, or ``-rn``) that brings ``lo`` up, and
every Gemini run joins it with ``nsenter``. Each run starts from an empty environment (scratch
HOME and TMPDIR; the venv's bin first on PATH unless a test replaces PATH) under ``timeout``.

Facts this relies on (seen with Gemini CLI 0.61.0 driven headless against the mock):
- API-key auth needs ``security.auth.selectedType: "gemini-api-key"`` in the user settings, and
  ``GEMINI_API_KEY``; ``GOOGLE_GEMINI_BASE_URL`` then points every API call at the mock (plain
  http on 127.0.0.1 is accepted).
- Headless, an untrusted folder is refused ("not running in a trusted directory"): the scratch
  HOME's ``~/.gemini/trustedFolders.json`` trusts the project, as the trust dialog would.
- ``--resume latest -p PROMPT`` continues the project's newest session, one turn per run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
MOCK = HERE / "mock_gemini.py"
GEMINI = HERE / "node_modules" / ".bin" / "gemini"
VERSION = "0.61.0"  # package.json pins it; asserted against `gemini --version`
VENV_BIN = Path(sys.executable).parent  # where `ctxward` is installed
MODEL = "gemini-2.5-flash"
USER_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def _claude_harness() -> Any:
    """The Claude Code e2e harness module (network isolation lives there)."""
    name = "e2e_harness"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE.parent / "harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


detect_isolation = _claude_harness().detect_isolation
python_path = _claude_harness().python_path
tool_dirs = _claude_harness().tool_dirs
start_mock = _claude_harness().start_mock


@dataclass(frozen=True)
class Run:
    """One finished `gemini` run."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def check(self) -> Run:
        """Return self; fail with the run's output when it did not exit 0."""
        if self.returncode != 0:
            how = "timed out" if self.returncode == 124 else f"exited {self.returncode}"
            raise AssertionError(
                f"gemini {' '.join(self.args)[:200]} {how} after {self.seconds:.1f} s\n"
                f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-5000:]}"
            )
        return self


@dataclass(frozen=True)
class Request:
    """One logged request to the mock; ``reply`` names the mock's rule that answered it."""

    n: int
    path: str
    reply: str
    body: Any

    @property
    def text(self) -> str:
        """Every text part of the request's contents, joined (what the model reads)."""
        if not isinstance(self.body, dict):
            return ""
        parts = [p for c in self.body.get("contents") or [] for p in c.get("parts") or []]
        texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
        texts += [json.dumps(p["functionResponse"]) for p in parts if "functionResponse" in p]
        return "\n".join(texts)


class Sandbox(_claude_harness().Sandbox):
    """The mock in its own network namespace, and a clean environment for Gemini runs (the
    Claude Code harness's sandbox: its `run`, with Gemini's mock, settings and variables)."""

    def __init__(self, root: Path, isolation: Any, binary: Path) -> None:
        super().__init__(root, isolation)
        self.binary = binary

    def start(self) -> None:
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        (self.home / ".gemini").mkdir(parents=True, exist_ok=True)
        settings = json.dumps(USER_SETTINGS, indent=2)
        (self.home / ".gemini" / "settings.json").write_text(settings + "\n")
        self.log.touch()
        self._mock, self._mock_output, self.port = start_mock(
            MOCK, self.root, self.isolation, self.log, self.summary_file
        )

    def trust(self, folder: Path) -> None:
        """Trust `folder` as Gemini's trust dialog would (~/.gemini/trustedFolders.json)."""
        path = self.home / ".gemini" / "trustedFolders.json"
        rules = json.loads(path.read_text()) if path.exists() else {}
        rules[str(folder)] = "TRUST_FOLDER"
        path.write_text(json.dumps(rules, indent=2) + "\n")

    @property
    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "TMPDIR": str(self.root / "tmp"),
            "PATH": os.pathsep.join(str(d) for d in [VENV_BIN, *tool_dirs()]),
            "GEMINI_API_KEY": "dummy",
            "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{self.port}",
            **python_path(),
        }

    def gemini(self, *args: str, cwd: Path, path: str | None = None) -> Run:
        """One headless run of the pinned CLI (`-m MODEL` added), time-limited."""
        started = time.monotonic()
        done = self.run([str(self.binary), "-m", MODEL, *args], cwd, path)
        took = time.monotonic() - started
        return Run(args, done.returncode, done.stdout, done.stderr, took)

    def requests(self) -> list[Request]:
        """Every request the mock has logged so far, in arrival order."""
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [Request(e["n"], e["path"], e["reply"], e["body"]) for e in map(json.loads, lines)]


def make_project(root: Path) -> Path:
    """A git-initialised scratch project."""
    root.mkdir(parents=True)
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("git not found: the scratch project needs `git init`")
    subprocess.run([git, "init", "-q", str(root)], check=True, capture_output=True)
    return root


def set_project_setting(project: Path, key: str, value: Any) -> None:
    """Add one top-level key to the project's .gemini/settings.json (after ctxward install)."""
    path = project / ".gemini" / "settings.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data[key] = value
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
