"""Which branch is checked out, which local branches exist, which branch one was made from:
read from `.git` directly, without running git (the compaction hooks ask on every run).

Bounded and untrusting: a repository may arrive with any `.git` (a tarball, a copied folder),
so every file is read through `fsutil.read_regular` (no FIFO is waited on, no link is followed
inside `.git`), with a size limit; `refs/heads/` is walked to a fixed number of entries and a
fixed depth; `.git` may be a file (`gitdir: <path>`, a linked worktree) whose target holds a
`commondir`. Anything past a bound, or unreadable, makes the answer "unknown" (None), and
callers then keep every plan: a plan is never hidden or completed on a guess.

A branch is "derived" from another when git recorded its creation from it: the first line of
its reflog says `branch: Created from <other>`, or says `Created from HEAD` and the HEAD reflog
has `checkout: moving from <other> to <branch>` (what `git checkout -b` and `git switch -c`
write). Followed up to MAX_DERIVATION steps (feature -> feature-2 -> feature-3). Branches made
in another worktree from its HEAD, or whose reflog expired, are not recognised as derived.

Standard library only.
"""

from __future__ import annotations

import os

MAX_REF_BYTES = 4096  # HEAD, a loose ref, a `.git` file, `commondir`
MAX_PACKED_REFS_BYTES = 4 * 1024 * 1024  # ~40,000 refs
MAX_LOOSE_REFS = 10_000  # entries under refs/heads/ looked at
MAX_REF_DEPTH = 16  # folders below refs/heads/ (feature/a/b/...)
MAX_REFLOG_BYTES = 1024 * 1024  # the tail of logs/HEAD searched for a branch's creation
MAX_DERIVATION = 5


def _read(path: str, limit: int) -> bytes | None:
    from ctxward.core.fsutil import read_regular

    try:
        return read_regular(path, limit=limit)
    except (OSError, ValueError):
        return None


def _tail(path: str, limit: int) -> bytes | None:
    from ctxward.core.fsutil import open_regular

    try:
        with open(open_regular(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                handle.seek(size - limit)
                return handle.read(limit).split(b"\n", 1)[-1]  # from a whole line on
            return handle.read(limit)
    except (OSError, ValueError):
        return None


class Repository:
    """One work tree's git folders: `git_dir` (its HEAD, its HEAD reflog) and `common_dir`
    (refs, packed-refs, branch reflogs). `found` False: no readable `.git` here."""

    __slots__ = ("_branches", "_head", "common_dir", "found", "git_dir")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.git_dir = self.common_dir = ""
        self._branches: frozenset[str] | bool | None = False  # False: not read yet
        self._head: str | bool | None = False
        self.found = self._locate(os.path.join(os.fspath(root), ".git"))

    def _locate(self, dot_git: str) -> bool:
        if os.path.isdir(dot_git) and not os.path.islink(dot_git):
            self.git_dir = self.common_dir = dot_git
            return True
        raw = _read(dot_git, MAX_REF_BYTES)
        if raw is None or not raw.startswith(b"gitdir: "):
            return False
        target = os.fsdecode(raw[len(b"gitdir: ") :].strip())
        target = os.path.normpath(os.path.join(os.path.dirname(dot_git), target))
        if not os.path.isdir(target):
            return False
        self.git_dir = self.common_dir = target
        common = _read(os.path.join(target, "commondir"), MAX_REF_BYTES)
        if common is not None:
            self.common_dir = os.path.normpath(os.path.join(target, os.fsdecode(common.strip())))
        return True

    def head_branch(self) -> str | None:
        """The checked-out branch; None on a detached HEAD or when HEAD cannot be read."""
        if self._head is False:
            self._head = self._read_head_branch()
        return self._head  # type: ignore[return-value]

    def _read_head_branch(self) -> str | None:
        if not self.found:
            return None
        raw = _read(os.path.join(self.git_dir, "HEAD"), MAX_REF_BYTES)
        if raw is None or not raw.startswith(b"ref: refs/heads/"):
            return None
        try:
            return raw[len(b"ref: refs/heads/") :].strip().decode("utf-8")
        except UnicodeDecodeError:
            return None

    def branches(self) -> frozenset[str] | None:
        """Every local branch (loose and packed); None when that cannot be told within bounds."""
        if self._branches is False:
            self._branches = self._read_branches() if self.found else None
        return self._branches  # type: ignore[return-value]

    def _read_branches(self) -> frozenset[str] | None:
        names: set[str] = set()
        heads = os.path.join(self.common_dir, "refs", "heads")
        seen = 0
        stack = [(heads, "", 0)]
        while stack:
            folder, prefix, depth = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        seen += 1
                        if seen > MAX_LOOSE_REFS:
                            return None
                        if entry.is_dir(follow_symlinks=False):
                            if depth >= MAX_REF_DEPTH:
                                return None
                            stack.append((entry.path, f"{prefix}{entry.name}/", depth + 1))
                        elif entry.is_file(follow_symlinks=False):
                            names.add(prefix + entry.name)
            except FileNotFoundError:
                continue
            except OSError:
                return None
        packed_path = os.path.join(self.common_dir, "packed-refs")
        if os.path.lexists(packed_path):
            packed = _read(packed_path, MAX_PACKED_REFS_BYTES)
            if packed is None:
                return None
            for line in packed.split(b"\n"):
                _, _, ref = line.partition(b" refs/heads/")
                if ref and not line.startswith((b"#", b"^")):
                    names.add(ref.decode("utf-8", "replace"))
        return frozenset(names)

    def exists(self, branch: str) -> bool | None:
        """Whether `branch` exists (the unborn branch HEAD names counts); None: unknown."""
        if branch == self.head_branch():
            return True
        known = self.branches()
        return None if known is None else branch in known

    def parent(self, branch: str) -> str | None:
        """The branch `branch` was created from, when git recorded it (see the module doc)."""
        if not self.found or ".." in branch or branch.startswith("/"):
            return None
        log = _read_first_line(os.path.join(self.common_dir, "logs", "refs", "heads", branch))
        if log is None:
            return None
        _, _, message = log.partition("\t")
        created = "branch: Created from "
        if not message.startswith(created):
            return None
        source = message[len(created) :].strip()
        source = source.removeprefix("refs/heads/")
        if source != "HEAD":
            return source or None
        head_log = _tail(os.path.join(self.git_dir, "logs", "HEAD"), MAX_REFLOG_BYTES)
        if head_log is None:
            return None
        suffix = f" to {branch}"
        for line in head_log.decode("utf-8", "replace").split("\n"):
            _, _, action = line.partition("\t")
            if action.startswith("checkout: moving from ") and action.endswith(suffix):
                return action[len("checkout: moving from ") : -len(suffix)] or None
        return None

    def derives_from(self, branch: str, ancestors: frozenset[str]) -> bool:
        """Whether `branch` was created, directly or in a few steps, from one of `ancestors`."""
        current: str | None = branch
        for _ in range(MAX_DERIVATION):
            current = self.parent(current) if current else None
            if current is None:
                return False
            if current in ancestors:
                return True
        return False


def _read_first_line(path: str) -> str | None:
    raw = _read_head(path, MAX_REF_BYTES)
    if raw is None:
        return None
    return raw.split(b"\n", 1)[0].decode("utf-8", "replace")


def _read_head(path: str, limit: int) -> bytes | None:
    from ctxward.core.fsutil import open_regular

    try:
        with open(open_regular(path), "rb") as handle:
            return handle.read(limit)
    except (OSError, ValueError):
        return None
