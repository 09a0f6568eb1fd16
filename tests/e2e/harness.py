"""Drive the pinned Claude Code CLI against mock_anthropic.py, with only loopback reachable.

The mock is the first process of a private network namespace (``unshare -n``, or ``unshare -rn``
where plain ``-n`` is refused); every CLI run joins that namespace with ``nsenter``, so the CLI
and the hooks it spawns can reach 127.0.0.1 and nothing else. Each run starts from an empty
environment (scratch HOME and TMPDIR, the venv's bin first on PATH) under ``timeout``.

Run as a script, this file is the namespace's first process: it brings ``lo`` up (a new
namespace starts with it down) and execs the rest of its arguments.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
MOCK = HERE / "mock_anthropic.py"
SETTINGS_EXAMPLE = REPO / "settings.example.json"
VENV_BIN = Path(sys.executable).parent  # where `ctxward` and `ctxward-hook` are installed

CLI_TIMEOUT = 120  # seconds, for one CLI run
CLI_ENV = {
    "ANTHROPIC_API_KEY": "dummy",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
}


@dataclass(frozen=True)
class Isolation:
    """How the mock gets its own network namespace, and how a command joins it."""

    description: str
    unshare: tuple[str, ...] = ()  # prefix that starts the namespace's first process
    nsenter: tuple[str, ...] = ()  # prefix (before the target pid) that joins it

    def start_prefix(self) -> list[str]:
        if not self.unshare:
            return []
        return [*self.unshare, sys.executable, str(Path(__file__).resolve()), "--"]

    def join_prefix(self, pid: int) -> list[str]:
        if not self.nsenter:
            return []
        return [*self.nsenter[:1], "-t", str(pid), *self.nsenter[1:], "--"]


def detect_isolation() -> Isolation:
    """Return the strongest isolation allowed here: ``-n`` (root), else ``-rn``, else none."""
    unshare, nsenter = shutil.which("unshare"), shutil.which("nsenter")
    if unshare is None or nsenter is None:
        return Isolation("none: unshare/nsenter not found; the mock shares the host network")
    # -U joins the user namespace that `unshare -r` made, keeping our uid (mapped to root there).
    for flags, join in ((["-n"], ["-n"]), (["-rn"], ["-U", "-n", "--preserve-credentials"])):
        probe = subprocess.run([unshare, *flags, "true"], capture_output=True, check=False)
        if probe.returncode == 0:
            name = f"unshare {' '.join(flags)} (loopback only)"
            return Isolation(name, (unshare, *flags), (nsenter, *join))
    return Isolation("none: unshare -n and -rn were refused; the mock shares the host network")


@dataclass(frozen=True)
class CliRun:
    """One finished CLI run."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def result(self) -> dict[str, Any]:
        """Return the ``--output-format json`` result; fail with the run's output otherwise."""
        if self.returncode != 0:
            how = "timed out" if self.returncode == 124 else f"exited {self.returncode}"
            took = f"after {self.seconds:.1f} s"
            raise AssertionError(f"{self.describe()} {how} {took}\n{self._output()}")
        try:
            result: dict[str, Any] = json.loads(self.stdout)
        except ValueError:
            raise AssertionError(f"{self.describe()} printed no JSON\n{self._output()}") from None
        if result.get("is_error"):
            raise AssertionError(f"{self.describe()} reported an error\n{self._output()}")
        return result

    def describe(self) -> str:
        return "claude " + " ".join(self.args)

    def _output(self) -> str:
        return f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}"


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
        """Return the text of every message with this role, in order."""
        return [message_text(m) for m in self.messages if m.get("role") == role]


def message_text(message: dict[str, Any]) -> str:
    """Return the text blocks of one message, joined (string content as is)."""
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


# --- what the tests read back -----------------------------------------------------------------


def read_rules(invariants_md: Path) -> list[str]:
    """The bullets under every `### Rules` heading of an invariants.md (seed 003)."""
    rules: list[str] = []
    in_rules = False
    for line in invariants_md.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            in_rules = line.startswith("### Rules")
        elif in_rules and line.startswith("- "):
            rules.append(line[2:].strip())
    return rules


def missing_from(text: str, rules: list[str]) -> list[str]:
    return [rule for rule in rules if rule not in text]


def only(requests: list[Any], reply: str) -> Any:
    found = [r for r in requests if r.reply == reply]
    replies = [r.reply for r in requests]
    assert len(found) == 1, f"expected one {reply!r} request, got {len(found)}; log: {replies}"
    return found[0]


def start_mock(
    mock: Path, root: Path, isolation: Isolation, log: Path, summary_file: Path
) -> tuple[subprocess.Popen[bytes], IO[bytes], int]:
    """Start a mock server script in `isolation`; return its process, output file and port.

    Shared by the Claude Code and OpenCode harnesses: both mocks take the same flags.
    """
    port_file = root / "mock.port"
    command = [
        *isolation.start_prefix(),
        sys.executable,
        str(mock),
        *("--port", "0", "--port-file", str(port_file), "--log", str(log)),
        *("--summary-file", str(summary_file)),
    ]
    output = (root / "mock.out").open("wb")
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 15
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            stop_mock(process, output)
            printed = (root / "mock.out").read_text(errors="replace")
            raise RuntimeError(f"mock server did not start: {command}\n{printed}")
        time.sleep(0.05)
    return process, output, int(port_file.read_text())


def stop_mock(process: subprocess.Popen[bytes] | None, output: IO[bytes] | None) -> None:
    """Stop a mock started by `start_mock` (terminate, then kill) and close its output file."""
    if process is not None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if output is not None:
        output.close()


class Sandbox:
    """A mock server in its own network namespace, plus a clean environment for the CLI."""

    def __init__(self, root: Path, isolation: Isolation) -> None:
        self.root = root
        self.isolation = isolation
        self.home = root / "home"
        self.log = root / "requests.jsonl"
        self.summary_file = root / "summary.txt"  # the mock puts its text inside <summary>
        self.port = 0
        self._mock: subprocess.Popen[bytes] | None = None
        self._mock_output: IO[bytes] | None = None

    def start(self) -> None:
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        self.log.touch()
        self._mock, self._mock_output, self.port = start_mock(
            MOCK, self.root, self.isolation, self.log, self.summary_file
        )

    def stop(self) -> None:
        stop_mock(self._mock, self._mock_output)
        self._mock, self._mock_output = None, None

    @property
    def env(self) -> dict[str, str]:
        """The whole environment of a CLI run (nothing is inherited but PYTHONPATH, so that a
        worktree's tests run the worktree's ctxward through the shared venv's scripts)."""
        return {
            "HOME": str(self.home),
            "TMPDIR": str(self.root / "tmp"),
            "PATH": os.pathsep.join(str(d) for d in [VENV_BIN, *tool_dirs()]),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}",
            **CLI_ENV,
            **python_path(),
        }

    def run(
        self, command: list[str], cwd: Path, path: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run any command inside the namespace with the clean environment, time-limited;
        `path` replaces its PATH (to start the CLI without ctxward's bin on it)."""
        assert self._mock is not None, "start() the sandbox first"
        limit = [shutil.which("timeout") or "timeout", "-k", "10", str(CLI_TIMEOUT)]
        env = self.env if path is None else {**self.env, "PATH": path}
        return subprocess.run(
            [*self.isolation.join_prefix(self._mock.pid), *limit, *command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT + 30,
            check=False,
        )

    def claude(self, *args: str, cwd: Path, path: str | None = None) -> CliRun:
        """Run the pinned CLI once; see CliRun.result() for the JSON result."""
        started = time.monotonic()
        done = self.run([str(CLAUDE), *args], cwd, path)
        return CliRun(args, done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def requests(self) -> list[Request]:
        """Every request the mock has logged so far, in arrival order."""
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [Request(e["n"], e["path"], e["reply"], e["body"]) for e in map(json.loads, lines)]


def tool_dirs() -> list[Path]:
    """The folders of node and of the real python (not the venv's: no ctxward there)."""
    node = shutil.which("node")
    dirs = [Path(node).parent] if node else []
    dirs.append(Path(os.path.realpath(sys.executable)).parent)
    return list(dict.fromkeys(dirs))


def python_path() -> dict[str, str]:
    value = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": value} if value else {}


def make_project(root: Path, settings: dict[str, Any] | None) -> Path:
    """Create a git-initialised scratch project whose .claude/settings.json is settings (no
    .claude/ at all when None)."""
    root.mkdir(parents=True)
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("git not found: the scratch project needs `git init`")
    subprocess.run([git, "init", "-q", str(root)], check=True, capture_output=True)
    if settings is not None:
        (root / ".claude").mkdir()
        (root / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    return root


def removable_install(folder: Path) -> Path:
    """A ctxward install that a test can take away: the venv's `ctxward` and `ctxward-hook`
    console scripts copied into `folder` (their shebang names the venv's interpreter)."""
    folder.mkdir(parents=True)
    for name in ("ctxward", "ctxward-hook"):
        shutil.copy2(VENV_BIN / name, folder / name)
    return folder


def load_settings_example() -> dict[str, Any]:
    """Return the repo's settings.example.json (read at test time, so it is always current)."""
    settings: dict[str, Any] = json.loads(SETTINGS_EXAMPLE.read_text(encoding="utf-8"))
    return settings


def _loopback_up() -> None:
    """Set IFF_UP on `lo` (what `ip link set lo up` does), with one ioctl."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


def _exec_in_namespace(argv: list[str]) -> None:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    _loopback_up()
    os.execv(argv[0], argv)


if __name__ == "__main__":
    _exec_in_namespace(sys.argv[1:])
