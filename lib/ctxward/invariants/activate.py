"""Activation: a skill's rules written into `docs/plans/<slug>/invariants.md` (seed 003)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from ctxward.core.fsutil import (
    atomic_write,
    locked,
    read_regular,
    sha256_hex,
)
from ctxward.core.project import Project
from ctxward.errors import BadInput, CtxwardError
from ctxward.invariants.model import INVARIANTS_FILE, Activation, Section, validate_slug
from ctxward.invariants.read import parse_sections
from ctxward.invariants.skills import find_skill, full_rules_reference, load_skill
from ctxward.invariants.trust import is_trusted, record


def current_branch(root: Path) -> str:
    """Return the checked-out git branch of `root`, or '' outside git or on a detached HEAD."""
    import subprocess  # only activation and plan clean ask git; the hooks never do

    try:
        result = subprocess.run(
            ["git", "-C", str(root), "symbolic-ref", "--short", "-q", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def branch_exists(root: Path, branch: str) -> bool:
    """True when `branch` is a local branch of `root` (or the unborn branch HEAD points at)."""
    if branch == current_branch(root):
        return True
    import subprocess

    try:
        result = subprocess.run(
            ["git", "-C", str(root), "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise CtxwardError(f"cannot ask git whether branch {branch!r} exists: {exc}") from None
    return result.returncode == 0


def activate(project: Project, spec: str, slug: str, *, now: datetime | None = None) -> Activation:
    """Write (or replace) the skill's section in docs/plans/<slug>/invariants.md."""
    from ctxward.core.render import render
    from ctxward.core.scrub import redact

    validate_slug(slug)
    skill = load_skill(find_skill(spec, project))
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    branch = current_branch(project.root)
    section = render(
        "invariants/invariants_section.md.j2",
        section=Section(
            skill=skill.name,
            rules=tuple(redact(rule) for rule in skill.rules),  # a plan file is never a leak
            full_rules=full_rules_reference(project, skill),
            activated=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            branch=branch,
            priority=str(skill.priority) if skill.priority else "",
        ),
    )
    folder = project.plans_dir / slug
    path = folder / INVARIANTS_FILE
    if folder.is_symlink() or path.is_symlink():
        raise BadInput(f"{project.relative(path)}: refusing to write through a symbolic link")
    with locked(path, project.locks_dir):
        existing = _read_existing(path, project)
        text, replaced = splice_section(existing, skill.name, section)
        if not existing:
            text = render("invariants/invariants_file.md.j2", sections=section)
        atomic_write(path, text, validate=_validate_invariants_bytes)
        # What activate writes is trusted, unless the plan arrived untrusted: the sections it
        # already held (a cloned repository's) are still nobody's choice on this machine.
        trusted = not parse_sections(existing) or is_trusted(path, sha256_hex(existing))
        if trusted:
            record(path, sha256_hex(text), slug=slug, rules=_rule_count(text), by="activate")
    return Activation(path=path, skill=skill, replaced=replaced, branch=branch, trusted=trusted)


def _rule_count(text: str) -> int:
    return sum(len(section.rules) for section in parse_sections(text))


def _read_existing(path: Path, project: Project) -> str:
    if not path.is_file():
        return ""
    try:
        return read_regular(path).decode("utf-8")
    except OSError as exc:
        raise BadInput(f"{project.relative(path)}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"{project.relative(path)}: not UTF-8 (byte {exc.start}); fix or remove it first"
        ) from None


def _validate_invariants_bytes(data: bytes) -> None:
    parse_sections(data.decode("utf-8"))


def splice_section(text: str, skill: str, section: str) -> tuple[str, bool]:
    """Replace the `## <skill>` section of `text` with `section`, or append it; keep the rest."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == f"## {skill}"), None)
    if start is None:
        body = text.rstrip("\n")
        return (f"{body}\n\n{section}" if body else section), False
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + tail if tail else ""), True
