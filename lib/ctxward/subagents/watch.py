"""Keep payloads, plans and artifact records fresh while files change (`ctxward watch`).

Three kinds of change matter:

- a plan's `docs/plans/<slug>/invariants.md`: its `.compaction-payload.md` is distilled again
  (invariants.distill), so the payload PreCompact would write is already on disk;
- a skill file that an active plan names on a section's **Full rules:** line (or any SKILL.md
  under .claude/skills/, .opencode/skill(s)/, .codex/skills/, .agents/skills/): when its rules no
  longer match the plan's section, the skill is activated into that plan again (the section is
  replaced in place) and the report names the rules added and removed;
- a new file under `<sub_agents>/<sid>/artifacts/` named `<rid>-<role>-<idx>.<ext>` without an
  ArtifactMeta record: it is recorded (status "created", the summary its first line; `ctxward
  artifact record` later replaces that record). The rid is read up to the first '-'.

`reconcile` is one full pass over all of them (`ctxward watch --once`, and the start of every
watch); `Watcher` runs a watchdog observer and applies changes as they come. The observer's
handler (`ChangeFilter`) only decides whether a path matters and hands a `Change` to a callback;
the callback queues it, and the thread that calls `Watcher.pump` (the CLI's main thread, so
Ctrl-C stops it) waits until the changes have been quiet for `quiet` seconds, then applies them.
A file that vanishes before it is handled is skipped; an unreadable skill or plan is reported
as a problem and left as it is.

Library code: nothing is printed; every action comes back as a `Report`.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from ctxward.core.fsutil import read_regular
from ctxward.core.project import Project
from ctxward.core.values import Value
from ctxward.errors import CtxwardError
from ctxward.invariants.activate import activate
from ctxward.invariants.distill import distill
from ctxward.invariants.model import (
    INVARIANTS_FILE,
    SKILL_SEARCH_PATHS,
    SLUG_PATTERN,
    Plan,
    Section,
)
from ctxward.invariants.read import load_plan, plan_folders
from ctxward.invariants.skills import full_rules_path, load_skill

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver, ObservedWatch

_TMP_MARK = ".ctxward-tmp-"
_ARTIFACT_NAME = re.compile(r"([A-Za-z0-9][A-Za-z0-9._]*)-([A-Za-z0-9][A-Za-z0-9._-]*)-(\d{1,9})")
# What a failed step may raise without being a bug: ctxward's own errors, I/O, bad text.
_EXPECTED = (CtxwardError, OSError, ValueError)

PLAN, SKILL, ARTIFACT, LAYOUT = "plan", "skill", "artifact", "layout"


class Change(Value):
    """A path that changed, and what kind of file it is (plan, skill, artifact or layout)."""

    kind: str
    path: Path


class Report(Value):
    """One thing watch did, or could not do. `action`: distilled, reactivated, recorded, problem."""

    action: str
    path: str
    plan: str = ""
    skill: str = ""
    detail: str = ""
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "action": self.action,
            "path": self.path,
            "plan": self.plan or None,
            "skill": self.skill or None,
            "detail": self.detail or None,
            "added": list(self.added),
            "removed": list(self.removed),
        }


class Drift(Value):
    """How a plan section compares with its skill file's current frontmatter."""

    plan: str
    section: str
    skill_path: Path | None
    state: str  # same | changed | renamed | missing | unreadable | no-path
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    problem: str = ""


# --- the drift check (also used by `ctxward doctor`) ------------------------------------------


def skill_path_of(project: Project, section: Section) -> Path | None:
    """The file a section's **Full rules:** line names (a shipped pack's by its name)."""
    return full_rules_path(project, section.full_rules)


def drift(project: Project, plan: Plan, section: Section) -> Drift:
    """Compare one section of a plan with its skill's current frontmatter."""
    path = skill_path_of(project, section)
    if path is None:
        return Drift(plan.slug, section.skill, None, "no-path")
    if not path.is_file():
        return Drift(plan.slug, section.skill, path, "missing", problem="no such file")
    try:
        skill = load_skill(path)
    except _EXPECTED as exc:
        return Drift(plan.slug, section.skill, path, "unreadable", problem=str(exc))
    added = tuple(rule for rule in skill.rules if rule not in section.rules)
    removed = tuple(rule for rule in section.rules if rule not in skill.rules)
    if skill.name != section.skill:
        problem = f"its frontmatter name is now {skill.name!r}"
        return Drift(plan.slug, section.skill, path, "renamed", added, removed, problem)
    state = "same" if skill.rules == section.rules else "changed"
    return Drift(plan.slug, section.skill, path, state, added, removed)


def plan_drifts(project: Project, plan: Plan) -> list[Drift]:
    return [drift(project, plan, section) for section in plan.sections]


# --- the actions -----------------------------------------------------------------------------


def refresh_section(project: Project, found: Drift) -> Report | None:
    """Re-activate a changed skill into its plan; a Report of what happened (None: nothing)."""
    where = project.relative(found.skill_path) if found.skill_path else ""
    if found.state in ("same", "no-path"):
        return None
    if found.state != "changed" or found.skill_path is None:
        return Report(
            "problem",
            where,
            plan=found.plan,
            skill=found.section,
            detail=f"{found.problem}; the plan keeps its rules (activate the skill again by hand)",
        )
    try:
        activate(project, str(found.skill_path), found.plan)
    except _EXPECTED as exc:
        return Report("problem", where, found.plan, found.section, detail=str(exc))
    return Report(
        "reactivated",
        where,
        plan=found.plan,
        skill=found.section,
        added=found.added,
        removed=found.removed,
    )


def refresh_payload(project: Project, folder: Path) -> Report | None:
    """Distill the plan in `folder` when its payload is missing or stale."""
    try:
        plan = load_plan(folder)
        state = plan.payload_state()
        if state == "fresh" or not distill(project, plan):
            return None
    except FileNotFoundError:
        return None  # the plan went away (completed) meanwhile
    except _EXPECTED as exc:
        path = project.relative(folder / INVARIANTS_FILE)
        return Report("problem", path, plan=folder.name, detail=str(exc))
    return Report("distilled", project.relative(plan.payload_path), plan=plan.slug, detail=state)


def record_new_artifact(project: Project, path: Path) -> Report | None:
    """Record an ArtifactMeta for an artifact that has none yet (None: not one, or recorded)."""
    from ctxward.subagents import artifacts

    match = _ARTIFACT_NAME.fullmatch(path.stem)
    if (
        match is None
        or path.name.startswith(".")
        or path.name.endswith(artifacts.META_SUFFIX)
        or path.parent.name != "artifacts"
    ):
        return None
    rid, role, idx_text = match.groups()
    session = path.parent.parent.name
    try:
        stem = artifacts.artifact_stem(rid, role, int(idx_text))
        if (path.parent / f"{stem}{artifacts.META_SUFFIX}").exists() or not path.is_file():
            return None
        summary = None
        if path.stat().st_size <= 1 << 20:
            text = read_regular(path).decode("utf-8", errors="replace")
            summary = artifacts.first_line_summary(text)
        recorded = artifacts.record_artifact(
            project,
            artifacts.check_name(session, "session"),
            path,
            rid=rid,
            role=role,
            idx=int(idx_text),
            summary=summary,
            status="created",
        )
    except FileNotFoundError:
        return None  # it vanished before it could be hashed
    except _EXPECTED as exc:
        return Report("problem", project.relative(path), detail=str(exc))
    meta = recorded.meta
    detail = f"{meta.size} bytes, sha256:{meta.sha256[:12]}, batch {recorded.batch}"
    return Report("recorded", meta.path, detail=detail)


def refresh_skill(project: Project, path: Path) -> list[Report]:
    """Re-activate the skill at `path` into every plan whose sections name it."""
    target = path.resolve()
    reports: list[Report] = []
    for plan in readable_plans(project, reports):
        touched = False
        for section in plan.sections:
            if skill_path_of(project, section) != target:
                continue
            report = refresh_section(project, drift(project, plan, section))
            if report is not None:
                reports.append(report)
                touched = touched or report.action == "reactivated"
        if touched:
            payload = refresh_payload(project, plan.folder)
            if payload is not None:
                reports.append(payload)
    return reports


def reconcile(project: Project) -> list[Report]:
    """One full pass: re-activate drifted skills, distill stale payloads, record new artifacts."""
    reports: list[Report] = []
    for plan in readable_plans(project, reports):
        for found in plan_drifts(project, plan):
            report = refresh_section(project, found)
            if report is not None:
                reports.append(report)
    for plan in readable_plans(project, []):
        payload = refresh_payload(project, plan.folder)
        if payload is not None:
            reports.append(payload)
    for path in _artifact_files(project):
        report = record_new_artifact(project, path)
        if report is not None:
            reports.append(report)
    return reports


def readable_plans(project: Project, reports: list[Report]) -> list[Plan]:
    """The active plans; a plan that cannot be read is a problem report, not a failure."""
    plans = []
    for folder in plan_folders(project):
        try:
            plans.append(load_plan(folder))
        except FileNotFoundError:
            continue
        except _EXPECTED as exc:
            where = project.relative(folder / INVARIANTS_FILE)
            reports.append(Report("problem", where, folder.name, detail=str(exc)))
    return plans


def _artifact_files(project: Project) -> list[Path]:
    try:
        root = project.sub_agents_dir
    except _EXPECTED:
        return []
    if not root.is_dir():
        return []
    return sorted(path for path in root.glob("*/artifacts/*") if path.is_file())


# --- what to watch ---------------------------------------------------------------------------


class Layout(Value):
    """The folders and files that matter to one project, at one moment."""

    root: Path
    plans_dir: Path
    skill_dirs: tuple[Path, ...]
    sub_agents_dir: Path
    skill_files: frozenset[Path] = frozenset()

    @classmethod
    def of(cls, project: Project) -> Layout:
        root = project.root.resolve()
        try:
            sub_agents = project.sub_agents_dir.resolve()
        except _EXPECTED:
            sub_agents = (project.state_dir / "sub_agents").resolve()
        skill_dirs = tuple(
            (root / pattern.parent.parent).resolve() for pattern in SKILL_SEARCH_PATHS
        )
        files = set()
        for plan in readable_plans(project, []):
            for section in plan.sections:
                path = skill_path_of(project, section)
                if path is not None:
                    files.add(path)
        return cls(root, project.plans_dir.resolve(), skill_dirs, sub_agents, frozenset(files))

    def watch_roots(self) -> dict[Path, bool]:
        """Folder -> recursive: the places to watch (missing ones are handled by `schedule`)."""
        roots = {self.plans_dir: True, self.sub_agents_dir: True}
        for folder in self.skill_dirs:
            roots[folder] = True
        for path in self.skill_files:
            if not any(_inside(path, folder) for folder, deep in roots.items() if deep):
                roots.setdefault(path.parent, False)
        return roots

    def classify(self, path: Path, is_directory: bool) -> str | None:
        """What kind of change `path` is, None when it does not matter."""
        if _TMP_MARK in path.name:
            return None
        if is_directory:
            return LAYOUT if self._structural(path) else None
        if path.name == INVARIANTS_FILE and path.parent.parent == self.plans_dir:
            return PLAN if SLUG_PATTERN.fullmatch(path.parent.name) else None
        if path in self.skill_files:
            return SKILL
        if path.name == "SKILL.md" and any(_inside(path, d) for d in self.skill_dirs):
            return SKILL
        if path.parent.name == "artifacts" and _inside(path, self.sub_agents_dir):
            from ctxward.subagents.artifacts import META_SUFFIX

            return None if path.name.endswith(META_SUFFIX) else ARTIFACT
        return None

    def _structural(self, path: Path) -> bool:
        """A folder on the way to (or inside) a watched place: new plans, sessions, skill dirs."""
        places = (self.plans_dir, self.sub_agents_dir, *self.skill_dirs)
        return any(_inside(place, path) or _inside(path, place) for place in places)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class ChangeFilter(FileSystemEventHandler):
    """The observer's handler: decides whether a path matters; `on_change` does the rest."""

    def __init__(self, layout: Callable[[], Layout], on_change: Callable[[Change], None]) -> None:
        super().__init__()
        self._layout = layout
        self._on_change = on_change

    def dispatch(self, event: FileSystemEvent) -> None:
        wanted = _DIR_EVENTS if event.is_directory else _FILE_EVENTS
        if event.event_type not in wanted:
            return
        layout = self._layout()
        paths = (
            [event.src_path, event.dest_path] if event.event_type == "moved" else [event.src_path]
        )
        for raw in paths:
            if not raw:
                continue
            text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
            path = Path(text)
            kind = layout.classify(path, event.is_directory)
            if kind is not None:
                self._on_change(Change(kind, path))


# A folder matters when it appears, goes or moves (its "modified" fires for every file in it).
_DIR_EVENTS = frozenset({"created", "deleted", "moved"})
_FILE_EVENTS = frozenset({"created", "modified", "moved", "deleted", "closed"})


# --- the watcher -----------------------------------------------------------------------------


class Watcher:
    """A watchdog observer over one project; `pump` applies what changed, debounced."""

    def __init__(self, project: Project, *, quiet: float = 0.3, max_delay: float = 3.0) -> None:
        self.project = project
        self.quiet = quiet  # seconds without a new change before a batch is applied
        self.max_delay = max_delay  # a batch is applied after this long even if changes go on
        self._queue: queue.Queue[Change] = queue.Queue()
        self._lock = threading.Lock()
        self._layout: Layout | None = None
        self._watches: dict[Path, ObservedWatch] = {}
        self._observer: BaseObserver | None = None
        self.handler = ChangeFilter(lambda: self.layout, self._queue.put)

    @property
    def layout(self) -> Layout:
        with self._lock:
            if self._layout is None:
                self._layout = Layout.of(self.project)
            return self._layout

    @property
    def watched(self) -> list[Path]:
        """The folders being watched now."""
        return sorted(self._watches)

    def start(self) -> list[Report]:
        """Start the observer, then reconcile once (what changed while nobody watched)."""
        from watchdog.observers import Observer

        self._observer = Observer()
        self._schedule()
        self._observer.start()
        return reconcile(self.project)

    def stop(self) -> None:
        """Stop the observer and wait (at most 2 s) for its threads."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=2)
        self._watches.clear()

    def pump(self, timeout: float) -> list[Report]:
        """Wait up to `timeout` s for a change; then, once quiet, apply the batch."""
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            return []
        batch = {first}
        started = time.monotonic()
        while time.monotonic() - started < self.max_delay:
            try:
                batch.add(self._queue.get(timeout=self.quiet))
            except queue.Empty:
                break
        return self.apply(batch)

    def apply(self, changes: Iterable[Change]) -> list[Report]:
        """Act on a batch of changes (the callback side: testable without an observer)."""
        batch = set(changes)
        kinds = {change.kind for change in batch}
        if LAYOUT in kinds or PLAN in kinds:
            self._refresh_layout()
        if LAYOUT in kinds:
            return reconcile(self.project)
        reports: list[Report] = []
        for change in sorted(batch, key=lambda c: str(c.path)):
            if change.kind == SKILL:
                reports += refresh_skill(self.project, change.path)
        for change in sorted(batch, key=lambda c: str(c.path)):
            report = None
            if change.kind == PLAN:
                report = refresh_payload(self.project, change.path.parent)
            elif change.kind == ARTIFACT:
                report = record_new_artifact(self.project, change.path)
            if report is not None and report not in reports:
                reports.append(report)
        return reports

    def run(self, emit: Callable[[Report], None], stop: threading.Event | None = None) -> None:
        """Watch until `stop` is set (or KeyboardInterrupt); `emit` gets every report."""
        stop = stop or threading.Event()
        try:
            for report in self.start():
                emit(report)
            while not stop.is_set():
                for report in self.pump(timeout=0.2):
                    emit(report)
        finally:
            self.stop()

    def _refresh_layout(self) -> None:
        with self._lock:
            self._layout = Layout.of(self.project)
        if self._observer is not None:
            self._schedule()

    def planned_folders(self) -> list[Path]:
        """The folders `start` will watch (a missing place is watched through its parent)."""
        return sorted(self._wanted())

    def _wanted(self) -> dict[Path, bool]:
        layout = self.layout
        wanted: dict[Path, bool] = {}
        for folder, recursive in layout.watch_roots().items():
            if folder.is_dir():
                wanted[folder] = wanted.get(folder, False) or recursive
                continue
            parent = _nearest_existing(folder, layout.root)
            if parent is not None:
                wanted.setdefault(parent, False)
        return wanted

    def _schedule(self) -> None:
        """Watch each place that exists; for a missing one, its nearest existing parent."""
        observer = self._observer
        if observer is None:
            return
        wanted = self._wanted()
        for path in list(self._watches):
            if path not in wanted or not path.is_dir():
                watch = self._watches.pop(path)
                with contextlib.suppress(KeyError, OSError):
                    observer.unschedule(watch)  # its emitter may be gone with its folder
        for path, recursive in wanted.items():
            if path in self._watches:
                continue
            try:
                self._watches[path] = observer.schedule(
                    self.handler, str(path), recursive=recursive
                )
            except OSError:
                continue  # vanished meanwhile: the layout change that follows schedules it


def _nearest_existing(folder: Path, root: Path) -> Path | None:
    """The closest existing folder above `folder` (None when that is above the project)."""
    for parent in folder.parents:
        if parent.is_dir():
            return parent if _inside(parent, root) or _inside(root, parent) else None
    return None


def reports_as_json(reports: Iterable[Report]) -> str:
    return json.dumps([report.as_dict() for report in reports], ensure_ascii=False, indent=2)
