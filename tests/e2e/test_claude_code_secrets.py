"""Secrets never persisted, through the real Claude Code CLI: fake secrets go into a skill, the
user's prompts (so the transcript Claude Code writes), a sub-agent dispatch prompt, and the
compaction summary; afterwards no 8-character fragment of any of them is in the scratch
project's .ctxward/ or docs/plans/, in anything a hook printed (each `ctxward-hook` run goes
through a recorder that keeps its stdout and stderr), in what `ctxward` printed, or in the
prompt the sub-agent received.

The secrets are tests/core/scrub/test_scrub.py's seeded fakes (built from pieces at run time; the
ones recognisable on their own: `ghp_…`, `AKIA…`, JWTs, Slack, Google, OpenAI, Anthropic keys,
...), loaded through tests/hardening/support.py.

How they get into the dispatch: through the mock's own `dispatch` rule (`E2E_DISPATCH_BYTES=n
E2E_DISPATCH_SHAPE=paste`, a prompt of n bytes that is one pasted chunk), run by a wrapper of
mock_anthropic.py that only changes the chunk's filler so that it carries the secrets. C9 moves
the chunk to .ctxward/offload/ (scrubbed), and the sub-agent gets a pointer.

Scenario, in one scratch project wired with settings.example.json:

1. `ctxward activate leaky --slug e2e-secrets` (a skill whose rules hold secrets);
2. `claude -p "<a decision naming secrets> E2E_DISPATCH_BYTES=240000 E2E_DISPATCH_SHAPE=paste"`
   (the dispatch is offloaded, the sub-agent runs);
3. `claude --resume <sid> -p /compact` (PreCompact summarizes the transcript, the mock's
   summary holds secrets: PostCompact checks it);
4. `claude --resume <sid> -p "after compact <secret>"` (UserPromptSubmit restates lost rules).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

SLUG = "e2e-secrets"
WRAPPER = """\
import sys
sys.path.insert(0, {here!r})
import mock_anthropic as mock

import json

SECRETS = json.load(open({secrets!r}, encoding="utf-8"))
_original = mock.dispatch_prompt


def dispatch_prompt(size, *, paste):
    text = _original(size, paste=paste)
    if not paste:
        return text
    head = text[: text.index("\\n\\n") + 2]
    chunk = " ".join(f"credential {{value}} rotated." for value in SECRETS)
    return (head + chunk + "x" * size)[:size]  # still one pasted chunk of exactly `size` bytes


mock.dispatch_prompt = dispatch_prompt
raise SystemExit(mock.main())
"""


def _support() -> Any:
    name = "ctxward_hardening"
    if name not in sys.modules:
        path = Path(__file__).resolve().parent.parent / "hardening" / "support.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def secrets() -> Any:
    return _support().secrets()


@pytest.fixture(scope="module")
def sandbox(
    isolation: Any, tmp_path_factory: pytest.TempPathFactory, secrets: Any
) -> Iterator[Any]:
    """The usual sandbox, its mock started through the wrapper above."""
    harness = sys.modules["e2e_harness"]
    box = harness.Sandbox(tmp_path_factory.mktemp("sandbox"), isolation)
    values = [item.value for item in secrets.single_line()]
    (box.root / "secrets.json").write_text(json.dumps(values), encoding="utf-8")
    wrapper = box.root / "mock_with_secrets.py"
    wrapper.write_text(
        WRAPPER.format(here=str(harness.HERE), secrets=str(box.root / "secrets.json")), "utf-8"
    )
    original = harness.MOCK
    harness.MOCK = wrapper
    try:
        box.start()
    finally:
        harness.MOCK = original
    try:
        yield box
    finally:
        box.stop()


# Each hook runs `ctxward-hook` through this recorder, which keeps a copy of what it printed.
RECORD = (
    "import os, subprocess, sys; "
    "done = subprocess.run(['ctxward-hook'], input=sys.stdin.buffer.read(), capture_output=True); "
    "log = open(os.path.join(os.environ['CLAUDE_PROJECT_DIR'], '..', 'printed.jsonl'), 'a'); "
    "log.write(repr([done.stdout.decode(), done.stderr.decode()]) + chr(10)); "
    "sys.stdout.buffer.write(done.stdout); sys.stderr.buffer.write(done.stderr); "
    "sys.exit(done.returncode)"
)


@pytest.fixture(scope="module")
def hook_settings() -> dict[str, Any]:
    """settings.example.json, each `ctxward-hook` run through RECORD (same stdin, stdout,
    stderr and exit code)."""
    harness = sys.modules["e2e_harness"]
    settings: dict[str, Any] = harness.load_settings_example()
    for groups in settings["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                assert handler["command"] == "ctxward-hook", handler
                handler["command"] = f'{sys.executable} -c "{RECORD}"'
    return settings


def recorded(project: Path) -> list[tuple[str, str]]:
    import ast

    path = project.parent / "printed.jsonl"
    lines = path.read_text("utf-8").splitlines() if path.is_file() else []
    found = []
    for n, line in enumerate(lines):
        out, err = ast.literal_eval(line)
        found += [(f"hook run {n} stdout", out), (f"hook run {n} stderr", err)]
    return found


@dataclass(frozen=True)
class Scenario:
    project: Path
    requests: list[Any]
    printed: list[tuple[str, str]]  # what ctxward printed: (where, text)


def subagent_prompts(requests: list[Any]) -> list[tuple[str, str]]:
    """The sub-agent's own first message: the dispatch prompt after C9's offload."""
    return [
        (f"sub-agent request {r.n}", r.texts("user")[0]) for r in requests if r.reply == "subagent"
    ]


@pytest.fixture(scope="module")
def scenario(sandbox: Any, project: Path, secrets: Any) -> Scenario:
    values = [item.value for item in secrets.single_line()]
    rules = [f"Deploy only with the credential {value}" for value in values[:12]]
    skill = project / ".claude" / "skills" / "leaky" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    bullets = "".join(f"  - {json.dumps(rule)}\n" for rule in rules)
    skill.write_text(f"---\nname: leaky\ninvariants:\n{bullets}---\n\nbody\n", encoding="utf-8")
    printed: list[tuple[str, str]] = []
    done = sandbox.run(["ctxward", "activate", "leaky", "--slug", SLUG], cwd=project)
    assert done.returncode == 0, done.stderr
    printed += [("ctxward activate", done.stdout + done.stderr)]
    summary = "Rules restated:\n" + "\n".join(f"- {r}" for r in rules[::2])
    summary += "\nThe user pasted " + " ".join(values[12:])
    sandbox.summary_file.write_text(summary, encoding="utf-8")

    decision = f"Let's go with the token {values[0]} because staging needs it."
    first = sandbox.claude(
        "-p",
        f"{decision} E2E_DISPATCH_BYTES=240000 E2E_DISPATCH_SHAPE=paste",
        "--output-format",
        "json",
        cwd=project,
    ).result()
    session = first["session_id"]
    compact = sandbox.claude(
        "--resume", session, "-p", "/compact", "--output-format", "json", cwd=project
    ).result()
    assert compact.get("local_command") == "compact", compact
    sandbox.claude(
        "--resume",
        session,
        "-p",
        f"after compact, still using {values[1]}",
        "--output-format",
        "json",
        cwd=project,
    ).result()
    for command in (["ctxward", "compactions"], ["ctxward", "plan", "list"]):
        done = sandbox.run(command, cwd=project)
        printed += [(" ".join(command), done.stdout + done.stderr)]
    requests = sandbox.requests()
    printed += recorded(project) + subagent_prompts(requests)
    return Scenario(project, requests, printed)


def test_the_dispatch_carried_the_secrets_and_was_offloaded(scenario: Scenario) -> None:
    replies = [r.reply for r in scenario.requests]
    assert "dispatch" in replies and "subagent" in replies, replies
    (_, prompt), *_ = subagent_prompts(scenario.requests)
    assert "[ctxward C9:" in prompt, prompt[:500]
    offloaded = list((scenario.project / ".ctxward" / "offload").glob("*"))
    assert offloaded, "C9 wrote nothing"
    assert any("[REDACTED:" in p.read_text("utf-8") for p in offloaded), "nothing was scrubbed"


def test_no_fragment_of_a_secret_in_what_ctxward_wrote_or_said(
    scenario: Scenario, secrets: Any
) -> None:
    support = _support()
    roots = (scenario.project / ".ctxward", scenario.project / "docs" / "plans")
    files = list(support.files_under(*roots))
    assert any(p.name.endswith(".yaml") for p in files), "PreCompact wrote no session summary"
    assert any("compactions" in p.parts for p in files), "PostCompact wrote no report"
    leaks = []
    for path in files:
        for fragment in secrets.leaks(path.read_bytes().decode("utf-8", "replace"))[:2]:
            leaks.append(f"{path.relative_to(scenario.project)}: {fragment!r}")
    for where, text in scenario.printed:
        for fragment in secrets.leaks(text)[:2]:
            leaks.append(f"{where}: {fragment!r}")
    hooks = [text for where, text in scenario.printed if where.startswith("hook run")]
    assert len(hooks) > 10 and any("C9" in text for text in hooks), "the hooks were not recorded"
    assert not leaks, f"{len(leaks)} secret fragments:\n" + "\n".join(leaks[:30])
