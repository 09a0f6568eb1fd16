"""Reading plans back, standard library only: the sections of a plan, every active plan, and the
plans the compaction hooks may present (trusted, on this branch).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ctxward.core.fsutil import (
    read_regular,
    sha256_hex,
)
from ctxward.core.project import PLANS_RELDIR, Project
from ctxward.errors import BadInput
from ctxward.invariants.model import INVARIANTS_FILE, SLUG_PATTERN, Plan, Section, validate_slug
from ctxward.invariants.trust import trusted_split


def parse_sections(text: str) -> list[Section]:
    """Read the `## <skill>` sections of an invariants.md or payload (standard library only)."""
    sections: list[Section] = []
    fields: dict[str, str] = {}
    rules: list[str] = []
    skill: str | None = None
    in_rules = False

    def close() -> None:
        if skill is not None:
            sections.append(Section(skill=skill, rules=tuple(rules), **fields))

    for line in text.splitlines():
        if line.startswith("## "):
            close()
            skill, fields, rules, in_rules = line[3:].strip(), {}, [], False
        elif skill is None:
            continue
        elif line.startswith("### "):
            in_rules = line[4:].strip().lower().startswith("rules")
        elif in_rules and line.startswith("- "):
            rules.append(line[2:])
        else:
            for label, key in _FIELD_LABELS:
                if line.startswith(label):
                    fields[key] = line[len(label) :].strip()
    close()
    return sections


_FIELD_LABELS = (
    ("**Activated:** ", "activated"),
    ("**Full rules:** ", "full_rules"),
    ("**Branch:** ", "branch"),
    ("**Priority:** ", "priority"),
)


def load_plan(folder: Path, label: str | None = None) -> Plan:
    """Read one plan folder's invariants.md (`label` names it in errors; default: its path).

    A plan past `limits.MAX_PLAN_BYTES` or `MAX_PLAN_RULES` is refused (BadInput): every
    compaction hook reads, distils and checks every plan, within its time budget.
    """
    from ctxward.core.limits import MAX_PLAN_BYTES, MAX_PLAN_RULES

    path = folder / INVARIANTS_FILE
    name = label or str(path)
    try:
        raw = read_regular(path, limit=MAX_PLAN_BYTES)
    except FileNotFoundError:
        raise  # completed since it was listed: load_plans skips it
    except OSError as exc:  # unreadable (EACCES), a folder
        raise BadInput(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{name}: not UTF-8 (byte {exc.start})") from None
    sections = tuple(parse_sections(text))
    rules = sum(len(section.rules) for section in sections)
    if rules > MAX_PLAN_RULES:
        raise BadInput(f"{name}: cannot read: {rules:,} rules, more than {MAX_PLAN_RULES:,}")
    return Plan(
        slug=folder.name,
        folder=folder,
        sections=sections,
        source_sha256=sha256_hex(raw),
    )


def plan_folders(project: Project) -> list[Path]:
    """Every docs/plans/<slug>/ that holds a regular invariants.md, sorted (see `scan_plans`)."""
    return scan_plans(project)[0]


def scan_plans(project: Project) -> tuple[list[Path], list[str]]:
    """The plan folders to read, sorted by slug, and one line for each plan refused on the way.

    Nothing is followed: a repository may commit `docs`, `docs/plans`, a plan folder or an
    invariants.md as a symbolic link to anywhere. A linked `docs` or `docs/plans` yields no plans
    and one line; a linked plan folder or invariants.md, and an invariants.md that is not a
    regular file (a folder; a FIFO, whose read would block), are refused and named. Entries
    whose name is not a slug are not plans and are passed over.
    """
    where = project.root
    for part in PLANS_RELDIR.parts:
        where = where / part
        try:
            mode = os.lstat(where).st_mode
        except (FileNotFoundError, NotADirectoryError):  # no docs/plans/: no plans
            return [], []
        except OSError as exc:  # one we may not look at, a path too long: said, not hidden
            return [], [f"{project.relative(where)}: cannot read: {exc.strerror}"]
        if stat.S_ISLNK(mode):
            return [], [f"{project.relative(where)}: {_LINK_REFUSED}"]
        if not stat.S_ISDIR(mode):
            return [], []
    try:
        with os.scandir(where) as found:
            entries = sorted(
                (entry for entry in found if SLUG_PATTERN.fullmatch(entry.name)),
                key=lambda entry: entry.name,
            )
    except OSError as exc:  # unlistable (EACCES): no plans, and one line saying why
        return [], [f"{project.relative(where)}: cannot list: {exc.strerror}"]
    folders: list[Path] = []
    problems: list[str] = []
    for entry in entries:
        folder = where / entry.name
        if entry.is_symlink():
            problems.append(f"{project.relative(folder)}: {_LINK_REFUSED}")
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        path = folder / INVARIANTS_FILE
        try:
            mode = os.lstat(path).st_mode
        except PermissionError as exc:  # a folder we may not look into (chmod 0)
            problems.append(f"{project.relative(path)}: cannot read: {exc.strerror}")
            continue
        except OSError:
            continue  # no plan here (completed)
        if stat.S_ISREG(mode):
            folders.append(folder)
        elif stat.S_ISLNK(mode):
            problems.append(f"{project.relative(path)}: {_LINK_REFUSED}")
        else:
            problems.append(f"{project.relative(path)}: not a regular file (a folder, a FIFO?)")
    return folders, problems


_LINK_REFUSED = "a symbolic link; refused (ctxward reads no plan through a link)"


def load_plans(project: Project) -> list[Plan]:
    """Every active plan (see `scan_plans`); one completed while we read is left out.

    BadInput for a plan that cannot be read: the commands stop there (a plan refused on the way
    is left out). The compaction hooks use `readable_plans` instead, so that one broken plan
    does not take the others' rules with it.
    """
    return _plans(project, strict=True)[0]


def readable_plans(project: Project) -> tuple[list[Plan], list[str]]:
    """Every active plan that can be read, and a one-line problem for each that cannot."""
    return _plans(project, strict=False)


def _plans(project: Project, *, strict: bool) -> tuple[list[Plan], list[str]]:
    folders, refused = scan_plans(project)
    plans: list[Plan] = []
    unreadable: list[str] = []
    for folder in folders:
        try:
            plans.append(load_plan(folder, project.relative(folder / INVARIANTS_FILE)))
        except FileNotFoundError:
            continue
        except BadInput as exc:
            if strict:
                raise
            unreadable.append(str(exc))
    return plans, sorted(unreadable + refused)  # each line starts with its path


def plans_for_the_model(
    project: Project, gone: list[Plan] | None = None
) -> tuple[list[Plan], list[Plan], list[str]]:
    """What the compaction hooks may present: (trusted plans with rules that apply on the
    branch checked out now, untrusted plans with rules, one line for each plan that cannot be
    read or was refused).

    The untrusted ones are only ever counted (`trust.untrusted_notice`), never shown. Trusted
    plans of another branch are left out (`plans.scope`); those whose every branch is gone are
    left out too, and added to `gone` when given (PreCompact completes them).
    """
    from ctxward.invariants.plans import scope

    readable, problems = readable_plans(project)
    trusted, untrusted = trusted_split([plan for plan in readable if plan.rule_count])
    scoped = scope(project, trusted)
    if gone is not None:
        gone.extend(scoped.gone)
    return list(scoped.applies), untrusted, problems


def find_plan(project: Project, slug: str) -> Plan:
    validate_slug(slug)
    folder = project.plans_dir / slug
    if not (folder / INVARIANTS_FILE).is_file():
        raise BadInput(f"no active plan {slug!r} (no {project.relative(folder)}/{INVARIANTS_FILE})")
    return load_plan(folder, project.relative(folder / INVARIANTS_FILE))
