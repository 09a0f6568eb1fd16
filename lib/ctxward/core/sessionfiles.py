"""Where a session's files live: one file-safe name per session id, shared by every writer.

Standard library only, and no pathlib at import: UserPromptSubmit and the drift observer use
`safe_id` on every prompt and tool call.
"""

from __future__ import annotations

# `typing.TYPE_CHECKING` without importing typing (see above).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxward.core.project import Project

SESSIONS_DIRNAME = "sessions"  # .ctxward/sessions/: summaries (seed 001), drift logs (seed 002)
_SAFE_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def safe_id(session_id: str) -> str:
    """`session_id` when it is safe as a file name, else `id-` and 16 hex digits of its sha256."""
    # [A-Za-z0-9_-]{1,128} without `re`, which this hot-path module would import for it
    if 0 < len(session_id) <= 128 and not session_id.strip(_SAFE_CHARS):
        return session_id
    import hashlib

    return "id-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def summary_path(project: Project, session_id: str) -> Path:
    """`.ctxward/sessions/<session id>.yaml`, the seed 001 summary (it may not exist)."""
    return project.state_dir / SESSIONS_DIRNAME / f"{safe_id(session_id)}.yaml"
