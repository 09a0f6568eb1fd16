"""Invariants: activate a skill's rules into a plan, read them back, distill, verify survival.

The plan file `docs/plans/<slug>/invariants.md` follows seed 003's template; one `## <skill>`
section per skill, rules verbatim as bullets. Reading it back needs only the standard library,
so the compaction hooks stay cheap; writing it renders templates (Jinja2) and reads skills (YAML).

A repository can commit any of it: plans are listed and read without following a symbolic link
(`scan_plans`), and only a plan whose exact content this user trusted (`invariants.trust`) is
presented to the summarizer or the model (`plans_for_the_model`), from the bytes whose hash was
checked. The distilled `.compaction-payload.md` is written for trusted plans and read by nobody
who speaks to the model: a committed one may claim any source digest.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from pathlib import Path

from ctxward.core.fsutil import (
    atomic_write,
    atomic_write_many,
    locked,
    read_named,
    read_regular,
    sha256_hex,
)
from ctxward.core.project import PLANS_RELDIR, Project
from ctxward.core.values import Value
from ctxward.errors import BadInput, CtxwardError
from ctxward.invariants.trust import is_trusted, record, trusted_split

INVARIANTS_FILE = "invariants.md"
PAYLOAD_FILE = ".compaction-payload.md"
SLUG_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
SKILL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
MAX_SKILL_BYTES = 1024 * 1024  # a skill file (front matter and prose); real ones are a few KB
# Characters str.splitlines() breaks on: a rule containing one is not a single line.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_PAYLOAD_SOURCE = re.compile(r"<!-- ctxward: distilled from .* sha256=([0-9a-f]{64}) ")
# A shipped pack's full rules, as a plan names them (the command prints its SKILL.md).
_PACK_REFERENCE = "`ctxward packs {name}` (shipped with ctxward)"
SKILL_SEARCH_PATHS = (
    Path(".claude/skills/{name}/SKILL.md"),
    Path(".gemini/skills/{name}/SKILL.md"),  # Gemini CLI's workspace skills (0.61.0)
    Path(".opencode/skill/{name}/SKILL.md"),
    Path(".opencode/skills/{name}/SKILL.md"),
    # Codex CLI 0.169.0 lists the skills of both project folders (hosts/codex.py).
    Path(".codex/skills/{name}/SKILL.md"),
    Path(".agents/skills/{name}/SKILL.md"),
)


# Value, not @dataclass: the compaction hooks build these in a fresh interpreter on every run,
# where `import dataclasses` and the class creation alone cost more than reading the plans.


class Skill(Value):
    __slots__ = ("name", "path", "priority", "rules")
    name: str
    rules: tuple[str, ...]
    path: Path
    priority: int  # front matter `priority:`; a higher one gets the room first (rulesets)

    def __init__(self, name: str, rules: tuple[str, ...], path: Path, priority: int = 0) -> None:
        self._set(name=name, rules=rules, path=path, priority=priority)


class Section(Value):
    """One skill's block in a plan's invariants.md (or its distilled payload)."""

    __slots__ = ("activated", "branch", "full_rules", "priority", "rules", "skill")
    skill: str
    rules: tuple[str, ...]
    full_rules: str
    activated: str
    branch: str
    priority: str  # the skill's `priority:` as the plan records it ('' = 0)

    def __init__(
        self,
        skill: str,
        rules: tuple[str, ...],
        full_rules: str = "",
        activated: str = "",
        branch: str = "",
        priority: str = "",
    ) -> None:
        self._set(
            skill=skill,
            rules=rules,
            full_rules=full_rules,
            activated=activated,
            branch=branch,
            priority=priority,
        )

    @property
    def rank(self) -> int:
        """The section's priority as a number (0 when absent or not a whole number)."""
        try:
            return int(self.priority) if self.priority else 0
        except ValueError:
            return 0


class Plan(Value):
    __slots__ = ("folder", "sections", "slug", "source_sha256")
    slug: str
    folder: Path
    sections: tuple[Section, ...]
    source_sha256: str

    def __init__(
        self, slug: str, folder: Path, sections: tuple[Section, ...], source_sha256: str
    ) -> None:
        self._set(slug=slug, folder=folder, sections=sections, source_sha256=source_sha256)

    @property
    def invariants_path(self) -> Path:
        return self.folder / INVARIANTS_FILE

    @property
    def payload_path(self) -> Path:
        return self.folder / PAYLOAD_FILE

    @property
    def rule_count(self) -> int:
        return sum(len(section.rules) for section in self.sections)

    def payload_state(self) -> str:
        """'fresh' when the payload says it was distilled from the current invariants.md.

        For people (`plan list`, `doctor`, `watch`): the header is a claim, and nothing that
        reaches the model is read from a payload; PreCompact rewrites any that differs.
        """
        if not self.payload_path.exists():
            return "missing"
        return "stale" if self.fresh_payload() is None else "fresh"

    def fresh_payload(self) -> str | None:
        """The payload's text when its header names the current invariants.md's sha256."""
        from ctxward.core.limits import MAX_PLAN_BYTES

        try:  # a payload is its plan's rules again: one far larger than a plan is not ours
            text = read_regular(self.payload_path, limit=2 * MAX_PLAN_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError):  # missing, unreadable, not ours, too large
            return None
        match = _PAYLOAD_SOURCE.match(text.split("\n", 1)[0])
        return text if match and match.group(1) == self.source_sha256 else None


class RuleRef(Value):
    __slots__ = ("rule", "skill", "slug")
    slug: str
    skill: str
    rule: str

    def __init__(self, slug: str, skill: str, rule: str) -> None:
        self._set(slug=slug, skill=skill, rule=rule)

    @property
    def fingerprint(self) -> str:
        """The rule's normalised fingerprint (`ctxward.core.fingerprint`)."""
        from ctxward.core.fingerprint import fingerprint

        return fingerprint(self.rule)


class Activation(Value):
    """What `activate` wrote; `trusted`: whether the plan's new content is trusted here."""

    __slots__ = ("branch", "path", "replaced", "skill", "trusted")
    path: Path
    skill: Skill
    replaced: bool
    branch: str
    trusted: bool

    def __init__(
        self, path: Path, skill: Skill, replaced: bool, branch: str, trusted: bool
    ) -> None:
        self._set(path=path, skill=skill, replaced=replaced, branch=branch, trusted=trusted)


# --- validation -------------------------------------------------------------------------------


def validate_slug(slug: str) -> str:
    """Return `slug` when it is a safe plan folder name, else raise BadInput."""
    if not SLUG_PATTERN.fullmatch(slug) or ".." in slug:
        raise BadInput(
            f"invalid slug {slug!r}: use 1-64 characters of a-z 0-9 . _ -, "
            "starting with a letter or digit, with no '..'"
        )
    return slug


def _validate_rules(value: object, source: str) -> tuple[str, ...]:
    if value is None:
        raise BadInput(f"{source}: front matter has no 'invariants' list")
    if not isinstance(value, list) or not value:
        raise BadInput(f"{source}: 'invariants' must be a non-empty list of strings")
    rules = []
    for index, rule in enumerate(value):
        if not isinstance(rule, str):
            raise BadInput(
                f"{source}: invariants[{index}] is a {type(rule).__name__}, not a string"
            )
        if not rule.strip():
            raise BadInput(f"{source}: invariants[{index}] is empty")
        if _LINE_BREAKS.intersection(rule):
            raise BadInput(f"{source}: invariants[{index}] spans several lines; keep it to one")
        rules.append(rule)
    return tuple(rules)


# --- skills -----------------------------------------------------------------------------------


def load_skill(path: Path) -> Skill:
    """Read a skill file's front matter into a Skill; BadInput names the file and the problem."""
    from ctxward.core import frontmatter

    source = str(path)
    try:
        raw = read_named(path, limit=MAX_SKILL_BYTES)  # a FIFO or a device: refused, not awaited
    except OSError as exc:  # no permission, say (missing, a folder, too large: BadInput already)
        raise BadInput(f"{source}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{source}: not UTF-8 (byte {exc.start})") from None
    meta = frontmatter.parse(text, source=source).meta
    name = meta.get("name")
    if not isinstance(name, str) or not SKILL_NAME_PATTERN.fullmatch(name):
        raise BadInput(f"{source}: 'name' must be a skill name like 'deep-review', got {name!r}")
    priority = meta.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise BadInput(f"{source}: 'priority' must be a whole number, got {priority!r}")
    rules = _validate_rules(meta.get("invariants"), source)
    return Skill(name=name, rules=rules, path=path, priority=priority)


def find_skill(spec: str, project: Project) -> Path:
    """Resolve SKILL (a path, or a name looked up in the project, then the shipped packs)."""
    candidate = Path(spec)
    if candidate.suffix == ".md" or "/" in spec:
        return candidate if candidate.is_absolute() else Path.cwd() / candidate
    if not SKILL_NAME_PATTERN.fullmatch(spec):
        raise BadInput(f"{spec!r} is neither a skill file nor a skill name")
    from ctxward.core.paths import data_dir

    searched = [
        project.root / pattern.as_posix().format(name=spec) for pattern in SKILL_SEARCH_PATHS
    ]
    searched.append(data_dir("invariants") / spec / "SKILL.md")
    for path in searched:
        if path.is_file():
            return path
    raise BadInput(
        f"no skill named {spec!r} (looked in .claude/skills, .opencode/skill(s), .codex/skills, "
        ".agents/skills and the shipped packs; `ctxward packs` lists the shipped ones)"
    )


def shipped_packs() -> list[Skill]:
    """Every invariant pack shipped in invariants/."""
    from ctxward.core.paths import data_dir

    return [load_skill(path) for path in sorted(data_dir("invariants").glob("*/SKILL.md"))]


def pack_text(name: str) -> str:
    """The SKILL.md of the shipped pack `name` (BadInput when there is none)."""
    from ctxward.core.paths import data_dir

    if SKILL_NAME_PATTERN.fullmatch(name):
        path = data_dir("invariants") / name / "SKILL.md"
        if path.is_file():
            return read_regular(path, follow_links=True).decode("utf-8")
    raise BadInput(f"no shipped pack named {name!r} (`ctxward packs` lists them)")


def full_rules_reference(project: Project, skill: Skill) -> str:
    """Where a plan says the skill's full rules are: a project-relative path, or for a shipped
    pack the command that prints it — never a path into the installed package, which a
    reinstall moves and which names one machine's home folder in a committed plan."""
    from ctxward.core.paths import data_dir

    shipped = data_dir("invariants").resolve()
    if skill.path.resolve().is_relative_to(shipped):
        return _PACK_REFERENCE.format(name=skill.name)
    return project.relative(skill.path)


def full_rules_path(project: Project, reference: str) -> Path | None:
    """The skill file a section's full-rules reference names (`full_rules_reference`)."""
    if not reference:
        return None
    before, _, after = _PACK_REFERENCE.partition("{name}")
    named = f"{re.escape(before)}({SKILL_NAME_PATTERN.pattern}){re.escape(after)}"
    pack = re.fullmatch(named, reference)
    if pack:
        from ctxward.core.paths import data_dir

        return data_dir("invariants") / pack.group(1) / "SKILL.md"
    path = Path(reference)
    return (path if path.is_absolute() else project.root / path).resolve()


# --- activation -------------------------------------------------------------------------------


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
        "invariants_section.md.j2",
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
            text = render("invariants_file.md.j2", sections=section)
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


# --- reading back -----------------------------------------------------------------------------


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


# --- distillation -----------------------------------------------------------------------------


def render_payload(project: Project, plan: Plan) -> str:
    from ctxward.core.render import render
    from ctxward.core.scrub import redact

    return redact(
        render(
            "compaction_payload.md.j2",
            plan=plan,
            source=project.relative(plan.invariants_path),
        )
    )


def distill(project: Project, plan: Plan) -> bool:
    """Write the plan's .compaction-payload.md; False when it was already identical.

    CtxwardError naming the payload when it cannot be written.
    """
    written, problems = distill_all(project, [plan])
    if problems:
        raise CtxwardError(problems[0])
    return bool(written)


def distill_all(project: Project, plans: Sequence[Plan]) -> tuple[list[Path], list[str]]:
    """Write every plan's .compaction-payload.md; return the payloads that changed, and one
    line for each that could not be written.

    One bad payload costs only itself: a payload path that is a link, a folder or a FIFO is
    named and left alone, and a write that fails (a full disk, a read-only folder) is named
    while the others are still written. One lock covers every payload of the project:
    PreCompact distills them all at once (the host may fire it several times for one
    compaction), and a lock per file cost as much as the write.
    """
    if not plans:
        return [], []  # no lock either: a project without plans gets no .ctxward/
    problems: list[str] = []
    texts: list[tuple[Path, str | bytes]] = []
    for plan in plans:
        refused = _unwritable_payload(plan.payload_path)
        if refused:
            problems.append(f"{project.relative(plan.payload_path)}: {refused}")
        else:
            texts.append((plan.payload_path, render_payload(project, plan)))
    try:
        with payloads_locked(project):
            try:
                return atomic_write_many(texts), problems
            except (CtxwardError, OSError):
                pass  # which one? each on its own, below (the batch's written ones are equal)
            written = []
            for path, text in texts:
                try:
                    if atomic_write(path, text):
                        written.append(path)
                except (CtxwardError, OSError) as exc:
                    problems.append(f"{project.relative(path)}: not written: {_why(exc)}")
            return written, problems
    except (CtxwardError, OSError) as exc:  # the lock itself: .ctxward/locks/ cannot be used
        return [], [*problems, f"{_PAYLOADS_GLOB}: none written: {_why(exc)}"]


_PAYLOADS_GLOB = f"{PLANS_RELDIR.as_posix()}/*/{PAYLOAD_FILE}"


def _unwritable_payload(path: Path) -> str:
    """Why ctxward will not replace the payload at `path` ('' when it may): one lstat."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"not written: {_why(exc)}"
    if stat.S_ISLNK(mode):
        return "a symbolic link; not written through"
    if not stat.S_ISREG(mode):
        return "not a regular file (a folder, a FIFO?); not replaced"
    return ""


def _why(exc: Exception) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else None) or str(exc)


def payloads_locked(project: Project) -> AbstractContextManager[None]:
    """The lock every writer (and remover) of a plan's payload holds."""
    return locked(project.plans_dir / PAYLOAD_FILE, project.locks_dir)


def all_rules(plans: Iterable[Plan]) -> list[RuleRef]:
    return [
        RuleRef(plan.slug, section.skill, rule)
        for plan in plans
        for section in plan.sections
        for rule in section.rules
    ]


# --- survival ---------------------------------------------------------------------------------

_SUMMARY_BLOCK = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL)


def summary_text(compact_summary: str) -> str:
    """The part of a compaction reply the model keeps: the <summary> block when there is one.

    Claude Code strips the <analysis> block before handing the summary to the model (with or
    without a <summary> block), so a rule that survives only in the analysis did not survive.
    """
    kept = _without_analysis(compact_summary)
    blocks = _SUMMARY_BLOCK.findall(kept)
    return "\n".join(blocks) if blocks else kept


def _without_analysis(text: str) -> str:
    """`re.sub(r"<analysis>.*?</analysis>", "", text, flags=re.DOTALL)` in linear time: that
    regex scans to the end of the text from every unclosed `<analysis>` (100 KB of them: 9 s)."""
    kept = []
    cursor = 0
    while (start := text.find("<analysis>", cursor)) >= 0:
        end = text.find("</analysis>", start + len("<analysis>"))
        if end < 0:
            break  # no later tag is closed either
        kept.append(text[cursor:start])
        cursor = end + len("</analysis>")
    kept.append(text[cursor:])
    return "".join(kept)


def analysis_text(compact_summary: str) -> str:
    """The `<analysis>` blocks of a compaction reply (what the model never sees)."""
    blocks = []
    cursor = 0
    while (start := compact_summary.find("<analysis>", cursor)) >= 0:
        end = compact_summary.find("</analysis>", start + len("<analysis>"))
        if end < 0:
            break
        blocks.append(compact_summary[start + len("<analysis>") : end])
        cursor = end + len("</analysis>")
    return "\n".join(blocks)


def check_survival(
    rules: Sequence[RuleRef], compact_summary: str
) -> tuple[list[RuleRef], list[RuleRef]]:
    """Split `rules` into those the summary kept and those it altered or lost
    (`ctxward.invariants.verdicts.grade`, which says why)."""
    from ctxward.invariants.verdicts import KEPT, grade

    verdicts = grade(rules, compact_summary)
    survived = [v.ref for v in verdicts if v.verdict == KEPT]
    missing = [v.ref for v in verdicts if v.verdict != KEPT]
    return survived, missing
