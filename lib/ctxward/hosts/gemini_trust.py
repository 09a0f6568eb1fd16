"""Whether Gemini CLI trusts a project folder: it runs a project's hooks only then.

Gemini CLI 0.61.0 ignores a project's `.gemini/settings.json` (its hooks included) in a folder
it does not trust, and headless it refuses to start there ("Gemini CLI is not running in a
trusted directory", seen). The user's choices live in `~/.gemini/trustedFolders.json`
(`$GEMINI_CLI_TRUSTED_FOLDERS_PATH` overrides the path; `$GEMINI_CLI_HOME` replaces the home):
`{"<abs path>": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}`, the longest matching path
wins, TRUST_PARENT trusting its parent's tree (the CLI's `isPathTrusted`). Folder trust is on
unless the user's settings say `security.folderTrust.enabled: false`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxward.core.project import Project
    from ctxward.setup.diagnosis import Check

TRUSTED = ("TRUST_FOLDER", "TRUST_PARENT")
FIX = "trust the folder once in an interactive `gemini` (or headless: --skip-trust)"


def trust_file(env: Mapping[str, str]) -> Path:
    override = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    if override:
        return Path(override)
    return _gemini_dir(env) / "trustedFolders.json"


def _gemini_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"


def _read(path: Path) -> Any:
    with open(path, "rb") as handle:
        return json.loads(handle.read(1024 * 1024))


def verdict(folder: Path, rules: Mapping[str, Any]) -> bool | None:
    """True/False as Gemini CLI decides for `folder`; None when no rule matches."""
    target = os.path.realpath(folder)
    best, level = -1, None
    for rule, trust in rules.items():
        if not isinstance(rule, str) or not isinstance(trust, str):
            continue
        base = os.path.dirname(rule) if trust == "TRUST_PARENT" else rule
        base = os.path.realpath(base)
        inside = target == base or target.startswith(base.rstrip(os.sep) + os.sep)
        if inside and len(rule) > best:
            best, level = len(rule), trust
    if level == "DO_NOT_TRUST":
        return False
    return True if level in TRUSTED else None


def trust_check(project: Project, env: Mapping[str, str]) -> Check:
    """doctor's check: does Gemini CLI run this project's hooks?"""
    from ctxward.setup.diagnosis import FAIL, OK, WARN, Check

    ident = "gemini.trust"
    try:
        settings = _read(_gemini_dir(env) / "settings.json")
        enabled = settings.get("security", {}).get("folderTrust", {}).get("enabled", True)
    except (OSError, ValueError, AttributeError):
        enabled = True
    if enabled is False:
        return Check(ident, OK, "Gemini CLI: folder trust is off; project hooks run everywhere")
    path = trust_file(env)
    try:
        rules = _read(path)
    except FileNotFoundError:
        rules = {}
    except (OSError, ValueError) as exc:
        return Check(ident, WARN, f"Gemini CLI: {path} cannot be read", str(exc), FIX)
    if not isinstance(rules, dict):
        return Check(ident, WARN, f"Gemini CLI: {path} is not an object", "", FIX)
    found = verdict(project.root, rules)
    if found:
        return Check(ident, OK, "Gemini CLI trusts this folder: its project hooks run")
    if found is False:
        return Check(
            ident,
            FAIL,
            "Gemini CLI distrusts this folder: it ignores .gemini/settings.json (ctxward's hooks)",
            f"DO_NOT_TRUST in {path}",
            FIX,
        )
    return Check(
        ident,
        WARN,
        "Gemini CLI does not trust this folder yet: until it does, .gemini/settings.json "
        "(ctxward's hooks) is ignored",
        f"no rule in {path} covers it",
        FIX,
    )
