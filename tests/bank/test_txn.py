"""All-or-nothing promotions (seed 000 §11, §14): the journal, recovery, crashes, concurrency."""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ctxward.bank import active, archive, learnings, progress, sprint, state, txn, xref, zz
from ctxward.bank.promote import promote
from ctxward.compress import identity as identities
from ctxward.core.project import Project
from ctxward.errors import CtxwardError

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


# -- the journal ---------------------------------------------------------------------------------


A, B = active.FILE, progress.FILE  # two real bank names: a journal names nothing else
IDS = state.NEXT_ID


def test_commit_writes_changed_files_and_skips_the_rest(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    (bank / "_xref").mkdir(parents=True)
    (bank / A).write_text("# A\n", encoding="utf-8")
    changed = txn.commit(bank, {bank / A: "# A\n", bank / B: "# B\n", bank / IDS: "{}"})
    assert changed == [B, IDS]
    assert not (bank / ".txn").exists()
    assert txn.commit(bank, {bank / B: "# B\n"}) == []
    assert txn.commit(bank, {}, [bank / B, bank / ".tmp" / "gone.md"]) == [B]
    assert not (bank / B).exists()


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (B, "", "empty or no heading"),
        (B, "no heading here\n", "empty or no heading"),
        (IDS, "[1]", "not a JSON object"),
        (IDS, "{", "not JSON"),
    ],
)
def test_a_file_that_fails_validation_writes_nothing(tmp_path, name, data, message) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / A).write_text("# old\n", encoding="utf-8")
    with pytest.raises(CtxwardError, match=message):
        txn.commit(bank, {bank / A: "# new\n", bank / name: data})
    assert (bank / A).read_text("utf-8") == "# old\n"
    assert sorted(p.name for p in bank.iterdir()) == [A]


def test_notes_and_paths_outside_the_bank_are_refused(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    with pytest.raises(ValueError, match="never touched"):
        txn.commit(bank, {bank / "_notes" / "ADR-1.md": "# ADR\n"})
    with pytest.raises(ValueError, match="outside the memory bank"):
        txn.commit(bank, {tmp_path / "x.md": "# X\n"})
    with pytest.raises(ValueError, match="not a memory-bank file"):
        txn.commit(bank, {bank / "notes.md": "# X\n"})
    with pytest.raises(ValueError, match="not a memory-bank file"):
        txn.commit(bank, {bank / ".." / "x.md": "# X\n"})
    txn.commit(bank, {bank / "_notes" / "archive" / "2026-01-compressed-entries.md": "# A\n"})


def _crash_at(step: str, after: int = 1) -> Callable[[str], None]:
    seen = itertools.count(1)

    def hook(name: str) -> None:
        if name == step and next(seen) == after:
            raise RuntimeError(f"crash at {step}")

    return hook


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[str], None]], None]:
    def install(hook: Callable[[str], None]) -> None:
        monkeypatch.setattr(txn, "FAULT_HOOK", hook)

    return install


def test_a_crash_after_the_commit_point_rolls_forward(tmp_path: Path, fault) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    for name in (A, B):
        (bank / name).write_text(f"# old {name}\n", encoding="utf-8")
    fault(_crash_at("renamed"))
    with pytest.raises(RuntimeError):
        txn.commit(bank, {bank / A: f"# new {A}\n", bank / B: f"# new {B}\n"})
    on_disk = {n: (bank / n).read_text("utf-8") for n in (A, B)}
    assert on_disk == {A: f"# new {A}\n", B: f"# old {B}\n"}  # a mix on disk …
    seen = txn.logical_files(bank, [A, B])
    assert seen == {A: f"# new {A}\n".encode(), B: f"# new {B}\n".encode()}  # … never for a reader
    fault(None)  # type: ignore[arg-type]
    assert txn.recover(bank) == txn.Recovery("rolled forward")
    assert (bank / B).read_text("utf-8") == f"# new {B}\n"
    assert not (bank / ".txn").exists()
    assert txn.recover(bank) == txn.Recovery(None)


def test_a_crash_before_the_commit_point_rolls_back(tmp_path: Path, fault) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / A).write_text("# old\n", encoding="utf-8")
    fault(_crash_at("journal-written"))
    with pytest.raises(RuntimeError):
        txn.commit(bank, {bank / A: "# new\n", bank / B: "# b\n"})
    assert txn.logical_files(bank, [A, B]) == {A: b"# old\n", B: None}
    fault(None)  # type: ignore[arg-type]
    assert txn.recover(bank) == txn.Recovery("rolled back")
    assert sorted(p.name for p in bank.iterdir()) == [A]


# -- trust: the MAC and the names --------------------------------------------------------------


def _interrupted(bank: Path, fault, writes: dict[str, str] | None = None) -> dict[str, object]:
    """A transaction ctxward committed in `bank` and did not apply (a crash at the commit
    point); return its journal."""
    bank.mkdir(parents=True, exist_ok=True)
    (bank / A).write_text("# old\n", encoding="utf-8")
    fault(_crash_at("committed"))
    with pytest.raises(RuntimeError):
        txn.commit(bank, {bank / k: v for k, v in (writes or {A: "# new\n"}).items()})
    fault(None)
    journal: dict[str, object] = json.loads((bank / ".txn" / "journal.json").read_bytes())
    return journal


def _rewrite(bank: Path, journal: dict[str, object]) -> bytes:
    data = json.dumps(journal).encode()
    (bank / ".txn" / "journal.json").write_bytes(data)
    return data


def _refused(bank: Path) -> txn.Refused:
    recovery = txn.recover(bank)
    assert recovery.action is None and recovery.refused is not None, recovery
    return recovery.refused


def test_a_committed_journal_carries_a_mac_of_this_bank_under_this_users_key(
    tmp_path: Path, fault
) -> None:
    from ctxward.core.userstate import secret_key

    bank = tmp_path / "bank"
    journal = _interrupted(bank, fault)
    body = {k: v for k, v in journal.items() if k != "mac"}
    assert journal["version"] == txn.JOURNAL_VERSION
    assert journal["mac"] == txn.journal_mac(secret_key(), bank, body)
    assert journal["mac"] != txn.journal_mac(secret_key(), tmp_path / "other", body)
    assert journal["mac"] != txn.journal_mac(os.urandom(32), bank, body)
    assert txn.recover(bank) == txn.Recovery("rolled forward")
    assert (bank / A).read_text("utf-8") == "# new\n"


def _no_mac(journal: dict[str, object]) -> None:
    del journal["mac"]


def _forged_mac(journal: dict[str, object]) -> None:
    body = {k: v for k, v in journal.items() if k != "mac"}
    journal["mac"] = txn.journal_mac(os.urandom(32), Path("/bank"), body)


def _retargeted(journal: dict[str, object]) -> None:
    writes = journal["writes"]
    assert isinstance(writes, list)
    writes[0]["target"] = B  # one byte of what the MAC covers


def _older_version(journal: dict[str, object]) -> None:
    journal["version"] = 1


def _another_field(journal: dict[str, object]) -> None:
    journal["bank"] = "/elsewhere"


def _non_ascii_mac(journal: dict[str, object]) -> None:
    journal["mac"] = "é" * 64  # hmac.compare_digest raises TypeError on it


def _huge_number(journal: dict[str, object]) -> bytes:
    text = json.dumps(journal).replace('"version": 2', '"version": ' + "9" * 5000)
    return text.encode()  # a 5,000-digit integer: json.loads refuses it (ValueError)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_no_mac, "no MAC: not written by ctxward on this machine"),
        (_forged_mac, "its MAC does not match"),
        (_retargeted, "its MAC does not match"),
        (_older_version, "its MAC does not match"),
        (_another_field, "unexpected fields or types"),
        (_non_ascii_mac, "unexpected fields or types"),
        (_huge_number, "not JSON"),
    ],
)
def test_a_journal_without_ctxwards_mac_is_set_aside(tmp_path: Path, fault, change, reason) -> None:
    bank = tmp_path / "bank"
    journal = _interrupted(bank, fault)
    raw = change(journal)
    if raw is None:
        data = _rewrite(bank, journal)
    else:
        data = raw
        (bank / ".txn" / "journal.json").write_bytes(data)
    refused = _refused(bank)
    assert reason in refused.reason
    assert refused.path == bank / ".txn" / "journal.json"
    assert refused.kept_as is not None and refused.kept_as.parent == bank / ".txn"
    assert refused.kept_as.name.startswith(txn.REFUSED_PREFIX)
    assert refused.kept_as.read_bytes() == data
    assert sorted(p.name for p in (bank / ".txn").iterdir()) == [refused.kept_as.name]
    assert (bank / A).read_text("utf-8") == "# old\n"  # nothing of it applied
    assert txn.recover(bank) == txn.Recovery(None)  # the next command: nothing to say
    assert txn.commit(bank, {bank / A: "# newer\n"}) == [A]  # and the bank works
    assert sorted(p.name for p in (bank / ".txn").iterdir()) == [refused.kept_as.name]


def test_a_journal_copied_from_another_bank_is_set_aside(tmp_path: Path, fault) -> None:
    here, there = tmp_path / "here" / "bank", tmp_path / "there" / "bank"
    _interrupted(there, fault)
    here.mkdir(parents=True)
    (here / A).write_text("# mine\n", encoding="utf-8")
    shutil.copytree(there / ".txn", here / ".txn")
    assert "its MAC does not match" in _refused(here).reason
    assert (here / A).read_text("utf-8") == "# mine\n"
    assert txn.recover(there) == txn.Recovery("rolled forward")  # where it was written: fine


def test_a_fresh_user_with_no_key_trusts_no_journal_and_gets_no_key(tmp_path: Path, fault) -> None:
    from ctxward.core import userstate

    bank = tmp_path / "bank"
    _interrupted(bank, fault)
    key = userstate.state_dir() / userstate.KEY_FILE
    key.unlink()
    assert "its MAC does not match" in _refused(bank).reason
    assert not key.exists()


@pytest.mark.parametrize(
    "name",
    [
        A,
        B,
        state.INDEX,
        state.NEXT_ID,
        sprint.XREF_ARCHIVE.format(date="2026-01-02"),
        archive.relpath("2026-01"),
        zz.relpath("3"),
        zz.relpath("3.1"),
        zz.relpath("2a"),
        ".tmp/L1-2026-01-02-phase1-hermes.md",
        ".tmp/phase1 entries.yaml",
        learnings.FILE,
    ],
)
def test_every_name_a_bank_transaction_writes_is_a_bank_name(name: str) -> None:
    assert txn.bank_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "../x",
        "../../home/.bashrc",
        "_xref/../../x",
        "/etc/passwd",
        "//etc/passwd",
        "01-active-context.md\x00",
        "01-active-context.md/",
        "./01-active-context.md",
        "_xref//index.md",
        "_xref\\index.md",
        ".txn/journal.json",
        ".txn/0000.new",
        ".tmp/compress.lock",
        ".tmp/compress.lock.owner",
        ".tmp/.hidden.md",
        ".tmp/..",
        ".tmp/sub/x.md",
        "_notes/ADR-1.md",
        "_notes/archive/anything.md",
        "evil/.bashrc",
        "notes.md",
        "",
        ".",
        7,
        None,
    ],
)
def test_a_name_outside_what_the_bank_uses_is_refused(name: object) -> None:
    assert not txn.bank_name(name)


def _signed(bank: Path, journal: dict[str, object]) -> dict[str, object]:
    """`journal` with a correct MAC: what only a bug (or a stolen key) could produce."""
    from ctxward.core.userstate import secret_key

    body = {k: v for k, v in journal.items() if k != "mac"}
    return {**body, "mac": txn.journal_mac(secret_key(), bank, body)}


@pytest.mark.parametrize(
    ("where", "value", "reason"),
    [
        ("target", "../outside.md", "not a memory-bank file"),
        ("target", "/tmp/outside.md", "not a memory-bank file"),
        ("staged", "../../outside.md", "as a staged file"),
        ("deletes", "../outside.md", "not a memory-bank file"),
    ],
)
def test_names_are_checked_even_under_a_good_mac(tmp_path, fault, where, value, reason) -> None:
    bank = tmp_path / "bank"
    journal = _interrupted(bank, fault)
    writes = journal["writes"]
    assert isinstance(writes, list)
    if where == "deletes":
        journal["deletes"] = [value]
    else:
        writes[0][where] = value
    _rewrite(bank, _signed(bank, journal))
    assert reason in _refused(bank).reason
    assert (bank / A).read_text("utf-8") == "# old\n"


def test_a_staged_file_changed_after_the_commit_is_refused(tmp_path: Path, fault) -> None:
    bank = tmp_path / "bank"
    _interrupted(bank, fault)
    (bank / ".txn" / "0000.new").write_text("# swapped\n", encoding="utf-8")
    assert "does not match its sha256" in _refused(bank).reason
    assert (bank / A).read_text("utf-8") == "# old\n"


@pytest.mark.parametrize("where", ["folder on the way", "at the target", "at the staged name"])
def test_a_link_planted_after_the_commit_is_refused_never_followed(
    tmp_path: Path, fault, where: str
) -> None:
    bank = tmp_path / "bank"
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.md"
    victim.write_text("# the victim\n", encoding="utf-8")
    _interrupted(bank, fault, {A: "# new\n", IDS: '{"next": {}}'})
    if where == "folder on the way":
        (bank / "_xref").symlink_to(outside)  # not made yet: the roll-forward would make it
    elif where == "at the target":
        (bank / A).unlink()
        (bank / A).symlink_to(victim)
    else:
        (bank / ".txn" / "0000.new").unlink()
        (bank / ".txn" / "0000.new").symlink_to(victim)
    before = sorted((p.name, p.read_bytes()) for p in outside.iterdir())
    assert "symbolic link" in _refused(bank).reason
    assert sorted((p.name, p.read_bytes()) for p in outside.iterdir()) == before


def test_logical_files_ignore_a_journal_ctxward_did_not_write(tmp_path: Path, fault) -> None:
    bank = tmp_path / "bank"
    journal = _interrupted(bank, fault)
    assert txn.logical_files(bank, [A]) == {A: b"# new\n"}
    _no_mac(journal)
    _rewrite(bank, journal)
    assert txn.logical_files(bank, [A]) == {A: b"# old\n"}


def test_a_txn_that_is_not_a_folder_is_refused_and_left(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    (tmp_path / "outside").mkdir()
    (bank / ".txn").symlink_to(tmp_path / "outside")
    refused = _refused(bank)
    assert (refused.path, refused.kept_as) == (bank / ".txn", None)
    assert "a symbolic link" in refused.reason
    with pytest.raises(CtxwardError, match="symbolic link"):
        txn.commit(bank, {bank / A: "# a\n"})
    assert list((tmp_path / "outside").iterdir()) == []


# -- the lock and the sweep never follow a link ---------------------------------------------------


def test_the_lock_file_is_never_opened_through_a_link(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    (bank / ".tmp").mkdir(parents=True)
    (bank / ".tmp" / txn.LOCK_FILE).symlink_to(tmp_path / "created")
    with pytest.raises(CtxwardError, match="symbolic link"), txn.bank_lock(bank):
        pass
    assert not (tmp_path / "created").exists()


def test_a_tmp_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    (tmp_path / "outside").mkdir()
    (bank / ".tmp").symlink_to(tmp_path / "outside")
    for portable in (False, True):
        with (
            pytest.raises(CtxwardError, match="symbolic link"),
            txn.bank_lock(bank, portable=portable),
        ):
            pass
    assert list((tmp_path / "outside").iterdir()) == []


def test_the_portable_lock_breaks_a_linked_owner_without_following_it(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    owner = bank / ".tmp" / txn.OWNER_FILE
    owner.parent.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text(str(os.getpid()), encoding="utf-8")  # a live pid: it would wait 1 h
    owner.symlink_to(victim)
    with txn.bank_lock(bank, portable=True, timeout=2):
        assert not owner.is_symlink() and owner.read_text("utf-8") == str(os.getpid())
    assert victim.read_text("utf-8") == str(os.getpid())
    assert not os.path.lexists(owner)


def test_the_stale_sweep_removes_old_files_and_leaves_links(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    (bank / "_xref").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    old = time.time() - 3600
    for path in (bank / "_xref" / "left.tmp", outside / "victim.tmp", outside / "inner.tmp"):
        path.write_text("x", encoding="utf-8")
        os.utime(path, (old, old))
    (bank / "_xref" / "link.tmp").symlink_to(outside / "victim.tmp")
    os.utime(bank / "_xref" / "link.tmp", (old, old), follow_symlinks=False)
    (bank / "_xref" / "linked").symlink_to(outside)
    assert txn.remove_stale_tmp(bank) == ["_xref/left.tmp"]
    assert (bank / "_xref" / "link.tmp").is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["inner.tmp", "victim.tmp"]


# -- SIGKILL at random points of many promotions ---------------------------------------------------


def _entry(agent: str, summary: str, phase: str, **extra: str) -> dict[str, object]:
    return {
        "agent": agent,
        "phase": phase,
        "date": "2026-01-02",
        "summary": summary,
        "files_changed": [f"src/{agent}.py"],
        "status": "complete",
        **extra,
    }


def _steps(root: Path) -> list[tuple[list[str], str]]:
    """A sequence of promotions touching every file: 01, 02, ZZ, xref, ids, the C7 archive."""
    folder = root / "in"
    folder.mkdir(parents=True, exist_ok=True)
    (root / ".ctxward").mkdir(exist_ok=True)
    (root / ".ctxward" / "config.yaml").write_text("bank:\n  total_budget: 14\n", "utf-8")
    batches = [
        (
            "1",
            [
                _entry("hermes", "New POST /api/login endpoint; new table sessions in schema", "1"),
                _entry("demeter", "Renamed helper module", "1"),
                _entry("prometheus", "Fixed typo in README", "1"),
            ],
        ),
        (
            "1",
            [
                _entry(
                    "themis",
                    "Reviewed",
                    "1",
                    type="REVIEW",
                    verdict="APPROVED",
                    decision="Rotate tokens",
                )
            ],
        ),
        ("2", [_entry("aphrodite", "Added auth endpoint", "2")]),
        ("2", [_entry("aphrodite", "New LoginForm component; new table prefs in schema", "2")]),
        (
            "3",
            [_entry(f"agent{i}", f"Fixed typo number {i} in README", "3") for i in range(6)]
            + [_entry(f"mid{i}", f"Renamed helper module {i}", "3") for i in range(4)],
        ),
        ("3", [_entry("hermes", "Implemented the API", "3", type="IMPL")]),
    ]
    steps = []
    for index, (phase, entries) in enumerate(batches):
        path = folder / f"step{index}.json"
        path.write_text(json.dumps({"subtask_summary": entries}), encoding="utf-8")
        steps.append(([str(path)], phase))
    return steps


def _run(root: Path, steps: list[tuple[list[str], str]]) -> None:
    for paths, phase in steps:
        promote(Project(root), paths, phase=phase, now=NOW)


def _files(bank: Path) -> dict[str, bytes]:
    if not bank.is_dir():
        return {}
    out = {}
    for path in sorted(bank.rglob("*")):
        rel = path.relative_to(bank).as_posix()
        if path.is_file() and not rel.startswith(".txn") and "compress.lock" not in rel:
            out[rel] = path.read_bytes()
    return out


def _logical(bank: Path) -> dict[str, bytes]:
    """What a reader sees without recovering: the files, with a committed journal overlaid."""
    names = set(_files(bank))
    journal = bank / ".txn" / "journal.json"
    if journal.is_file():
        names |= {entry["target"] for entry in json.loads(journal.read_bytes())["writes"]}
    seen = txn.logical_files(bank, sorted(names))
    return {name: data for name, data in sorted(seen.items()) if data is not None}


def _parses(files: dict[str, bytes]) -> None:
    for name, data in files.items():
        if name.endswith(".json"):
            assert isinstance(json.loads(data), dict), name
        else:
            assert data.decode("utf-8").startswith("# "), name
    if active.FILE in files:
        active.parse(files[active.FILE].decode())
    if progress.FILE in files:
        progress.parse(files[progress.FILE].decode())
    if state.INDEX in files:
        index = xref.parse_index(files[state.INDEX].decode())
        xref.parse_ids(files[state.NEXT_ID].decode(), index)


def _reference(tmp_path: Path) -> tuple[list[dict[str, bytes]], list[int], float]:
    """The states after 0..K promotions, the fault-hook steps left from each, the duration."""
    root = tmp_path / "reference"
    root.mkdir()
    steps = _steps(root)
    bank = Project(root).bank_dir
    states: list[dict[str, bytes]] = [{}]
    calls = [0]
    done = [0]

    def count(_: str) -> None:
        calls[0] += 1

    txn.FAULT_HOOK = count
    started = time.perf_counter()
    try:
        for paths, phase in steps:
            promote(Project(root), paths, phase=phase, now=NOW)
            states.append(_files(bank))
            done.append(calls[0])
    finally:
        txn.FAULT_HOOK = None
    return states, [calls[0] - before for before in done], time.perf_counter() - started


def _child(root: Path, start: int, kill_at: int | None) -> None:
    """In a forked child: run the promotions from `start`, SIGKILLing itself at fault step
    `kill_at` (the parent may SIGKILL it at any time too)."""
    try:
        if kill_at is not None:
            seen = itertools.count(1)

            def hook(_: str) -> None:
                if next(seen) == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)

            txn.FAULT_HOOK = hook
        _run(root, _steps(root)[start:])
    except BaseException:  # noqa: BLE001 - reported to the parent through the exit code
        (root / "child-error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        os._exit(1)
    os._exit(0)


def _crash_many(tmp_path: Path, kills: int, seed: int) -> dict[str, int]:
    states, steps_left, duration = _reference(tmp_path)
    assert len({json.dumps(sorted(s)) for s in states}) > 3 and steps_left[0] > 20
    root = tmp_path / "trial"
    root.mkdir()
    _steps(root)
    bank = Project(root).bank_dir
    rng = random.Random(seed)
    reached = 0
    outcomes = {"killed": 0, "finished": 0, "rolled forward": 0, "rolled back": 0}
    for trial in range(kills):
        if reached == len(states) - 1:  # complete: start over from an empty bank
            import shutil

            shutil.rmtree(bank)
            reached = 0
        by_step = trial % 2 == 0
        pid = os.fork()
        if pid == 0:
            _child(root, reached, rng.randint(1, steps_left[reached]) if by_step else None)
        if not by_step:  # a SIGKILL from outside, at a random time within what is left to run
            left = (len(states) - 1 - reached) / (len(states) - 1)
            time.sleep(rng.uniform(0, duration * left))
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert not (root / "child-error.txt").exists(), (root / "child-error.txt").read_text()
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        assert killed or os.WEXITSTATUS(status) == 0
        outcomes["killed" if killed else "finished"] += 1
        seen = _logical(bank)  # before any recovery: a reader sees a complete state
        assert seen in states, f"trial {trial}: a reader saw a mix"
        with state.session(Project(root)) as opened:  # what every next command does first
            if opened.recovered:
                outcomes[opened.recovered] += 1
        now = _files(bank)
        assert now == seen and now in states, f"trial {trial}: recovery left a mix"
        _parses(now)
        index = states.index(now)
        assert index >= reached, "a committed promotion was lost"
        reached = index
    return outcomes


@pytest.mark.slow  # SIGKILL loop
def test_sigkill_at_random_points_leaves_a_before_or_after_state(tmp_path: Path) -> None:
    outcomes = _crash_many(tmp_path, kills=40, seed=1)
    assert outcomes["killed"] > 0


@pytest.mark.slow
def test_sigkill_many_times_leaves_a_before_or_after_state(tmp_path: Path) -> None:
    outcomes = _crash_many(tmp_path, kills=200, seed=20260102)
    assert outcomes["killed"] >= 120
    assert outcomes["rolled forward"] > 0 and outcomes["rolled back"] > 0


# -- concurrency ----------------------------------------------------------------------------------


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
def test_sixteen_processes_promoting_at_once_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "in").mkdir(parents=True)
    paths = []
    for i in range(16):
        phase = "1" if i % 2 else "2"
        text = (
            f"New GET /api/items/{i} endpoint; new table items_{i} in the schema"
            if i % 4 == 0
            else f"Renamed helper module {i}"
        )
        path = root / "in" / f"e{i}.json"
        path.write_text(json.dumps({"subtask_summary": _entry(f"agent{i}", text, phase)}), "utf-8")
        paths.append((str(path), phase))
    go = root / "go"
    pids = []
    for path, phase in paths:
        pid = os.fork()
        if pid == 0:
            try:
                while not go.exists():
                    time.sleep(0.001)
                promote(Project(root), [path], phase=phase, now=NOW)
            except BaseException:  # noqa: BLE001
                (root / f"error-{os.getpid()}.txt").write_text(traceback.format_exc(), "utf-8")
                os._exit(1)
            os._exit(0)
        pids.append(pid)
    go.write_text("go", encoding="utf-8")
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        errors = [p.read_text() for p in root.glob("error-*.txt")]
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, errors
    bank = Project(root).bank_dir
    doc = active.parse((bank / active.FILE).read_text("utf-8"))
    keys = ["|".join(identities.split(row.key)[:3]) for row in doc.rows()]
    assert sorted(keys) == sorted(f"2026-01-02|{p}|agent{i}" for i, (_, p) in enumerate(paths))
    log = (bank / progress.FILE).read_text("utf-8")
    for i, (_, phase) in enumerate(paths):
        assert log.count(f"### 2026-01-02 — Phase {phase}: agent{i}\n") == 1
    index = xref.parse_index((bank / "_xref" / "index.md").read_text("utf-8"))
    ids = [e.id for e in index.entities]
    assert len(ids) == len(set(ids)) == 8  # 4 endpoints + 4 tables, each id once
    counters = json.loads((bank / "_xref" / "_next_id.json").read_text("utf-8"))["next"]
    assert counters["E"] == 5 and counters["M"] == 5
    assert not (bank / ".txn").exists()


def test_the_portable_lock_serializes_too(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    counter = tmp_path / "counter"
    counter.write_text("0", encoding="utf-8")
    pids = []
    for _ in range(6):
        pid = os.fork()
        if pid == 0:
            try:
                for _ in range(15):
                    with txn.bank_lock(bank, portable=True):
                        value = int(counter.read_text("utf-8"))
                        time.sleep(0.0005)
                        counter.write_text(str(value + 1), "utf-8")
            except BaseException:  # noqa: BLE001
                os._exit(1)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert counter.read_text("utf-8") == "90"
    assert not (bank / ".tmp" / "compress.lock.owner").exists()


def test_the_portable_lock_breaks_a_dead_owner(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    owner = bank / ".tmp" / "compress.lock.owner"
    owner.parent.mkdir(parents=True)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    owner.write_text(str(pid), encoding="utf-8")  # a process that is gone
    with txn.bank_lock(bank, portable=True, timeout=2):
        assert owner.read_text("utf-8") == str(os.getpid())
