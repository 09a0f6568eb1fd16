"""Drive the pinned OpenCode CLI against mock_openai.py, with only loopback reachable.

The network namespace comes from the Claude Code harness (``../harness.py``): the mock is the
first process of a private namespace (``unshare -n``, or ``-rn``) that brings ``lo`` up, and
every OpenCode run joins it with ``nsenter``. Each run starts from an empty environment (scratch
HOME, XDG folders and TMPDIR; the venv's bin first on PATH so the plugin finds ``ctxward``; the
OpenCode switches that keep it offline) under ``timeout``.

Facts this relies on (seen with OpenCode 1.18.33 driven headless against a mock):
- OpenCode takes its project from ``$PWD``, so every run sets it.
- At start-up OpenCode npm-installs ``@opencode-ai/plugin`` into each config folder, which blocks
  for about 70 s offline; a ``node_modules/`` plus a lock file listing the package skips it
  (``stub_plugin_install``).
- ``OPENCODE_DISABLE_MODELS_FETCH=1`` stops the models.dev fetch; ``--pure`` would drop the
  plugin, so it is not used.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
PLUGIN = REPO / "hooks" / "opencode" / "ctxward.js"
MOCK = HERE / "mock_openai.py"
DRIVER = HERE / "drive_plugin.mjs"
VERSION = "1.18.33"  # package.json pins it; asserted against `opencode --version`
VENV_BIN = Path(sys.executable).parent  # where `ctxward` is installed

RUN_TIMEOUT = 120  # seconds, for one OpenCode run
OPENCODE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
}
MODEL = "mock/mock-model"
SERVE_PORT = 4999  # `opencode serve` (Sandbox.serve): the namespace has nothing else but the mock


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
removable_install = _claude_harness().removable_install
message_text = _claude_harness().message_text
start_mock = _claude_harness().start_mock  # the mock's lifecycle: the same flags, both mocks
stop_mock = _claude_harness().stop_mock


def opencode_binary() -> Path | None:
    """The pinned CLI from `npm ci`: its bin link, else the platform package's binary."""
    override = os.environ.get("OPENCODE_BIN")
    if override:
        return Path(override)
    modules = HERE / "node_modules"
    # The npm bin is a 479-byte placeholder until its postinstall links the real binary in.
    for candidate in (
        modules / ".bin" / "opencode",
        modules / "opencode-linux-x64" / "bin" / "opencode",
        modules / "opencode-linux-x64-baseline" / "bin" / "opencode",
    ):
        if candidate.is_file() and candidate.stat().st_size > 1_000_000:
            return candidate
    return None


@dataclass(frozen=True)
class Run:
    """One finished `opencode run`; `events` are its `--format json` lines."""

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
        return [event for event in found if isinstance(event, dict)]

    @property
    def session_id(self) -> str:
        ids = {e["sessionID"] for e in self.events if isinstance(e.get("sessionID"), str)}
        assert len(ids) == 1, f"expected one session in the run's events, got {ids}"
        return ids.pop()

    def check(self) -> Run:
        """Return self; fail with the run's output when it did not exit 0."""
        if self.returncode != 0:
            how = "timed out" if self.returncode == 124 else f"exited {self.returncode}"
            raise AssertionError(
                f"opencode {' '.join(self.args)[:200]} {how} after {self.seconds:.1f} s\n"
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
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def texts(self, role: str) -> list[str]:
        """The text of every message with this role, in order."""
        return [message_text(m) for m in self.messages if m.get("role") == role]


class Sandbox:
    """The mock in its own network namespace, and a clean environment for OpenCode runs."""

    def __init__(self, root: Path, isolation: Any, binary: Path) -> None:
        self.root = root
        self.isolation = isolation
        self.binary = binary
        self.log = root / "requests.jsonl"
        self.summary_file = root / "summary.txt"  # the mock's compaction reply carries it
        self.port = 0
        self._mock: subprocess.Popen[bytes] | None = None
        self._mock_output: IO[bytes] | None = None

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.log.touch()
        self._mock, self._mock_output, self.port = start_mock(
            MOCK, self.root, self.isolation, self.log, self.summary_file
        )

    def stop(self) -> None:
        stop_mock(self._mock, self._mock_output)
        self._mock, self._mock_output = None, None

    def env(self, home: Path, cwd: Path) -> dict[str, str]:
        """The whole environment of one run (nothing is inherited but PYTHONPATH, so that a
        worktree's tests run the worktree's ctxward through the shared venv's scripts)."""
        return {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "TMPDIR": str(home / "tmp"),
            "PATH": os.pathsep.join(str(d) for d in [VENV_BIN, *tool_dirs()]),
            "PWD": str(cwd),  # OpenCode's project is $PWD, not the working directory
            "GIT_CONFIG_NOSYSTEM": "1",
            **OPENCODE_ENV,
            **python_path(),
        }

    def run(
        self, command: list[str], cwd: Path, path: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run any command inside the namespace with the project's clean environment; `path`
        replaces its PATH (to start OpenCode without ctxward's bin on it)."""
        assert self._mock is not None, "start() the sandbox first"
        limit = [shutil.which("timeout") or "timeout", "-k", "10", str(RUN_TIMEOUT)]
        env = self.env(home_of(cwd), cwd)
        if path is not None:
            env["PATH"] = path
        return subprocess.run(
            [*self.isolation.join_prefix(self._mock.pid), *limit, *command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT + 30,
            check=False,
        )

    def opencode(self, *args: str, cwd: Path, path: str | None = None) -> Run:
        """One `opencode run --format json ARGS` in the project; the log lands next to it."""
        started = time.monotonic()
        command = [str(self.binary), "run", "--print-logs", "--log-level", "DEBUG"]
        done = self.run([*command, "--format", "json", *args], cwd, path)
        seconds = time.monotonic() - started
        runs = sorted(home_of(cwd).glob("run-*.log"))
        (home_of(cwd) / f"run-{len(runs) + 1}.log").write_text(done.stderr, encoding="utf-8")
        return Run(args, done.returncode, done.stdout, done.stderr, seconds)

    @contextlib.contextmanager
    def serve(self, project: Path) -> Iterator[str]:
        """`opencode serve` in the project, in the namespace; yields its URL. Runs attached to
        it (`opencode(... "--attach", url)`) share one OpenCode process, and so one plugin, as
        the TUI's turns do."""
        assert self._mock is not None, "start() the sandbox first"
        port = SERVE_PORT if self.port != SERVE_PORT else SERVE_PORT + 1
        url = f"http://127.0.0.1:{port}"
        log = (home_of(project) / "serve.log").open("wb")
        command = [str(self.binary), "serve", "--port", str(port), "--print-logs"]
        server = subprocess.Popen(
            [*self.isolation.join_prefix(self._mock.pid), *command],
            cwd=project,
            env=self.env(home_of(project), project),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait_for(project, port, 60)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=30)
            log.close()

    def summarize(self, project: Path, url: str, session_id: str) -> None:
        """A manual compaction, as the TUI's /compact makes it (`opencode run` has none)."""
        body = json.dumps({"providerID": "mock", "modelID": MODEL.split("/")[1]})
        script = (
            "import sys, urllib.request\n"
            "headers = {'Content-Type': 'application/json'}\n"
            "request = urllib.request.Request(sys.argv[1], sys.argv[2].encode(), headers)\n"
            f"urllib.request.urlopen(request, timeout={RUN_TIMEOUT}).read()\n"
        )
        done = self.run(
            ["python3", "-c", script, f"{url}/session/{session_id}/summarize", body], project
        )
        assert done.returncode == 0, f"summarize failed:\n{done.stderr[-2000:]}"

    def _wait_for(self, project: Path, port: int, seconds: int) -> None:
        """Until something listens on the port, inside the namespace."""
        script = (
            "import socket, sys, time\n"
            "end = time.monotonic() + float(sys.argv[2])\n"
            "while True:\n"
            "    try:\n"
            "        socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2).close()\n"
            "        break\n"
            "    except OSError:\n"
            "        if time.monotonic() > end:\n"
            "            raise\n"
            "        time.sleep(0.2)\n"
        )
        done = self.run(["python3", "-c", script, str(port), str(seconds)], project)
        assert done.returncode == 0, f"nothing listens on {port}:\n{done.stderr[-2000:]}"

    def requests(self, since: int = 0) -> list[Request]:
        """Every request the mock has logged, in arrival order, from number `since` on."""
        lines = self.log.read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines]
        return [
            Request(e["n"], e["path"], e["reply"], e["body"]) for e in entries if e["n"] >= since
        ]

    def request_count(self) -> int:
        return len(self.log.read_text(encoding="utf-8").splitlines())

    def make_project(self, root: Path, *, context: int = 200_000, plugin: bool = True) -> Path:
        """A git project with one empty commit, the mock as its only provider, and the plugin
        copied in (`plugin`; else `ctxward install opencode` is the test's to run)."""
        root.mkdir(parents=True)
        home = home_of(root)
        for folder in ("tmp", ".config/opencode"):
            (home / folder).mkdir(parents=True, exist_ok=True)
        git = [
            "git",
            "-c",
            "user.email=e2e@example.invalid",
            "-c",
            "user.name=e2e",
            "-C",
            str(root),
        ]
        subprocess.run([*git, "init", "-q"], check=True, capture_output=True, timeout=30)
        subprocess.run(
            [*git, "commit", "-q", "--allow-empty", "-m", "init"],
            check=True,
            capture_output=True,
            timeout=30,
        )
        config = opencode_config(self.port, context)
        (root / "opencode.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        if plugin:
            (root / ".opencode" / "plugin").mkdir(parents=True)
            shutil.copy2(PLUGIN, root / ".opencode" / "plugin" / "ctxward.js")
        for folder in (root / ".opencode", home / ".config" / "opencode"):
            stub_plugin_install(folder)
        return root


def tool_dirs() -> list[Path]:
    """The folders of node, git and the real python (not the venv's: no ctxward there)."""
    tools = [shutil.which(name) for name in ("node", "git")]
    dirs = [Path(tool).parent for tool in tools if tool]
    dirs.append(Path(os.path.realpath(sys.executable)).parent)
    return list(dict.fromkeys(dirs))


def home_of(project: Path) -> Path:
    """The scratch HOME of a project: a sibling folder, so the project stays clean."""
    return project.parent / f"{project.name}.home"


def opencode_config(port: int, context: int) -> dict[str, Any]:
    """opencode.json: the mock as the only provider, nothing that reaches the network."""
    model = {"name": "Mock Model", "tool_call": True, "limit": {"context": context, "output": 4096}}
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": MODEL,
        "small_model": MODEL,
        "enabled_providers": ["mock"],
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "sk-mock"},
                "models": {"mock-model": model},
            }
        },
    }


def stub_plugin_install(folder: Path) -> None:
    """Make OpenCode skip its npm install of @opencode-ai/plugin into this config folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "node_modules").mkdir(exist_ok=True)
    dependencies = {"@opencode-ai/plugin": VERSION}
    package = {"dependencies": dependencies}
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": dependencies}}}
    (folder / "package.json").write_text(json.dumps(package) + "\n", encoding="utf-8")
    (folder / "package-lock.json").write_text(json.dumps(lock) + "\n", encoding="utf-8")
