"""The previous phase's context brought to a sub-agent dispatch (seed 000 §8, §9, §15).

When a dispatch starts (Claude Code `Agent`/`Task`, OpenCode `task`; the PreToolUse handler
calls `for_dispatch`) and the bank holds the context of the phase promoted last (its
`last-phase` in `01-active-context.md`), the sub-agent's prompt gains the seed's block before
its own text: `## Previous Wave Learnings` (the feature's `learnings.md`, when there is one) and
`## Compressed Context (Phase N → Phase N+1)` (the ZZ artifact), under a provenance line that
names the files and their sha256 (templates bank/dispatch_context.md.j2). The G9 guard measures
the prompt with it; when the block would move the prompt into a higher tier, a one-line pointer
(path + sha256) goes in its place (bank/dispatch_pointer.txt.j2), and when even that would, the
prompt is left as it was. A prompt that carries the provenance line or the block's heading
already is left alone (a retried dispatch, an orchestrator that pasted `bank context`).

Trust (a cloned repository may commit any file under `.ctxward/`): a ZZ artifact goes out only
when `bank promote` wrote those exact bytes for this user, and a learnings file
only when the promotion saw those exact bytes. The promotion seals each (`invariants.trust.seal`:
an HMAC under this user's secret over the file's bytes) into the bank marker of
`01-active-context.md` (`zz-seal`, `learnings-seal`): no clone can forge one, and nothing
outside the project is written. The seal does not name the path, so that a bank reads the same
wherever its project is (a user's own bank copied to another of their projects stays theirs).
Standard library only up to the rendering; `bank.inject_context: false` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxward.core.project import Project

TAG = "[ctxward bank: "
MAX_ACTIVE_BYTES = 4 * 1024 * 1024  # 01-active-context.md: 100 budget lines and what users add
MAX_ZZ_BYTES = 512 * 1024  # a ZZ artifact is a few KB (100 budget lines at most)
MAX_LEARNINGS_BYTES = 512 * 1024
_BANK_MARKER = re.compile(r"^<!-- ctxward:bank (?P<attrs>[^\n]*?) -->$", re.MULTILINE)
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_PHASE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$")
_FEATURE = re.compile(r"[^/\\.\x00][^/\\\x00]{0,127}")


class Context:
    """What the bank gives the next phase: the rendered block and its pointer."""

    __slots__ = ("block", "phase", "pointer", "zz_path", "zz_sha256")

    def __init__(self, phase: str, zz_path: str, zz_sha256: str, block: str, pointer: str):
        self.phase = phase
        self.zz_path = zz_path
        self.zz_sha256 = zz_sha256
        self.block = block
        self.pointer = pointer


def zz_relpath(phase: str) -> str:
    """As `bank.zz.relpath` (not imported: it pulls the bank's renderers in)."""
    return f".tmp/ZZ-phase{phase}-context.md"


def feature_ok(name: str) -> bool:
    """A feature name, not a path (its learnings file is `learnings/<name>/learnings.md`)."""
    return _FEATURE.fullmatch(name) is not None


def learnings_file(project: Project, feature: str) -> str:
    return os.path.join(str(project.bank_dir.parent), "learnings", feature, "learnings.md")


def _read(path: str, limit: int) -> bytes | None:
    from ctxward.core.fsutil import read_regular

    try:
        return read_regular(path, limit=limit)
    except (OSError, ValueError):  # missing, a link, a FIFO, too large: nothing to give
        return None


def _params(active: bytes) -> dict[str, str]:
    import html

    match = _BANK_MARKER.search(active.decode("utf-8", "replace"))
    if match is None:
        return {}
    return {name: html.unescape(value) for name, value in _ATTR.findall(match.group("attrs"))}


def _sealed_bytes(kind: str, data: bytes) -> bytes:
    return b"ctxward bank context\x00" + kind.encode() + b"\x00" + data


def seal(kind: str, data: bytes) -> str:
    """The seal of a `kind` ("zz" or "learnings") file holding `data` (`bank promote`'s)."""
    from ctxward.invariants.trust import seal as hmac_seal

    return hmac_seal(_sealed_bytes(kind, data))


def _sealed(kind: str, data: bytes, mac: str) -> bool:
    """Whether `mac` is this user's seal of `data` (never creates the user's key)."""
    from ctxward.core import userstate
    from ctxward.invariants.trust import is_sealed

    if not mac or not os.path.lexists(userstate.state_dir() / userstate.KEY_FILE):
        return False
    return is_sealed(_sealed_bytes(kind, data), mac)


def already_given(prompt: str, phase: str) -> bool:
    """Whether `prompt` carries this context already (its provenance line or its heading)."""
    return TAG in prompt or f"## Compressed Context (Phase {phase} → " in prompt


def for_dispatch(project: Project) -> Context | None:
    """The context of the phase promoted last, when the bank holds a trusted one."""
    bank = str(project.bank_dir)
    active = _read(os.path.join(bank, "01-active-context.md"), MAX_ACTIVE_BYTES)
    if active is None:
        return None
    params = _params(active)
    phase = params.get("last-phase", "")
    if not _PHASE.match(phase):
        return None
    zz_path = os.path.join(bank, zz_relpath(phase))
    zz = _read(zz_path, MAX_ZZ_BYTES)
    if zz is None or not _sealed("zz", zz, params.get("zz-seal", "")):
        return None
    try:
        zz_text = zz.decode("utf-8")
    except UnicodeDecodeError:
        return None
    learnings_text, learnings_rel, learnings_sha = "", "", ""
    feature = params.get("feature", "")
    if feature and feature_ok(feature):
        path = learnings_file(project, feature)
        data = _read(path, MAX_LEARNINGS_BYTES)
        if data is not None and _sealed("learnings", data, params.get("learnings-seal", "")):
            try:
                learnings_text = data.decode("utf-8").strip()
            except UnicodeDecodeError:
                learnings_text = ""
            if learnings_text:
                learnings_rel = project.relative(Path(path))
                learnings_sha = hashlib.sha256(data).hexdigest()
    from ctxward.core.render import render
    from ctxward.core.scrub import redact

    next_phase = str(int(phase) + 1) if phase.isdigit() else f"after {phase}"
    facts = {
        "phase": phase,
        "next_phase": next_phase,
        "zz": project.relative(Path(zz_path)),
        "zz_abs": os.path.realpath(zz_path),
        "learnings_abs": os.path.realpath(learnings_file(project, feature))
        if learnings_rel
        else "",
        "zz_sha256": hashlib.sha256(zz).hexdigest(),
        "learnings_path": learnings_rel,
        "learnings_sha256": learnings_sha,
        "tag": TAG,
    }
    block = render(
        "bank/dispatch_context.md.j2", learnings=learnings_text, body=zz_text.strip(), **facts
    )
    pointer = render("bank/dispatch_pointer.txt.j2", **facts)
    return Context(
        phase, facts["zz"], facts["zz_sha256"], redact(block).strip(), redact(pointer).strip()
    )


def splice(prompt: str, text: str) -> str:
    """The prompt with the bank's text before it (the seed's "prompt preamble", §9)."""
    return f"{text}\n\n{prompt}"
