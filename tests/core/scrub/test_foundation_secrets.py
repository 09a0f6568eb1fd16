"""A secret pasted into a rule never reaches a plan file, payload, injection or report."""

from __future__ import annotations

import json
import random
import string

from ctxward.core.project import Project
from ctxward.invariants.read import load_plans


def fake_github_token() -> str:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    return "gh" + "p_" + "".join(rng.choice(alphabet) for _ in range(36))


def test_a_secret_in_a_rule_is_redacted_everywhere_ctxward_writes_or_injects(
    project, make_skill, activate_skill, load_payload, run_hook
):
    token = fake_github_token()
    make_skill("alpha", [f"Deploy with GITHUB_TOKEN={token} only", "Never force-push"])
    activate_skill("alpha")
    code, instructions, _ = run_hook(load_payload("PreCompact.json", trigger="auto"))
    assert code == 0
    code, started, _ = run_hook(load_payload("SessionStart.compact.json"))
    assert code == 0
    summary = f"<summary>Deploy with GITHUB_TOKEN={token} only</summary>"
    assert run_hook(load_payload("PostCompact.json", compact_summary=summary))[0] == 0

    written = [  # everything but the user's own skill file and git's folder
        p
        for p in project.rglob("*")
        if p.is_file() and not {".git", ".claude"} & set(p.relative_to(project).parts)
    ]
    assert any(p.name == "invariants.md" for p in written)
    assert any(p.parent.name == "compactions" for p in written)
    fragments = {token[i : i + 8] for i in range(len(token) - 7)}
    for text in [instructions, started, *(p.read_text(encoding="utf-8") for p in written)]:
        assert not any(fragment in text for fragment in fragments)
    context = json.loads(started)["hookSpecificOutput"]["additionalContext"]
    assert "[REDACTED:github_token]" in context
    assert "Never force-push" in context
    plan = load_plans(Project(project))[0]
    assert plan.sections[0].rules[1] == "Never force-push"
