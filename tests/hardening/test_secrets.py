"""Secrets never persisted: seed fake secrets of every type everywhere ctxward reads, run the
whole lifecycle, then scan every file ctxward wrote and everything it printed for any
8-character fragment of them. Target: zero.

The secrets are tests/core/scrub/test_scrub.py's seeded corpus (one per case, every type the
scrubber knows), built from pieces at test time. They go into: a skill's invariants and body; a
Claude Code transcript (user prompts, assistant text, tool inputs and results); a compaction
summary; a prompt; a sub-agent's dispatch prompt (fenced blocks, pasted chunks, and the small text
around them); a sub-agent's final report and its subtask_summary; the tool calls the drift observer
sees; and every CLI command that stores or prints text (share, artifact record, inline, bank
promote, handoff, session, audit, drift, scrub, compactions, plan list).

What is scanned: every file under .ctxward/ and docs/plans/ (all written by ctxward; the inputs
live elsewhere), the HTML audit page, and the stdout and stderr of every step. One exception,
by design: a dispatch that the guard lets through (C9 offload) is answered with the host's own
tool input (`updatedInput`), the sub-agent's instructions unchanged except for the moved
blocks; what it would send anyway is not ctxward's to rewrite (README "Dispatch guard"), so the
text around the moved blocks is taken out of the scan, and the moved blocks themselves (which
reach the disk) are scanned in their offload files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import ctxward_hardening as support
import pytest
from click.testing import CliRunner

from ctxward.cli import cli
from ctxward.hookio import run_in_memory

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Lifecycle:
    """A project, the seeded secrets, and everything ctxward printed along the way."""

    def __init__(self, root: Path, secrets: support.Secrets) -> None:
        self.root = root
        self.secrets = secrets
        self.inputs = root.parent / "inputs"
        self.inputs.mkdir()
        self.printed: list[tuple[str, str]] = []  # (step, text)
        self.exempt: list[str] = []  # texts handed back to the host verbatim (see module doc)
        self.env = {"CLAUDE_PROJECT_DIR": str(root)}

    # -- running things --------------------------------------------------------------------

    def hook(self, name: str, payload: dict[str, Any]) -> tuple[int, str, str]:
        code, out, err = run_in_memory(json.dumps(payload).encode(), self.env)
        self.printed += [(f"hook {name} stdout", out), (f"hook {name} stderr", err)]
        return code, out, err

    def process(self, name: str, payload: dict[str, Any]) -> str:
        """The real `ctxward-hook` process (what settings.example.json runs)."""
        done = subprocess.run(
            [str(support.CTXWARD_HOOK)],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env={"CLAUDE_PROJECT_DIR": str(self.root), "PATH": str(support.BIN)},
            timeout=60,
            check=False,
        )
        out, err = done.stdout.decode(), done.stderr.decode()
        self.printed += [(f"ctxward-hook {name} stdout", out), (f"{name} stderr", err)]
        assert done.returncode == 0, err
        return out

    def cli(self, *argv: str, stdin: str | None = None) -> str:
        result = CliRunner().invoke(
            cli,
            list(argv),
            input=stdin,
            env={**self.env, "HOME": str(self.root.parent / "home")},
            prog_name="ctxward",
        )
        self.printed += [(f"ctxward {argv[0]} stdout", result.stdout)]
        self.printed += [(f"ctxward {argv[0]} stderr", result.stderr)]
        assert result.exception is None or isinstance(result.exception, SystemExit), argv
        assert result.exit_code in (0, 3), (argv, result.exit_code, result.stderr)
        return result.stdout

    def write_input(self, name: str, text: str) -> Path:
        path = self.inputs / name
        path.write_text(text, encoding="utf-8")
        return path

    # -- the seeded material -----------------------------------------------------------------

    def docs(self) -> list[str]:
        return [item.doc for item in self.secrets.items]

    def one_line(self) -> list[str]:
        return [item.value for item in self.secrets.single_line()]


def build_transcript(life: Lifecycle) -> Path:
    """A Claude Code transcript whose every part holds secrets (format of Claude Code 2.1.332)."""
    lines = []
    tokens = life.one_line()
    for n, item in enumerate(life.secrets.items):
        stamp = f"2026-11-30T09:{n // 60:02d}:{n % 60:02d}.000Z"
        base = {"sessionId": "sec-s", "timestamp": stamp, "cwd": str(life.root)}
        lines.append(
            {
                **base,
                "type": "user",
                "uuid": f"u{n}",
                "message": {
                    "role": "user",
                    "content": f"We decided to use this because it works: {item.doc}",
                },
            }
        )
        lines.append(
            {
                **base,
                "type": "assistant",
                "uuid": f"a{n}",
                "requestId": f"req_{n}",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"The fix was to rotate this: {item.doc}"},
                        {
                            "type": "tool_use",
                            "id": f"toolu_t{n}",
                            "name": "Bash",
                            "input": {"command": f"deploy --token {tokens[n % len(tokens)]}"},
                        },
                        {
                            "type": "tool_use",
                            "id": f"toolu_{n}",
                            "name": "Bash",
                            "input": {"command": f"cat <<'EOF'\n{item.doc}\nEOF"},
                        },
                    ],
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
            }
        )
        lines.append(
            {
                **base,
                "type": "user",
                "uuid": f"r{n}",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": item.doc}
                    ],
                },
            }
        )
    return life.write_input("transcript.jsonl", "".join(json.dumps(x) + "\n" for x in lines))


def run_lifecycle(life: Lifecycle) -> None:
    root = life.root
    single = life.one_line()
    # 1. a skill whose rules and body hold secrets; activated
    rules = [f"Deploy only with the credential {value}" for value in single[:40]]
    bullets = "".join(f"  - {json.dumps(rule)}\n" for rule in rules)
    skill = root / ".claude" / "skills" / "leaky" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    body = "\n\n".join(life.docs())
    skill.write_text(f"---\nname: leaky\ninvariants:\n{bullets}---\n\n{body}\n", "utf-8")
    life.cli("activate", "leaky", "--slug", "leaky-plan")
    life.cli("activate", "deep-review", "--slug", "leaky-plan")

    # 2. the compaction: PreCompact (a real process), SessionStart, PostCompact, the next prompt
    transcript = build_transcript(life)
    common = {"session_id": "sec-s", "transcript_path": str(transcript)}
    life.process("PreCompact", support.captured("PreCompact.json", root, **common, trigger="auto"))
    life.hook("SessionStart", support.captured("SessionStart.compact.json", root, **common))
    summary = "<summary>" + "\n".join(rules[::2] + life.docs()[:20]) + "</summary>"
    life.hook(
        "PostCompact",
        support.captured("PostCompact.json", root, **common, compact_summary=summary),
    )
    life.hook(
        "UserPromptSubmit",
        support.captured("UserPromptSubmit.json", root, **common, prompt=life.docs()[0]),
    )
    life.hook("SessionStart resume", support.captured("SessionStart.resume.json", root, **common))

    # 3. dispatches: fenced blocks and pasted chunks over 2 KB hold secrets (offloaded), and so
    # does the text around them (handed back as is: see the module docstring)
    fenced = "".join(
        f"File {n}:\n\n```text\n{doc}\n{'filler line of a pasted log' * 90}\n```\n\n"
        for n, doc in enumerate(life.docs())
    )
    around = f"Use {single[0]} for the staging deploy.\n\n"
    prompt = around + fenced + "x" * max(0, 215_000 - len(fenced))
    dispatch = support.captured(
        "PreToolUse.json",
        root,
        **common,
        tool_name="Agent",
        tool_input={"description": "review", "prompt": prompt, "subagent_type": "general-purpose"},
    )
    _, out, _ = life.hook("PreToolUse offload", dispatch)
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "allow", answer
    updated = answer.pop("updatedInput")
    life.exempt.append(json.dumps(updated))
    life.printed[-2] = ("hook PreToolUse offload stdout", json.dumps(answer))
    denied = dict(dispatch)
    denied["tool_input"] = {
        "description": "review",
        "prompt": "\n\n".join([*life.docs(), *rules] * 40)[:250_000],
    }
    life.hook("PreToolUse deny", denied)

    # 4. a sub-agent's long final report and its subtask_summary (report cap, C8)
    report = "\n".join([*life.docs(), *(f"finding {i}" for i in range(60))])
    summary_entry = (
        "```yaml\nsubtask_summary:\n  agent: hermes\n  summary: Added the POST /auth/login "
        f"endpoint; the token is {single[1]}\n  status: complete\n  phase: '1'\n```\n"
    )
    life.hook(
        "SubagentStop",
        support.captured(
            "SubagentStop.json",
            root,
            **common,
            agent_id="leaky-agent",
            last_assistant_message=report + "\n" + summary_entry,
        ),
    )

    # 5. the drift observer: the same failing command (holding a secret) three times
    for n in range(3):
        life.hook(
            "PostToolUseFailure",
            support.captured(
                "PostToolUseFailure.json",
                root,
                **common,
                tool_name="Bash",
                tool_input={"command": f"curl -H 'Authorization: Bearer {single[2]}' https://x"},
                tool_use_id=f"toolu_drift_{n}",
            ),
        )

    # 6. every command that stores or prints text
    for n, doc in enumerate(life.docs()[:30]):
        life.cli("share", "--batch", "leaky", "--key", f"k{n}.found", "--value", json.dumps(doc))
    artifact = root / ".ctxward" / "sub_agents" / "local" / "artifacts" / "9-rd-001.md"
    artifact.parent.mkdir(parents=True, exist_ok=True)
    artifact.write_text("# doc written by a sub-agent (its own file, not ctxward's)\n", "utf-8")
    life.cli(
        "artifact",
        "record",
        str(artifact),
        "--rid",
        "9",
        "--role",
        "rd",
        "--idx",
        "1",
        "--summary",
        f"uses {single[3]}",
    )
    artifact.unlink()  # the sub-agent's own file is not scanned: ctxward did not write it
    life.cli("heartbeat", "--batch", "leaky", "--role", "k0", "--status", "done")
    life.cli("shared-read", "--batch", "leaky")
    life.cli("reduce", "--batch", "9")
    life.cli("inline", "compress", "--text", summary_entry, "--json")
    life.cli("inline", "score", "--text", life.docs()[4])
    entries = life.write_input("entries.md", summary_entry)
    life.cli("bank", "promote", str(entries), "--phase", "1", "--feature", "leaky")
    life.cli("bank", "status")
    life.cli("bank", "context", "--phase", "1")
    life.cli("handoff")
    life.cli("session", "summarize", str(transcript), "--session-id", "sec-cli")
    life.cli("session", "stats", str(transcript))
    life.cli("audit", str(transcript))
    life.cli("audit", str(transcript), "--json")
    html = root / ".ctxward" / "audit.html"
    life.cli("audit", str(transcript), "--html", str(html), "--summary")
    life.cli("drift", "sec-s")
    life.cli("drift", str(transcript), "--transcript", "--json")
    life.cli("scrub", str(transcript))
    life.cli("scrub", "--json", stdin="\n".join(life.docs()))
    life.cli("dispatch", "check", "-", "--json", stdin=prompt)
    life.cli("compactions")
    life.cli("plan", "list")
    life.cli("watch", "--once")


def scan(life: Lifecycle) -> tuple[int, int, list[str]]:
    """(files scanned, outputs scanned, leaks found)."""
    leaks = []
    files = list(support.files_under(life.root / ".ctxward", life.root / "docs" / "plans"))
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        for fragment in life.secrets.leaks(text)[:3]:
            leaks.append(f"{path.relative_to(life.root)}: {fragment!r}")
    exempt = set()
    for text in life.exempt:
        exempt |= set(life.secrets.leaks(text))
    for step, text in life.printed:
        for fragment in life.secrets.leaks(text)[:3]:
            if fragment not in exempt:
                leaks.append(f"{step}: {fragment!r}")
    return len(files), len(life.printed), leaks


@pytest.fixture
def life(tmp_path: Path) -> Lifecycle:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=20)
    return Lifecycle(root, support.secrets())


def test_the_fake_secrets_cover_every_type(life: Lifecycle) -> None:
    from ctxward.core.scrub import SECRET_TYPES

    assert life.secrets.kinds == set(SECRET_TYPES)
    assert len(life.secrets.fragments) > 5_000


def test_no_fragment_of_any_secret_is_persisted_or_printed(life: Lifecycle) -> None:
    run_lifecycle(life)
    files, outputs, leaks = scan(life)
    support.count("secrets: fake secrets seeded", len(life.secrets.items))
    support.count("secrets: files scanned", files)
    support.count("secrets: outputs scanned", outputs)
    support.count("secrets: fragments found (target 0)", len(leaks))
    assert files > 30 and outputs > 60
    assert not leaks, f"{len(leaks)} secret fragments leaked:\n" + "\n".join(leaks[:40])


def test_the_scan_finds_a_planted_leak(life: Lifecycle) -> None:
    """The scan itself works: a secret written on purpose is found."""
    planted = life.root / ".ctxward" / "planted.txt"
    planted.parent.mkdir(parents=True)
    planted.write_text(f"oops {life.secrets.items[5].value}", "utf-8")
    _, _, leaks = scan(life)
    assert leaks and all("planted.txt" in leak for leak in leaks)
    shutil.rmtree(planted.parent)


def test_an_audit_key_is_scrubbed_before_it_is_cut(life: Lifecycle) -> None:
    """Regression: the audit folded a command to one line and cut it before scrubbing, so a
    key block in a heredoc lost its shape and its second line was printed."""
    from ctxward.transcript.measure import tool_key

    block = next(item for item in life.secrets.items if item.kind == "private_key")
    key = tool_key("Bash", {"command": f"cat > key.pem <<'EOF'\n{block.value}\nEOF"})
    assert life.secrets.leaks(key) == [], key
