"""Drive the pinned Codex CLI headless against mock_responses.py, with only loopback reachable.

The network namespace comes from the Claude Code harness (``../harness.py``): the mock is the
first process of a private namespace (``unshare -n``, or ``-rn``) that brings ``lo`` up, and
every Codex run joins it with ``nsenter``. Each run starts from an empty environment (scratch
HOME, CODEX_HOME and TMPDIR; the venv's bin first on PATH, so the hooks find ``ctxward-hook``)
under ``timeout``.

Facts this relies on (seen with Codex CLI 0.169.0, ``codex exec --json``):
- the first JSON line is ``{"type": "thread.started", "thread_id": ...}``; ``codex exec --json
  resume <thread_id> PROMPT`` continues that thread in a new process;
- a ``[model_providers.mock]`` table in ``$CODEX_HOME/config.toml`` with ``wire_api =
  "responses"`` points it at the mock; ``model_auto_compact_token_limit`` below the input
  tokens the mock reports makes it compact before the next turn's request;
- project hooks come from ``<project>/.codex/hooks.json``; they run only when trusted
  (``[hooks.state]`` in config.toml, ``ctxward.hosts.codex_trust``) or with
  ``--dangerously-bypass-hook-trust``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
MOCK = HERE / "mock_responses.py"
VERSION = "0.169.0"  # package.json pins it; asserted against `codex --version`
VENV_BIN = Path(sys.executable).parent  # where `ctxward` and `ctxward-hook` are installed
AUTO_COMPACT_LIMIT = 100_000  # tokens; the mock reports more on E2E_INPUT_TOKENS=500000
BIG_INPUT = "E2E_INPUT_TOKENS=500000"


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


base = _claude_harness()
detect_isolation = base.detect_isolation
read_rules = base.read_rules


def codex_binary() -> Path | None:
    found = HERE / "node_modules" / ".bin" / "codex"
    return found if found.exists() else None


@dataclass(frozen=True)
class CodexRun:
    """One finished `codex exec --json` run."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def events(self) -> list[dict[str, Any]]:
        found = []
        for line in self.stdout.splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
        return found

    @property
    def thread_id(self) -> str:
        for event in self.events:
            if event.get("type") == "thread.started":
                return str(event["thread_id"])
        raise AssertionError(f"no thread.started in codex output\n{self.output()}")

    def items(self, kind: str) -> list[dict[str, Any]]:
        return [
            e["item"]
            for e in self.events
            if e.get("type") == "item.completed" and e.get("item", {}).get("type") == kind
        ]

    def ok(self) -> CodexRun:
        if self.returncode != 0:
            raise AssertionError(
                f"codex {' '.join(self.args)[:200]} exited {self.returncode}\n{self.output()}"
            )
        return self

    def output(self) -> str:
        return f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}"


@dataclass(frozen=True)
class Request:
    n: int
    reply: str
    body: dict[str, Any]

    def texts(self, role: str) -> list[str]:
        """The text of every input message with this role, in order."""
        found = []
        for item in self.body.get("input") or []:
            if item.get("type") == "message" and item.get("role") == role:
                content = item.get("content") or []
                found.append("\n".join(str(p.get("text", "")) for p in content))
        return found

    def tool_outputs(self) -> list[str]:
        return [
            str(item.get("output"))
            for item in self.body.get("input") or []
            if item.get("type") == "function_call_output"
        ]


class Sandbox(base.Sandbox):  # type: ignore[misc,name-defined]
    """The mock in its own network namespace, a scratch HOME/CODEX_HOME, and Codex runs
    (`run`, `stop` and the namespace are the Claude Code harness's)."""

    def __init__(self, root: Path, isolation: Any, binary: Path) -> None:
        super().__init__(root, isolation)
        self.binary = binary
        self.codex_home = self.home / ".codex"
        self.trusted_projects: list[Path] = []
        self.extra_config = ""

    def start(self) -> None:
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.log.touch()
        self._mock, self._mock_output, self.port = base.start_mock(
            MOCK, self.root, self.isolation, self.log, self.summary_file
        )
        self.write_config()

    def write_config(self) -> None:
        projects = "".join(
            f'\n[projects.{json.dumps(str(p))}]\ntrust_level = "trusted"\n'
            for p in self.trusted_projects
        )
        (self.codex_home / "config.toml").write_text(
            'model = "mock-model"\n'
            'model_provider = "mock"\n'
            f"model_auto_compact_token_limit = {AUTO_COMPACT_LIMIT}\n"
            "[model_providers.mock]\n"
            'name = "mock"\n'
            f'base_url = "http://127.0.0.1:{self.port}/v1"\n'
            'env_key = "MOCK_API_KEY"\n'
            'wire_api = "responses"\n' + projects + "\n" + self.extra_config,
            encoding="utf-8",
        )

    @property
    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "CODEX_HOME": str(self.codex_home),
            "TMPDIR": str(self.root / "tmp"),
            "PATH": os.pathsep.join(str(d) for d in [VENV_BIN, *base.tool_dirs()]),
            "MOCK_API_KEY": "dummy",
            **base.python_path(),
        }

    def ctxward(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """The venv's `ctxward` as the same user the hooks run as (this HOME)."""
        return subprocess.run(
            [str(VENV_BIN / "ctxward"), *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def codex(
        self,
        prompt: str,
        cwd: Path,
        *,
        resume: str | None = None,
        bypass: bool = True,
        path: str | None = None,
    ) -> CodexRun:
        flags = ["exec", "--json", "--skip-git-repo-check"]
        if bypass:
            flags.append("--dangerously-bypass-hook-trust")
        args = [*flags, *(["resume", resume] if resume else []), prompt]
        started = time.monotonic()
        done = self.run([str(self.binary), *args], cwd, path)
        return CodexRun(
            tuple(args), done.returncode, done.stdout, done.stderr, time.monotonic() - started
        )

    def requests(self) -> list[Request]:
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [Request(e["n"], e["reply"], e["body"]) for e in map(json.loads, lines)]


def make_project(box: Sandbox, name: str) -> Path:
    """A git project wired with the real `ctxward install codex`, trusted by Codex's config."""
    root = box.root / name
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    done = box.ctxward("install", "codex", cwd=root)
    assert done.returncode == 0, done.stderr
    box.trusted_projects.append(root)
    box.write_config()
    return root


def hooks_of(project: Path) -> dict[str, Any]:
    hooks: dict[str, Any] = json.loads(
        (project / ".codex" / "hooks.json").read_text(encoding="utf-8")
    )["hooks"]
    return hooks
