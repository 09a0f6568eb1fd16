"""Atomic writes (unchanged -> untouched, no symlinks, validated, no temp left), the lock, and
the readers that never wait on a FIFO (read_regular, read_regular_text, open_regular)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ctxward.core.fsutil import (
    SWEEP_EVERY,
    atomic_write,
    ensure_folder,
    housekeeping_due,
    is_leftover,
    locked,
    move,
    open_regular,
    read_named,
    read_regular,
    read_regular_text,
    remove,
    sha256_hex,
    sweep_after_writes,
    sweep_leftovers,
)
from ctxward.errors import BadInput, CtxwardError

LIB = Path(__file__).resolve().parents[2] / "lib"


@pytest.fixture
def folder(tmp_path):
    """An empty folder of its own (tmp_path also holds the isolated HOME)."""
    path = tmp_path / "folder"
    path.mkdir()
    return path


def test_writes_new_file_and_creates_folders(folder):
    path = folder / "a" / "b" / "file.txt"

    assert atomic_write(path, "héllo\n") is True

    assert path.read_bytes() == "héllo\n".encode()
    assert sorted(p.name for p in path.parent.iterdir()) == ["file.txt"]


def test_unchanged_data_returns_false_and_does_not_touch_the_file(folder):
    path = folder / "file.txt"
    atomic_write(path, b"same")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.stat()

    assert atomic_write(path, "same") is False

    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, 1_000_000_000)


def test_changed_data_replaces_the_file(folder):
    path = folder / "file.txt"
    atomic_write(path, "old")

    assert atomic_write(path, "new") is True

    assert path.read_text() == "new"
    assert [p.name for p in folder.iterdir()] == ["file.txt"]


def test_refuses_to_write_through_a_symlink(folder):
    target = folder / "target.txt"
    target.write_text("precious")
    link = folder / "link.txt"
    link.symlink_to(target)

    with pytest.raises(CtxwardError, match="symbolic link"):
        atomic_write(link, "overwritten")

    assert target.read_text() == "precious"
    assert link.is_symlink()


def test_refuses_a_dangling_symlink(folder):
    link = folder / "link.txt"
    link.symlink_to(folder / "nowhere.txt")

    with pytest.raises(CtxwardError, match="symbolic link"):
        atomic_write(link, "data")

    assert not (folder / "nowhere.txt").exists()


def test_failing_validation_keeps_the_old_file_and_leaves_no_temp(folder):
    path = folder / "report.json"
    atomic_write(path, '{"ok": true}\n')
    seen = []

    def validate(data: bytes) -> None:
        seen.append(data)
        json.loads(data)

    with pytest.raises(ValueError):
        atomic_write(path, "{not json", validate=validate)

    assert seen == [b"{not json"]  # validated the bytes read back from the temp file
    assert path.read_text() == '{"ok": true}\n'
    assert [p.name for p in folder.iterdir()] == ["report.json"]


def test_a_full_disk_names_the_file_keeps_the_old_one_and_leaves_no_temp(folder, monkeypatch):
    path = folder / "plan.md"
    atomic_write(path, "# old\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # what the kernel names: nothing

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as raised:
        atomic_write(path, "# new\n")
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(path))
    assert path.read_text() == "# old\n"
    assert [p.name for p in folder.iterdir()] == ["plan.md"]


def test_read_named_bounds_a_file_the_user_names(folder):
    text = folder / "prompt.md"
    text.write_bytes(b"x" * 10)
    assert read_named(text, limit=10) == b"x" * 10
    link = folder / "link.md"
    link.symlink_to(text)  # the user's own link: followed
    assert read_named(link, limit=10) == b"x" * 10
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    cases = {
        text: (9, "larger than 9 bytes; refused"),
        fifo: (10, "not a regular file (a FIFO or a device?); refused"),
        Path("/dev/zero"): (10, "not a regular file (a FIFO or a device?); refused"),
        folder: (10, "is a folder, not a file"),
        folder / "missing": (10, "no such file"),
    }
    for path, (limit, problem) in cases.items():
        with pytest.raises(BadInput) as raised:
            read_named(path, limit=limit)
        assert str(raised.value) == f"{path}: {problem}"


def test_read_named_leaves_a_system_error_to_the_caller(folder, monkeypatch):
    path = folder / "prompt.md"
    path.write_text("x")

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(PermissionError):
        read_named(path, limit=10)


def test_stale_temp_files_are_cleaned_and_fresh_ones_kept(folder):
    stale = folder / ".other.md.ctxward-tmp-123-deadbeef"
    stale.write_text("left by a crash two hours ago")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    fresh = folder / ".other.md.ctxward-tmp-456-cafebabe"
    fresh.write_text("another writer, right now")
    unrelated = folder / ".keep-me"
    unrelated.write_text("not ours")
    os.utime(unrelated, (two_hours_ago, two_hours_ago))

    atomic_write(folder / "file.md", "data")

    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [fresh.name, unrelated.name, "file.md"]
    )


def test_sha256_hex_of_text_and_bytes():
    expected = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert sha256_hex("hello") == sha256_hex(b"hello") == expected


# --- locked: serialises processes ----------------------------------------------------------

_WORKER = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from ctxward.core.fsutil import locked
counter, locks, rounds = Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
for _ in range(rounds):
    with locked(counter, locks):
        value = int(counter.read_text())
        time.sleep(0.002)  # widen the race a lock must close
        counter.write_text(str(value + 1))
"""


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_locked_serialises_read_modify_write_across_processes(folder):
    counter = folder / "counter.txt"
    counter.write_text("0")
    locks = folder / "locks"
    rounds = 40
    args = [sys.executable, "-c", _WORKER, str(LIB), str(counter), str(locks), str(rounds)]

    workers = [subprocess.Popen(args) for _ in range(3)]
    codes = [worker.wait(timeout=60) for worker in workers]

    assert codes == [0, 0, 0]
    assert counter.read_text() == str(3 * rounds)


def test_locked_holds_one_lock_file_per_target(folder):
    locks = folder / "locks"
    with locked(folder / "a", locks), locked(folder / "b", locks):
        pass  # different targets do not block each other
    with locked(folder / "a", locks):
        pass  # released: taking it again does not block
    assert len(list(locks.iterdir())) == 2


# --- read_regular, read_regular_text, open_regular: never a wait on a FIFO ----------------------


def _within(seconds, call, *args):
    """`call(*args)` on a daemon thread: its result, or its exception re-raised; a call still
    blocked after `seconds` fails the test instead of hanging the suite."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call.__name__}{args!r} still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


READERS = [read_regular, read_regular_text, open_regular]


def test_read_regular_returns_the_bytes_of_a_regular_file(folder):
    path = folder / "file.bin"
    path.write_bytes(b"a\r\nb\x00\xff")

    assert read_regular(path) == b"a\r\nb\x00\xff"
    assert read_regular(str(path)) == b"a\r\nb\x00\xff"
    (folder / "empty").touch()
    assert read_regular(folder / "empty") == b""


def test_read_regular_text_reads_as_path_read_text_does(folder):
    path = folder / "file.md"
    path.write_bytes("é\r\nb\rc\n".encode())

    assert read_regular_text(path) == path.read_text(encoding="utf-8") == "é\nb\nc\n"
    path.write_bytes(b"\xff")
    with pytest.raises(UnicodeDecodeError):
        read_regular_text(path)


@pytest.mark.parametrize("reader", READERS)
def test_a_fifo_is_refused_at_once_as_einval(folder, reader):
    fifo = folder / "state.json"
    os.mkfifo(fifo)

    with pytest.raises(OSError, match=r"not a regular file \(a FIFO or a device\?\)") as info:
        _within(10, reader, fifo)

    assert info.value.errno == errno.EINVAL
    assert info.value.filename == str(fifo)
    assert type(info.value) is OSError  # not a subclass a caller might catch as "missing"


@pytest.mark.parametrize("reader", READERS)
def test_a_device_is_refused_as_einval(reader):
    with pytest.raises(OSError) as info:
        reader(os.devnull)

    assert info.value.errno == errno.EINVAL


@pytest.mark.parametrize("reader", READERS)
def test_a_folder_is_refused_as_a_folder(folder, reader):
    with pytest.raises(IsADirectoryError) as info:
        reader(folder)

    assert info.value.errno == errno.EISDIR


@pytest.mark.parametrize("reader", READERS)
def test_a_missing_file_is_file_not_found(folder, reader):
    with pytest.raises(FileNotFoundError):
        reader(folder / "missing.json")


def test_open_regular_hands_over_the_descriptor_and_leaks_none(folder):
    path = folder / "file.txt"
    path.write_bytes(b"streamed\n")
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    before = len(os.listdir("/proc/self/fd"))

    with open(open_regular(path), "rb") as handle:
        assert handle.readline() == b"streamed\n"
    for refused in (fifo, folder):
        with pytest.raises(OSError):
            open_regular(refused)

    assert len(os.listdir("/proc/self/fd")) == before


# --- containment: no link and no '..' on the way ----------------------------------------------


def _dead_pid() -> int:
    """The pid of a process that has ended (its number is not reused within the test)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **_RUN)
    return int(child.stdout)


_RUN: dict[str, object] = {"capture_output": True, "text": True, "check": True, "timeout": 20}


def test_a_linked_folder_on_the_way_is_refused_and_nothing_lands_behind_it(folder, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (folder / ".ctxward").symlink_to(victim)
    for write in (
        lambda: atomic_write(folder / ".ctxward" / "offload" / "a.md", "x"),
        lambda: ensure_folder(folder / ".ctxward" / "sessions"),
        lambda: locked(folder / "t", folder / ".ctxward" / "locks").__enter__(),
        lambda: remove(folder / ".ctxward" / "a"),
        lambda: move(folder / "a", folder / ".ctxward" / "a"),
    ):
        with pytest.raises(CtxwardError, match="symbolic link"):
            write()
    assert list(victim.iterdir()) == []


def test_a_dotted_path_is_refused(folder):
    with pytest.raises(CtxwardError, match=r"'\.\.'"):
        atomic_write(Path(f"{folder}/x/../../escaped.md"), "x")
    with pytest.raises(CtxwardError, match=r"'\.\.'"):
        ensure_folder(f"{folder}/a/./b")
    assert not (folder.parent / "escaped.md").exists()


def test_state_reads_refuse_a_link_on_the_way_unless_following_is_asked(folder, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "plan.md").write_text("outside\n")
    (folder / "plans").symlink_to(outside)
    (folder / "file.md").symlink_to(outside / "plan.md")
    for path in (folder / "plans" / "plan.md", folder / "file.md"):
        with pytest.raises(OSError) as raised:
            read_regular(path)
        assert raised.value.errno == errno.ELOOP
        assert read_regular(path, follow_links=True) == b"outside\n"


def test_ensure_folder_makes_every_missing_folder(folder):
    ensure_folder(folder / "a" / "b" / "c")
    ensure_folder(folder / "a" / "b" / "c")  # again: nothing to do, no error
    assert (folder / "a" / "b" / "c").is_dir()


def test_a_read_past_its_limit_is_efbig(folder):
    path = folder / "big"
    path.write_bytes(b"x" * 101)
    assert read_regular(path, limit=101) == b"x" * 101
    with pytest.raises(OSError) as raised:
        read_regular_text(path, limit=100)
    assert raised.value.errno == errno.EFBIG


def test_read_regular_text_translates_newlines_as_open_does(folder):
    path = folder / "crlf"
    path.write_bytes(b"a\r\nb\rc\n")
    assert read_regular_text(path) == "a\nb\nc\n"


# --- crash leftovers --------------------------------------------------------------------------


def test_a_dead_writers_leftover_goes_once_it_is_a_minute_old(folder):
    dead = _dead_pid()
    old = time.time() - 120
    leftover = folder / f".a.md.ctxward-tmp-{dead}-00000000"
    leftover.write_text("half")
    os.utime(leftover, (old, old))
    young = folder / f".b.md.ctxward-tmp-{dead}-11111111"
    young.write_text("maybe a container's writer, right now")
    alive = folder / f".c.md.ctxward-tmp-{os.getppid()}-22222222"
    alive.write_text("a live writer")
    os.utime(alive, (old, old))

    atomic_write(folder / "file.md", "data")

    assert sorted(p.name for p in folder.iterdir()) == sorted([young.name, alive.name, "file.md"])
    assert is_leftover(young.name, time.time() - 120)
    assert not is_leftover(alive.name, time.time() - 120)


def test_the_sweep_reaches_folders_nobody_writes_again(folder):
    state, plans = folder / ".ctxward", folder / "docs" / "plans"
    old = time.time() - 7200
    leftovers = [
        state / "sessions" / ".s.json.ctxward-tmp-1-aaaaaaaa",
        plans / "p" / ".compaction-payload.md.ctxward-tmp-1-bbbbbbbb",
    ]
    for path in leftovers:
        path.parent.mkdir(parents=True)
        path.write_text("left by a SIGKILL")
        os.utime(path, (old, old))
    with sweep_after_writes(state, plans):
        pass  # this run has written nothing: no sweep, no stamp
    assert all(path.exists() for path in leftovers)
    assert not (state / "locks").exists()

    with sweep_after_writes(state, plans):
        atomic_write(state / "config.yaml", "{}\n")  # a writer ran: now it sweeps
    assert not any(path.exists() for path in leftovers)
    leftovers[0].write_text("another")
    os.utime(leftovers[0], (old, old))
    assert sweep_leftovers(state, plans) == 0  # not due again for ten minutes: one stat
    assert leftovers[0].exists()


def test_the_sweep_makes_no_state_folder_and_follows_no_link(folder, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    planted = victim / ".x.ctxward-tmp-1-cccccccc"
    planted.write_text("not ours")
    os.utime(planted, (0, 0))
    assert sweep_leftovers(folder / ".ctxward", folder / "docs" / "plans") == 0
    assert not (folder / ".ctxward").exists()
    (folder / ".ctxward").mkdir()
    (folder / ".ctxward" / "sessions").symlink_to(victim)
    assert sweep_leftovers(folder / ".ctxward", folder / "docs" / "plans") == 0
    assert planted.exists()


def test_housekeeping_is_due_without_a_stamp_and_ten_minutes_after_a_sweep(folder):
    state, plans = folder / ".ctxward", folder / "docs" / "plans"
    state.mkdir()
    assert housekeeping_due(state)
    with sweep_after_writes(state, plans):
        atomic_write(state / "config.yaml", "{}\n")
    assert not housekeeping_due(state)
    stamp = state / "locks" / "swept"
    assert housekeeping_due(state, now=stamp.stat().st_mtime + SWEEP_EVERY)
    assert not housekeeping_due(state, now=stamp.stat().st_mtime + SWEEP_EVERY - 1)
