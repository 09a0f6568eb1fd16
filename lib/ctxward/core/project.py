"""Where the project is, and where ctxward keeps its state inside it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from ctxward.core.values import Value
from ctxward.errors import BadInput

STATE_DIRNAME = ".ctxward"
PLANS_RELDIR = Path("docs") / "plans"
_MARKERS = (".git", STATE_DIRNAME)
# A "." or ".." component: a path with one must go through resolve() to be named.
_UNRESOLVED = re.compile(r"(?:^|/)\.{1,2}(?:/|$)")


def find_root(
    env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> Path:
    """Return the project root: $CLAUDE_PROJECT_DIR, else the nearest folder with .git/.ctxward.

    The walk starts at `cwd` (a hook's payload cwd) or the process's working directory, and falls
    back to that starting folder when no marker is found above it.
    """
    return _search(env, cwd)[0]


def find_project(
    env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> Project:
    """`Project(find_root(env, cwd))`, not `anchored` when the root is only the fallback: a
    folder that no marker and no $CLAUDE_PROJECT_DIR names as a project."""
    root, anchored = _search(env, cwd)
    return Project(root, anchored=anchored)


def _search(env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> tuple[Path, bool]:
    env = os.environ if env is None else env
    explicit = env.get("CLAUDE_PROJECT_DIR")
    try:
        if explicit:
            return Path(explicit).resolve(), True
        start = Path(cwd if cwd else os.getcwd()).resolve()
        for folder in (start, *start.parents):
            if any((folder / marker).exists() for marker in _MARKERS):
                return folder, True
    except (OSError, ValueError) as exc:  # a NUL byte in the path, a deleted working folder
        given = explicit or cwd or "the working folder"
        raise BadInput(f"cannot use {str(given)[:200]!r} as the project folder: {exc}") from None
    return start, False


class _Folder:
    """A fixed folder of the project: its root joined with `relative`, on each access."""

    __slots__ = ("relative",)

    def __init__(self, relative: Path) -> None:
        self.relative = relative

    def __get__(self, project: Project, owner: type | None = None) -> Path:
        return project.root / self.relative


class Project(Value):
    """Paths of one project's state (DESIGN.md "State on disk").

    `anchored` False: the root is a folder nothing names as a project (`find_project`'s
    fallback). Hooks then leave it alone (no `.ctxward/` is made in a random folder) and the
    CLI's writing commands refuse it (`commands.project_of`).
    """

    root: Path
    anchored: bool = True

    plans_dir = _Folder(PLANS_RELDIR)
    state_dir = _Folder(Path(STATE_DIRNAME))
    offload_dir = _Folder(Path(STATE_DIRNAME, "offload"))
    compactions_dir = _Folder(Path(STATE_DIRNAME, "compactions"))
    log_dir = _Folder(Path(STATE_DIRNAME, "log"))
    locks_dir = _Folder(Path(STATE_DIRNAME, "locks"))

    @property
    def sub_agents_dir(self) -> Path:
        """G7/G8 state: .ctxward/sub_agents, or .peaks/_sub_agents under `preset: peaks`."""
        return self._by_preset("peaks", Path(".peaks", "_sub_agents"), "sub_agents")

    @property
    def bank_dir(self) -> Path:
        """The L2 memory bank: .ctxward/memory-bank, or .pantheon/memory-bank (preset pantheon)."""
        return self._by_preset("pantheon", Path(".pantheon", "memory-bank"), "memory-bank")

    def _by_preset(self, preset: str, there: Path, here: str) -> Path:
        """root/`there` under `preset`, else .ctxward/`here`. The preset comes from
        `config.load`, which reads and parses the file once per run."""
        from ctxward.core.config import load

        return self.root / there if load(self).preset == preset else self.state_dir / here

    def relative(self, path: Path) -> str:
        """Return `path` relative to the root when it is inside it, else absolute (POSIX form)."""
        # Most paths ctxward names are built from the root: take those apart as strings, without
        # the symbolic-link walk of resolve() (a tenth of a millisecond each, 1,000 per PreCompact).
        text, root = str(path), str(self.root)
        if text.startswith(root + os.sep) and not _UNRESOLVED.search(text):
            return text[len(root) + 1 :].replace(os.sep, "/")
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return path.resolve().as_posix()
