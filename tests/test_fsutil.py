"""Atomic writes (unchanged -> untouched, no symlinks, validated, no temp left) and the lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxward.errors import CtxwardError
from ctxward.fsutil import atomic_write, locked, sha256_hex

LIB = Path(__file__).resolve().parent.parent / "lib"


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
from ctxward.fsutil import locked
counter, locks, rounds = Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
for _ in range(rounds):
    with locked(counter, locks):
        value = int(counter.read_text())
        time.sleep(0.002)  # widen the race a lock must close
        counter.write_text(str(value + 1))
"""


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
