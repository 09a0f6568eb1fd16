"""The per-tool-call hook path (standard library only): one call observed, its state on disk."""

from __future__ import annotations

import errno
import os
import stat
import time

from ctxward.core import hotjson
from ctxward.core.confine import ensure_folder, refuse_links_on_the_way
from ctxward.core.drift_settings import default_limits
from ctxward.core.sessionfiles import SESSIONS_DIRNAME, safe_id
from ctxward.drift.machine import Tracker
from ctxward.drift.signatures import (
    ARGS,
    EVENTS,
    FILE,
    KEY,
    KIND,
    LOG_SUFFIX,
    MAX_PENDING,
    OK,
    ORPHAN_SECONDS,
    POST_TOOL_USE,
    STATE_SUFFIX,
    STATE_VERSION,
    TAIL_BYTES,
    TOOL,
    args_digest,
    entry,
)
from ctxward.errors import BadInput, CtxwardError

# `typing.TYPE_CHECKING` without importing typing: this module is on the PostToolUse hot path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from typing import Any

# The call the fast path of this process has observed: the handler that runs after it in the
# same process must not observe it twice (a payload without tool_use_id cannot be recognised).
_observed_here: str | None = None


def observed_quietly(data: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """hookio's hot path: observe this PostToolUse(Failure) call; True when there is nothing to
    say (no signature waiting to be told). Anything unusual (a bad payload, an unwritable
    folder, a bad config) answers False: the full path then observes or reports it properly.
    """
    global _observed_here
    try:
        name = data.get("hook_event_name")
        if name not in EVENTS:
            return False
        root = _root(data, env)
        if root is None:  # not a project: nothing is observed, no .ctxward/ is made there
            return True
        waiting = _observe(root, str(name), data, take=False)
    except Exception:  # noqa: BLE001 - the full path reports what went wrong, in one line
        return False
    if waiting:
        _observed_here = _fingerprint(data)
    return not waiting


def record(project_root: str | os.PathLike[str], event: str, data: Mapping[str, Any]) -> list[Any]:
    """The handler's side: observe the call (unless already observed) and take every report
    waiting for the model (they are removed: each is told once). Returns the reports."""
    if event not in EVENTS:
        raise BadInput(f"drift observes {', '.join(EVENTS)}, not {event}")
    return _observe(os.fspath(project_root), event, data, take=True)


def _root(data: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """`project.find_project` without pathlib: $CLAUDE_PROJECT_DIR, else the nearest folder
    with .git or .ctxward above the payload's cwd; None when it is no project."""
    explicit = env.get("CLAUDE_PROJECT_DIR")
    if explicit:
        return os.path.realpath(explicit)
    cwd = data.get("cwd")
    start = os.path.realpath(cwd if isinstance(cwd, str) and cwd else os.getcwd())
    folder = start
    while True:
        if os.path.exists(os.path.join(folder, ".git")) or os.path.exists(
            os.path.join(folder, ".ctxward")
        ):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _fingerprint(data: Mapping[str, Any]) -> str:
    return hotjson.dumps(
        [
            data.get("session_id"),
            data.get("hook_event_name"),
            data.get("tool_use_id"),
            data.get("tool_name"),
            args_digest(data.get("tool_input")),
        ],
        default=str,
    )


def _observe(root: str, event: str, data: Mapping[str, Any], *, take: bool) -> list[Any]:
    global _observed_here
    session_id = data.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        raise BadInput(f"{event} payload field 'session_id' is not a string")
    tool = data.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise BadInput(f"{event} payload has no 'tool_name'")
    call_id = data.get("tool_use_id")
    call_id = call_id if isinstance(call_id, str) else ""
    quiet = data.get("calls_since_text")  # a host that counts it itself (the OpenCode plugin)
    quiet = quiet if isinstance(quiet, int) and not isinstance(quiet, bool) and quiet >= 0 else None
    folder = os.path.join(root, ".ctxward", SESSIONS_DIRNAME)
    here = _fingerprint(data) if take else None
    agent = data.get("agent_id")  # inside a sub-agent: its own window, not the parent's
    key = f"{session_id or ''}-agent-{agent}" if isinstance(agent, str) and agent else session_id
    with _Session(root, folder, key or "") as session:
        tracker = session.tracker
        if tracker is None:
            return []
        repeated = tracker.seen(call_id) or (here is not None and here == _observed_here)
        if not repeated:
            ok = event == POST_TOOL_USE
            call = entry(tool, data.get("tool_input"), ok, call_id, root)
            tail = None
            if quiet is None and not (isinstance(agent, str) and agent):  # not a sub-agent's
                tail = _read_transcript(tracker, data.get("transcript_path"))
                if tail is not None and tail.seen and (tail.text or tracker.quiet is None):
                    tracker.text()  # Claude Code: the model wrote text since the last call
            started = tracker.observe(call, quiet)
            told = _context_reports(tracker, tool, data.get("tool_response"), tail)
            now = _now()
            line: dict[str, Any] = {"n": tracker.n, "t": now, "tool": call[TOOL]}
            line["args"] = call[ARGS]
            if call[FILE]:
                line["file"] = call[FILE]
            line["ok"] = bool(call[OK])
            if call[KIND]:
                line["kind"] = call[KIND]
            if call[KEY] != f"{call[TOOL]}:{call[FILE]}":
                line["key"] = call[KEY]  # the shell program the cycling key names
            if call_id:
                line["id"] = call_id
            session.lines.append(line)
            for report in started:
                session.lines.append(
                    {"n": tracker.n, "t": now, "drift": report["signature"], **_evidence(report)}
                )
                tracker.pending = [
                    p for p in tracker.pending if p.get("signature") != report["signature"]
                ]
                tracker.pending.append({**report, "t": now})
            for report in told:
                session.lines.append(
                    {"n": tracker.n, "t": now, "context": report["signature"], **_evidence(report)}
                )
                tracker.pending.append({**report, "n": tracker.n, "t": now})
            del tracker.pending[: max(0, len(tracker.pending) - MAX_PENDING)]
        if here is not None and here == _observed_here:
            _observed_here = None
        waiting = list(tracker.pending)
        if take and waiting:
            tracker.pending = []
            session.changed = True
        return waiting


def _read_transcript(tracker: Tracker, path: object) -> Any:
    """What the session's transcript gained since the last call (`transcripttail.Tail`), its
    offset saved in the tracker; None when there is none to read."""
    if not isinstance(path, str) or not path:
        return None
    from ctxward.transcript.tail import scan

    saved = tracker.context.get("tail")
    offset, inode = saved if isinstance(saved, list) and len(saved) == 2 else (0, 0)
    if not isinstance(offset, int) or not isinstance(inode, int):
        offset, inode = 0, 0
    tail = scan(path, offset, inode)
    if tail is not None:
        tracker.context["tail"] = [tail.offset, tail.inode]
    return tail


def _context_reports(
    tracker: Tracker, tool: str, response: object, tail: Any
) -> list[dict[str, Any]]:
    """The large-output and pressure reports of this call (`ctxward.drift.context`)."""
    from ctxward.core.drift_settings import context_defaults
    from ctxward.drift import context as contextcheck

    settings = tracker.limits.get("context")
    if not isinstance(settings, dict):
        settings = context_defaults()
    found = contextcheck.large_output(tracker.context, tool, response, settings)
    stage = contextcheck.pressure(tracker.context, tail, settings)
    if stage is not None:
        found.append(stage)
    return found


def _evidence(report: Mapping[str, Any]) -> dict[str, Any]:
    return {"evidence": report["evidence"]}


def _now() -> float:
    return round(time.time(), 3)


class _Session:
    """The locked state of one session: load (or rebuild) on enter, save and append on exit.

    `tracker` is None when drift detection is switched off in the config; then nothing is
    locked, appended or kept but the config's fingerprint, so the next call reads no YAML.
    """

    def __init__(self, root: str, folder: str, session_id: str) -> None:
        name = safe_id(session_id)
        self.root = root
        self.folder = folder
        self.log_path = os.path.join(folder, name + LOG_SUFFIX)
        self.state_path = os.path.join(folder, name + STATE_SUFFIX)
        self.tracker: Tracker | None = None
        self.lines: list[dict[str, Any]] = []
        self.changed = False
        self._fd = -1
        self._config_key = ""
        self._limits: dict[str, Any] = {}

    def __enter__(self) -> _Session:
        refuse_links_on_the_way(self.folder)  # a planted .ctxward or sessions link: not followed
        config = os.path.join(self.root, ".ctxward", "config.yaml")
        try:
            info = os.stat(config)
            self._config_key = f"{info.st_mtime_ns}:{info.st_size}:{info.st_ino}"
        except FileNotFoundError:
            self._config_key = "-"
        saved = self._read_state()
        if saved is not None and saved.get("config") == self._config_key:
            limits = saved.get("limits")
            if isinstance(limits, dict):
                self._limits = limits
        if not self._limits:
            self._limits = _load_limits(self.root) if self._config_key != "-" else default_limits()
            self.changed = True
        if not self._limits["enabled"]:
            if self.changed:
                ensure_folder(self.folder)
                self._write_state({"v": STATE_VERSION, "off": True})
            return self
        ensure_folder(self.folder)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        try:
            self._fd = open_state_file(self.log_path, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise CtxwardError(
                    f"{self.log_path}: refusing a symbolic link; the call is not observed"
                ) from None
            if exc.errno not in (errno.EINVAL, errno.ENXIO):  # ENXIO: a FIFO nobody reads
                raise
            raise CtxwardError(
                f"{self.log_path}: not a regular file (a FIFO?); the call is not observed"
            ) from None
        try:
            import fcntl
        except ImportError:  # no flock here: O_APPEND keeps each line whole; the window may race
            pass
        else:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        saved = self._read_state()  # again: another call may have written it while we waited
        try:
            if saved is None or saved.get("off"):
                raise ValueError("no state")
            self.tracker = Tracker.from_json(saved, self._limits)
        except ValueError:
            self.tracker = self._rebuild()
            self.changed = True
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if self.tracker is not None and error is None and (self.lines or self.changed):
                self._write_state(self.tracker.to_json())
                if self.lines:
                    data = "".join(
                        hotjson.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
                        for line in self.lines
                    )
                    os.write(self._fd, data.encode("utf-8", "surrogatepass"))
        finally:
            if self._fd >= 0:
                os.close(self._fd)  # closing releases the lock
                self._fd = -1

    def _read_state(self) -> dict[str, Any] | None:
        try:
            with open(open_state_file(self.state_path), "rb") as handle:
                data = hotjson.loads(handle.read())
        except (OSError, ValueError, RecursionError):  # a damaged cache is rebuilt from the log
            return None
        return data if isinstance(data, dict) else None

    def _write_state(self, state: dict[str, Any]) -> None:
        body = {**state, "config": self._config_key, "limits": self._limits}
        raw = hotjson.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )
        # One temporary name per state file, so that a crash's leftover is reused, not left. Under
        # the log's lock it is simply truncated; without it (drift switched off: no log is held)
        # it is created exclusively, and one left by a crash a minute ago is removed instead.
        tmp = self.state_path + ".tmp"
        flags = os.O_WRONLY | os.O_CREAT
        try:
            fd = open_state_file(tmp, flags | (os.O_TRUNC if self._fd >= 0 else os.O_EXCL))
        except FileExistsError:  # another call is writing it, or a crash left it
            try:
                if os.stat(tmp).st_mtime < time.time() - ORPHAN_SECONDS:
                    os.unlink(tmp)
            except OSError:
                pass  # gone already
            return  # the state is a cache: the next call writes it
        except OSError:  # not a regular file (a FIFO planted there): it is ours by name
            try:  # noqa: SIM105 - contextlib would be one more import on every tool call
                os.unlink(tmp)
            except OSError:
                pass
            return
        try:
            os.write(fd, raw)
        finally:
            os.close(fd)
        os.replace(tmp, self.state_path)

    def _rebuild(self) -> Tracker:
        """The tracker replayed from the last TAIL_BYTES of the log (nothing re-reported)."""
        tracker = Tracker(self._limits)
        for line in _tail_lines(self.log_path, TAIL_BYTES):
            if "drift" in line:
                continue
            n = line.get("n")
            if line.get("text") is True:
                tracker.text()
            elif isinstance(line.get("tool"), str):
                kind = line.get("kind") if line.get("kind") in ("write", "search") else ""
                call = [
                    line["tool"],
                    str(line.get("key") or f"{line['tool']}:{line.get('file') or ''}"),
                    str(line.get("args", "")),
                    str(line.get("file") or ""),
                    1 if line.get("ok") else 0,
                    kind,
                    str(line.get("id") or ""),
                ]
                tracker.observe(call)
            if isinstance(n, int) and not isinstance(n, bool) and n >= tracker.n:
                tracker.n = n
        tracker.pending = []
        return tracker


def limits_of(root: str | os.PathLike[str]) -> dict[str, Any]:
    """The observer's limits for the project at `root` (config.yaml's `drift:` and `context:`)."""
    config = os.path.join(os.fspath(root), ".ctxward", "config.yaml")
    return _load_limits(os.fspath(root)) if os.path.exists(config) else default_limits()


def _load_limits(root: str) -> dict[str, Any]:
    """The `drift:` section of the project's config (YAML: only when the file changed)."""
    from pathlib import Path

    from ctxward.core.config import load
    from ctxward.core.project import Project

    limits: dict[str, Any] = load(Project(Path(root))).drift
    return limits


def open_state_file(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> int:
    """`os.open` that never blocks on a FIFO planted in a state file's place (OSError(EINVAL))
    and never follows a link planted there (O_NOFOLLOW: OSError(ELOOP)).

    fsutil.open_regular does the same; this module is on every tool call's path, and fsutil's
    imports (pathlib, hashlib) would double what it costs to import. The folder on the way is
    checked once per call (`_Session.__enter__`).
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (a FIFO or a device?)", str(path))
    return fd


def _tail_lines(path: str, size: int) -> list[dict[str, Any]]:
    """The JSON objects on the last lines of `path`, within its last `size` bytes."""
    try:
        with open(open_state_file(path), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            start = max(0, end - size)
            handle.seek(start)
            raw = handle.read(end - start)
    except OSError:
        return []
    lines = raw.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first one is probably cut
    return list(json_objects(lines))


def json_objects(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The lines that hold a JSON object; partial, damaged or absurdly nested ones are skipped."""
    for line in lines:
        if not line.strip():
            continue  # the empty line after the last newline: json's error would cost its import
        try:
            value = hotjson.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value
