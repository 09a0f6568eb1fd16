"""All-or-nothing writes of several bank files: a redo journal, a lock, start-up recovery.

A promotion changes up to six files (01, 02, the ZZ artifact, `_xref/index.md`,
`_xref/_next_id.json`, the C7 archive) and deletes the `.tmp/` entries it consumed. Each file
alone is written atomically (tmp + fsync + rename); together they are made atomic by a journal:

1. Every new file is written into `<bank>/.txn/NNNN.new`, fsynced and validated (non-empty with a
   `#` heading for Markdown, a JSON object for `.json`). Nothing outside `.txn/` has changed.
2. `<bank>/.txn/journal.json` lists (target, staged file, sha256) and the deletions, with its
   MAC. It is written to a temporary name, fsynced and renamed: **this rename is the commit
   point.**
3. Each staged file is renamed over its target, deletions are done, the folders are fsynced.
4. The journal and what is left of `.txn/` are removed.

Start-up recovery (every bank command, under the lock, before it reads anything): a `.txn/`
with a journal is rolled forward (step 3 again: a staged file still present is renamed, one
already renamed is skipped; deleting a missing file is a no-op); a `.txn/` without a journal is
an uncommitted promotion and is removed (set-aside journals, below, stay). A crash therefore
leaves the previous complete state or, after recovery, the new complete state, never a mix. A
reader that cannot take the lock can still see a consistent state through `logical_files`,
which overlays a committed journal.

Trust (issue 20): a cloned repository can carry a `.txn/` of its own, and rolling a journal
forward renames and deletes files. A journal is replayed only when ctxward wrote it on this
machine, for this user, for this bank: it carries an HMAC-SHA256 keyed by the user's secret
(`ctxward.core.userstate.secret_key`, outside every repository) over its canonical content and the
bank's resolved path, so neither a forged journal nor one copied from another project passes.
It may name only the files a bank transaction writes (`bank_name`) and staged files `NNNN.new`;
each staged file must still match its sha256, and no symbolic link may stand on the way, at a
target or at a staged name. Any other journal is refused: moved aside to
`.txn/refused-journal-<time>-<random>.json` (kept for the user to look at, never read again), and
the command says so in one line. A `.txn` that is a link or a file is never read through: it is
left, named in that line by every command, and a commit refuses it. Every rename, removal and
folder goes through `ctxward.core.fsutil`.

Concurrency (seed 000 §14): one exclusive lock, `<bank>/.tmp/compress.lock` — `flock` where
`fcntl` exists, else an `O_CREAT|O_EXCL` lock file with stale-owner detection. Parallel
promotions serialize; each reads the state its predecessor committed, so nothing is lost. The L1
staging lock (`compress.stage`) is taken too, so a C8 stage cannot race a promotion that is
consuming `.tmp/`. Neither lock file is opened through a symbolic link.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from ctxward.bank.markup import has_heading
from ctxward.core.confine import refuse_links_to
from ctxward.core.fsutil import (
    atomic_write,
    atomic_write_many,
    ensure_folder,
    move,
    open_regular,
    read_regular,
    remove,
)
from ctxward.core.lock import OWNER_SUFFIX, exclusive
from ctxward.core.values import Value
from ctxward.errors import CtxwardError

TXN_DIR = ".txn"
JOURNAL = "journal.json"
JOURNAL_VERSION = 2  # 2: with a MAC; a version-1 journal (no MAC) is refused like a forged one
JOURNAL_LIMIT = 1 << 20  # bytes; a real journal is a few hundred
REFUSED_PREFIX = "refused-journal-"
LOCK_FILE = "compress.lock"
OWNER_FILE = LOCK_FILE + OWNER_SUFFIX
STALE_TMP_SECONDS = 300  # seed 000 §11: stale `.tmp` files older than 5 minutes
_TMP_MARKS = (".ctxward-tmp-",)
_PROTECTED = "_notes"  # ADRs: never touched (seed 000 §10) — except our own _notes/archive/
_ARCHIVE = ("_notes", "archive")
_MAC_DOMAIN = b"ctxward memory-bank journal 2\x00"
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_STAGED = re.compile(r"[0-9]{4}\.new\Z")
# Every name a bank transaction writes or deletes (promote, trim, close-sprint): 01, 02, the
# cross-reference index, its ids and archives, the C7 archive, the `.tmp/` files (ZZ artifacts,
# staged entries). tests/bank/test_txn.py checks each writer's names against it.
_BANK_NAME = re.compile(
    r"(?:01-active-context\.md|02-progress-log\.md|03-learnings\.md"
    r"|_xref/(?:index\.md|_next_id\.json|archive/[0-9]{4}-[0-9]{2}-[0-9]{2}-index\.md)"
    r"|_notes/archive/[0-9]{4}-[0-9]{2}-compressed-entries\.md"
    r"|\.tmp/[^./\\\x00][^/\\\x00]{0,254})\Z"
)
_LOCK_NAMES = (f".tmp/{LOCK_FILE}", f".tmp/{OWNER_FILE}")

# Test-only fault injection: called with a step name before each durable step of a commit.
FAULT_HOOK: Callable[[str], None] | None = None


def _fault(step: str) -> None:
    if FAULT_HOOK is not None:
        FAULT_HOOK(step)


# -- lock ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def bank_lock(bank: Path, *, portable: bool = False, timeout: float = 600.0) -> Iterator[None]:
    """Hold the bank's exclusive lock, `<bank>/.tmp/compress.lock` (seed 000 §14)."""
    folder = bank / ".tmp"
    ensure_folder(folder)  # a `.tmp` (or a folder above it) that is a symbolic link: refused
    with exclusive(folder / LOCK_FILE, portable=portable, timeout=timeout):
        yield


# -- validation ----------------------------------------------------------------------------------


def validate(target: Path, data: bytes) -> None:
    """seed 000 §11: Markdown is non-empty and has a heading; JSON is an object."""
    if target.suffix == ".json":
        try:
            value = json.loads(data)
        except (ValueError, RecursionError):
            raise CtxwardError(f"{target.name}: write validation failed: not JSON") from None
        if not isinstance(value, dict):
            raise CtxwardError(f"{target.name}: write validation failed: not a JSON object")
    elif not has_heading(data):
        raise CtxwardError(f"{target.name}: write validation failed: empty or no heading")


def bank_name(rel: object) -> bool:
    """Whether `rel` is a name a bank transaction may write or delete (a POSIX relative path)."""
    return isinstance(rel, str) and bool(_BANK_NAME.match(rel)) and rel not in _LOCK_NAMES


def _check_target(bank: Path, target: Path) -> str:
    """`target` relative to the bank; refuses paths outside it, under _notes/ (not archive/),
    and any name a bank transaction does not write."""
    try:
        rel = target.relative_to(bank)
    except ValueError:
        raise ValueError(f"{target}: outside the memory bank {bank}") from None
    parts = rel.parts
    if parts and parts[0] == _PROTECTED and tuple(parts[:2]) != _ARCHIVE:
        raise ValueError(f"{rel}: _notes/ is never touched (seed 000 §10)")
    if not bank_name(rel.as_posix()):
        raise ValueError(f"{target}: not a memory-bank file")
    return rel.as_posix()


def _kind(path: Path) -> str | None:
    """What is at `path`, without following a link: None (nothing), "file", or a description."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


# -- the journal and its trust -------------------------------------------------------------------


class Write(Value):
    target: str  # bank-relative
    staged: str  # a name in .txn/
    sha256: str


class Journal(Value):
    writes: tuple[Write, ...]
    deletes: tuple[str, ...]

    def body(self) -> dict[str, object]:
        """The content the MAC covers."""
        return {
            "version": JOURNAL_VERSION,
            "writes": [
                {"target": w.target, "staged": w.staged, "sha256": w.sha256} for w in self.writes
            ],
            "deletes": list(self.deletes),
        }


class Untrusted(Exception):
    """A journal ctxward will not replay; the message says why, in a few words."""


class Refused(Value):
    """A journal (or a `.txn` that is not a folder) that was not replayed."""

    path: Path
    reason: str
    kept_as: Path | None  # where it was set aside; None: left in place (it is ignored)

    def describe(self, relative: Callable[[Path], str]) -> str:
        where = (
            f"set aside as {relative(self.kept_as)}"
            if self.kept_as is not None
            else "left in place and ignored"
        )
        return f"{relative(self.path)}: not replayed ({self.reason}); {where}"


class Recovery(Value):
    action: str | None  # "rolled forward", "rolled back" or None
    refused: Refused | None = None


def journal_mac(key: bytes, bank: Path, body: Mapping[str, object]) -> str:
    """The HMAC-SHA256 of a journal's canonical content, bound to the bank's resolved path."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    message = _MAC_DOMAIN + os.fsencode(os.path.realpath(bank)) + b"\x00" + canonical.encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _existing_key() -> bytes | None:
    """This user's key when it exists: with none there is no journal of ours to check, and
    checking one creates nothing in the user's home."""
    from ctxward.core import userstate

    if not os.path.lexists(userstate.state_dir() / userstate.KEY_FILE):
        return None
    return userstate.secret_key()


def _shown(value: object) -> str:
    """A name from a journal, safe in a one-line message (escaped, cut)."""
    text = ascii(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _parsed(raw: bytes, bank: Path) -> Journal:
    """The journal in `raw` when its MAC is right and every name is a bank name; else Untrusted."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise Untrusted("not JSON") from None
    if not isinstance(value, dict):
        raise Untrusted("not a JSON object")
    if "mac" not in value:
        raise Untrusted("no MAC: not written by ctxward on this machine")
    mac, writes, deletes = value["mac"], value.get("writes"), value.get("deletes")
    if not (
        set(value) == {"version", "writes", "deletes", "mac"}
        and type(value["version"]) is int
        and isinstance(mac, str)
        and _HEX64.match(mac) is not None  # compare_digest raises on a non-ASCII str
        and isinstance(writes, list)
        and isinstance(deletes, list)
    ):
        raise Untrusted("not a ctxward journal: unexpected fields or types")
    if not all(isinstance(item, str) for item in deletes) or not all(
        isinstance(item, dict)
        and set(item) == {"target", "staged", "sha256"}
        and all(isinstance(part, str) for part in item.values())
        for item in writes
    ):
        raise Untrusted("not a ctxward journal: unexpected fields or types")
    journal = Journal(
        tuple(Write(item["target"], item["staged"], item["sha256"]) for item in writes),
        tuple(deletes),
    )
    key = _existing_key()
    expected = journal_mac(key, bank, journal.body()) if key is not None else ""
    if value["version"] != JOURNAL_VERSION or not hmac.compare_digest(expected, mac):
        raise Untrusted("its MAC does not match: not written by ctxward for this bank here")
    # The MAC says ctxward wrote it; the names are checked all the same (a bug, an old version).
    for write in journal.writes:
        if not bank_name(write.target):
            raise Untrusted(f"names {_shown(write.target)}, not a memory-bank file")
        if not _STAGED.match(write.staged) or not _HEX64.match(write.sha256):
            raise Untrusted(f"names {_shown(write.staged)} as a staged file")
    for rel in journal.deletes:
        if not bank_name(rel):
            raise Untrusted(f"deletes {_shown(rel)}, not a memory-bank file")
    if len({w.staged for w in journal.writes}) != len(journal.writes):
        raise Untrusted("names a staged file twice")
    return journal


def _way_is_plain(bank: Path, rel: str) -> None:
    """Untrusted when a folder on the way from the bank to `rel` is a link or not a folder
    (missing ones pass: the roll-forward makes them, one real folder at a time)."""
    refuse_links_to(bank / rel, error=Untrusted)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(open_regular(path), "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_on_disk(bank: Path, journal: Journal) -> None:
    """Untrusted unless every rename and deletion can be done with no link followed."""
    folder = bank / TXN_DIR
    for write in journal.writes:
        _way_is_plain(bank, write.target)
        kind = _kind(bank / write.target)
        if kind not in (None, "file"):
            raise Untrusted(f"{write.target} is {kind}")
        staged = _kind(folder / write.staged)
        if staged is None:
            continue  # renamed already, by the roll-forward that was interrupted
        if staged != "file":
            raise Untrusted(f"the staged {write.staged} is {staged}")
        try:
            matches = _sha256_of(folder / write.staged) == write.sha256
        except OSError as exc:
            raise Untrusted(f"the staged {write.staged} cannot be read ({exc.strerror})") from None
        if not matches:
            raise Untrusted(f"the staged {write.staged} does not match its sha256")
    for rel in journal.deletes:
        _way_is_plain(bank, rel)
        if _kind(bank / rel) == "a folder":
            raise Untrusted(f"{rel} is a folder")


def _trusted(bank: Path) -> Journal:
    """The bank's committed journal, checked (MAC, names, what is on disk); else Untrusted."""
    try:
        raw = read_regular(bank / TXN_DIR / JOURNAL, limit=JOURNAL_LIMIT)
    except OSError as exc:
        raise Untrusted(f"cannot be read: {exc.strerror or exc}") from None
    journal = _parsed(raw, bank)
    _check_on_disk(bank, journal)
    return journal


# -- commit and recovery -------------------------------------------------------------------------


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse a directory fsync
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def commit(
    bank: Path, writes: Mapping[Path, str | bytes], deletes: Sequence[Path] = ()
) -> list[str]:
    """Write and delete bank files as one transaction; return the changed paths (bank-relative).

    Unchanged files and deletions of missing files are dropped first; with nothing left, nothing
    is written at all. The caller holds the bank lock and has run `recover`.
    """
    staged: list[tuple[str, bytes]] = []
    for target, content in writes.items():
        rel = _check_target(bank, target)
        data = content.encode("utf-8") if isinstance(content, str) else content
        validate(target, data)
        kind = _kind(target)
        if kind == "a symbolic link":
            raise CtxwardError(f"{rel}: refusing to write through a symbolic link")
        if kind not in (None, "file"):
            raise CtxwardError(
                f"{rel}: not a regular file (a folder, a FIFO?); refusing to replace it"
            )
        if kind == "file" and read_regular(target) == data:
            continue
        staged.append((rel, data))
    removed = [
        _check_target(bank, target)
        for target in deletes
        if _kind(target) in ("file", "a symbolic link")  # a link is removed, never followed
    ]
    if not staged and not removed:
        return []
    from ctxward.core.userstate import secret_key

    key = secret_key()  # before anything is written: a key that cannot be made fails here
    folder = bank / TXN_DIR
    entries = [
        Write(rel, f"{index:04d}.new", hashlib.sha256(data).hexdigest())
        for index, (rel, data) in enumerate(staged)
    ]
    journal = Journal(tuple(entries), tuple(removed))
    body = journal.body()
    signed = json.dumps({**body, "mac": journal_mac(key, bank, body)}, indent=1).encode()
    if len(signed) > JOURNAL_LIMIT:  # recovery would refuse it: never write one
        raise CtxwardError(f"{folder}: too many deletions ({len(removed):,}) for one transaction")
    ensure_folder(folder)  # refuses a `.txn` that is a link, or a file
    if any(not _kept(entry) for entry in _entries(folder)):
        raise CtxwardError(f"{folder}: an unrecovered transaction is in the way")
    _fault("begin")
    # fsynced and read back; one folder fsync for them all (the journal's follows)
    atomic_write_many(
        [(folder / entry.staged, data) for entry, (_, data) in zip(entries, staged, strict=True)]
    )
    _fault("staged")
    _fault("journal-written")
    atomic_write(folder / JOURNAL, signed)  # its rename: the commit point
    _fault("committed")
    _apply(bank, journal)
    return [entry.target for entry in entries] + removed


def _apply(bank: Path, journal: Journal) -> None:
    """Roll a checked journal forward (idempotent), then remove it."""
    folder = bank / TXN_DIR
    dirs: set[Path] = set()
    try:
        for write in journal.writes:
            staged = folder / write.staged
            if not os.path.lexists(staged):
                continue
            target = bank / write.target
            ensure_folder(target.parent)
            move(staged, target)
            dirs.add(target.parent)
            _fault("renamed")
        for rel in journal.deletes:
            target = bank / rel
            if os.path.lexists(target):
                remove(target)  # a link is removed, never followed
                dirs.add(target.parent)
                _fault("deleted")
    except OSError as exc:
        raise CtxwardError(
            f"{folder / JOURNAL}: the interrupted bank transaction could not be finished "
            f"({exc.strerror or exc}); it is kept, and the next bank command tries again"
        ) from None
    for parent in sorted(dirs):
        _fsync_dir(parent)
    _fault("applied")
    remove(folder / JOURNAL)  # the transaction is complete
    _clear(folder)
    _fsync_dir(bank)


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            return list(found)
    except OSError:
        return []


def _kept(entry: os.DirEntry[str]) -> bool:
    """A refused journal that was set aside: left for the user, never read again."""
    return entry.name.startswith(REFUSED_PREFIX) and entry.is_file(follow_symlinks=False)


def _clear(folder: Path) -> bool:
    """Remove what an unfinished transaction left in `.txn/` (set-aside journals stay), and the
    folder once empty; return whether anything was removed."""
    removed = False
    for entry in _entries(folder):
        if _kept(entry):
            continue
        with contextlib.suppress(OSError, CtxwardError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)  # never follows a link inside it
            else:
                remove(entry.path)
            removed = True
    with contextlib.suppress(OSError, CtxwardError):
        ensure_folder(folder)  # checks the way: no link to follow
        if not _entries(folder):
            os.rmdir(folder)  # an empty real folder only; fsutil has no remover for folders
    return removed


def _set_aside(journal: Path) -> Path | None:
    """Move a refused journal beside itself under a name that says so; None when it cannot be."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = journal.with_name(f"{REFUSED_PREFIX}{stamp}-{os.urandom(4).hex()}.json")
    try:
        move(journal, kept)
    except (OSError, CtxwardError):
        return None
    return kept


def recover(bank: Path, *, replay: bool = True) -> Recovery:
    """Finish or undo an interrupted transaction; set aside a journal ctxward did not write.

    With `replay=False` only the refusal is done (a trusted journal and leftovers stay for the
    next full recovery).
    """
    folder = bank / TXN_DIR
    kind = _kind(folder)
    if kind is None:
        return Recovery(None)
    if kind != "a folder":
        return Recovery(None, Refused(folder, f"{kind}, not a folder ctxward made", None))
    journal_path = folder / JOURNAL
    if _kind(journal_path) != "file":
        # No journal (an uncommitted transaction), or something ctxward never renames into
        # place (a FIFO, a link, a folder): undone.
        if not replay:
            return Recovery(None)
        return Recovery("rolled back" if _clear(folder) else None)
    try:
        journal = _trusted(bank)
    except Untrusted as exc:
        kept = _set_aside(journal_path)
        if kept is not None:
            _clear(folder)  # its staged files go with it: nothing of them is ever applied
        return Recovery(None, Refused(journal_path, str(exc), kept))
    if not replay:
        return Recovery(None)
    _apply(bank, journal)
    return Recovery("rolled forward")


def logical_files(bank: Path, names: Sequence[str]) -> dict[str, bytes | None]:
    """The bank files `names` as a reader sees them: a committed, trusted journal's files win.

    Read-only (no recovery, no lock): what `recover` would leave.
    """
    journal: Journal | None = None
    if _kind(bank / TXN_DIR) == "a folder" and _kind(bank / TXN_DIR / JOURNAL) == "file":
        with contextlib.suppress(Untrusted, CtxwardError):
            journal = _trusted(bank)
    staged = {w.target: w.staged for w in journal.writes} if journal else {}
    deleted = set(journal.deletes) if journal else set()
    out: dict[str, bytes | None] = {}
    for name in names:
        data: bytes | None = None
        if name in staged:
            with contextlib.suppress(FileNotFoundError):
                data = read_regular(bank / TXN_DIR / staged[name])
        if data is None and name not in deleted:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                data = read_regular(bank / name)
        out[name] = data
    return out


# -- start-up ------------------------------------------------------------------------------------


def remove_stale_tmp(bank: Path, now: float | None = None) -> list[str]:
    """Remove leftover temporary files (`*.tmp`, `*.ctxward-tmp-*`) older than 5 minutes.

    Looks in the bank's own folders; `_notes/` is skipped (ADRs), except `_notes/archive/`.
    Only regular files are removed: a linked folder is not entered, a link is left alone.
    """
    cutoff = (time.time() if now is None else now) - STALE_TMP_SECONDS
    removed: list[str] = []
    if _kind(bank) != "a folder":
        return removed
    for folder, subdirs, files in os.walk(bank):  # followlinks=False: links are not entered
        here = Path(folder)
        rel = here.relative_to(bank).parts
        if rel[:1] == (_PROTECTED,) and tuple(rel[:2]) != _ARCHIVE:
            subdirs[:] = []
            continue
        subdirs[:] = [d for d in subdirs if not (not rel and d == TXN_DIR)]
        for name in files:
            if not (name.endswith(".tmp") or any(mark in name for mark in _TMP_MARKS)):
                continue
            path = here / name
            with contextlib.suppress(OSError, CtxwardError):
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                    remove(path)
                    removed.append(path.relative_to(bank).as_posix())
    return removed
