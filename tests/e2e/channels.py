"""What each channel carried around one compaction of 180 rules, in the pinned Claude Code CLI.

Run from the repository root after `make e2e` has installed the CLI:

    .venv/bin/python tests/e2e/channels.py             # Claude Code
    .venv/bin/python tests/e2e/channels.py --opencode  # OpenCode (after `npm ci` in opencode/)

It runs the two scenarios of test_claude_code_compaction.py (a manual /compact with a faithful
summary, an automatic compaction with a lossy one) against the mock and prints, for each, a
Markdown table of the channels the model (or the summarizer) read: how many of the 180 rules
each carried verbatim and how many characters it was. docs/compaction.md shows its output.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> Any:
    if name in sys.modules:  # tests/e2e/conftest.py loads the harness under the same name
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


harness = _load("e2e_harness", HERE / "harness.py")
scenario = _load("e2e_compaction", HERE / "test_claude_code_compaction.py")
RULES: list[str] = scenario.RULES


def counted(text: str) -> str:
    return f"{sum(1 for rule in RULES if rule in text)}/180"


def report(box: Any, name: str, prompts: tuple[str, ...], summary: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="channels-"))
    project = harness.make_project(root / "p", harness.load_settings_example())
    before = len(box.requests())
    done = scenario.run(box, project, summary, prompts)
    requests = [r for r in box.requests()[before:] if r.path != "/"]
    (compaction,) = [r for r in requests if r.reply == "compact_summary"]
    after = done.requests
    first = after[0]
    instructions = compaction.texts("user")[-1].partition("Additional Instructions:")[2]
    kept = scenario.summary_of(first)
    record = scenario.harness_text(first.messages[0])
    echo = record[record.find("PreCompact [") :] if "PreCompact [" in record else ""
    rows = [
        ("PreCompact instructions (to the summarizer)", instructions),
        ("the summary the model keeps", kept),
        ("the /compact record (PreCompact's stdout, echoed)", echo),
    ]
    for text in scenario.contexts(first, scenario.SESSION_CONTEXT):
        label = "SessionStart(compact)" if scenario.COMPACT_LINE in text else "SessionStart(resume)"
        rows.append((label, text))
    for text in scenario.contexts(first, scenario.PROMPT_CONTEXT):
        rows.append(("UserPromptSubmit", text))
    everything = scenario.request_text(first)
    print(f"\n### {name}\n")
    print("| channel | rules verbatim | characters |")
    print("| --- | ---: | ---: |")
    for label, text in rows:
        print(f"| {label} | {counted(text)} | {len(text):,} |")
    absent = sum(1 for rule in RULES if rule not in everything)
    extra = sum(1 for rule in RULES if everything.count(rule) - kept.count(rule) > 1)
    print(f"| **first request after the compaction** | {180 - absent}/180 | |")
    print(f"\nRules more than once besides the summary: {extra}. ", end="")
    last = scenario.request_text(after[-1])
    extra = sum(1 for rule in RULES if last.count(rule) - kept.count(rule) > 1)
    print(f"In the last resumed turn's request: {extra}.")


def report_opencode(box: Any, name: str, scenario_run: Any, summary: str) -> None:
    """The same table for one OpenCode 1.18.33 scenario of opencode/test_opencode_compaction.py."""
    oc = sys.modules["e2e_opencode_compaction"]
    done = scenario_run(box, Path(tempfile.mkdtemp(prefix="channels-oc-")) / "p", summary)
    first = done.first
    kept = done.summary(first)
    rows = [
        ("experimental.session.compacting (to the summarizer)", done.instructions()),
        ("the summary the model keeps", kept),
        ("system prompt (experimental.chat.system.transform)", oc.system_prompt(first)),
        ("one-time restatement (post-compact's `restate`)", oc.restatement(first)),
    ]
    print(f"\n### {name}\n")
    print("| channel | rules verbatim | characters |")
    print("| --- | ---: | ---: |")
    for label, text in rows:
        print(f"| {label} | {counted(text)} | {len(text):,} |")
    everything = oc.request_text(first)
    absent = sum(1 for rule in RULES if rule not in everything)
    extra = sum(1 for rule in RULES if everything.count(rule) - kept.count(rule) > 1)
    print(f"| **first request after the compaction** | {180 - absent}/180 | |")
    later = oc.request_text(done.resumed)
    print(
        f"\nRules more than once besides the summary: {extra}. In the next turn's request: "
        f"{sum(1 for rule in RULES if later.count(rule) - kept.count(rule) > 1)} more than once, "
        f"{sum(1 for rule in RULES if rule in later)}/180 present."
    )


def main_opencode() -> None:
    sys.modules.setdefault("e2e_channels", sys.modules[__name__])
    oc_harness = _load("e2e_opencode_harness", HERE / "opencode" / "harness.py")
    oc = _load("e2e_opencode_compaction", HERE / "opencode" / "test_opencode_compaction.py")
    binary = oc_harness.opencode_binary()
    assert binary is not None, "run `npm ci` in tests/e2e/opencode first"
    root = Path(tempfile.mkdtemp(prefix="channels-oc-box-"))
    box = oc_harness.Sandbox(root, oc_harness.detect_isolation(), binary)
    box.start()
    try:
        name = "manual compaction (opencode serve), faithful summary"
        report_opencode(box, name, oc.run_manual, scenario.FAITHFUL)
        name = "auto compaction after a dispatch, lossy summary (10 dropped, 5 altered)"
        report_opencode(box, name, oc.run, scenario.lossy_summary())
        name = "auto compaction, a summary that kept no rule"
        report_opencode(box, name, oc.run, oc.EMPTY)
    finally:
        box.stop()


def main() -> None:
    if sys.argv[1:] == ["--opencode"]:
        main_opencode()
        return
    isolation = harness.detect_isolation()
    box = harness.Sandbox(Path(tempfile.mkdtemp(prefix="channels-box-")), isolation)
    box.start()
    try:
        name = "manual /compact, faithful summary (copies what the instructions list)"
        report(box, name, scenario.MANUAL, scenario.FAITHFUL)
        name = "auto compaction at a turn's start, lossy summary (10 dropped, 5 altered)"
        report(box, name, scenario.AUTO, scenario.lossy_summary())
    finally:
        box.stop()


if __name__ == "__main__":
    main()
