"""Keep injected text under the host's cap without losing any of it.

Claude Code cuts hook output strings at 10,000 characters. What does not fit is written to
`.ctxward/offload/<sha256>.<ext>` first, and the injection becomes a preview naming that file.
"""

from __future__ import annotations

from pathlib import Path

from ctxward.core.fsutil import atomic_write, sha256_hex
from ctxward.core.project import Project
from ctxward.core.values import Value


class Offloaded(Value):
    """A stored text: its file, the sha256 of its bytes, their count, and the text as stored.

    A `core.values.Value`, not a dataclass: the dispatch guard's offload path builds it in a fresh
    interpreter, where creating a dataclass costs ~0.6 ms.
    """

    path: Path
    sha256: str
    size: int
    text: str  # the stored text: the input, scrubbed


def offload(project: Project, text: str, ext: str = "md") -> Offloaded:
    """Store `text`, scrubbed of secrets, content-addressed under .ctxward/offload/; idempotent.

    The name and the returned sha256 are those of the stored (scrubbed) bytes.
    """
    from ctxward.core.scrub import redact

    stored = redact(text)
    data = stored.encode("utf-8")
    digest = sha256_hex(data)
    path = project.offload_dir / f"{digest}.{ext}"
    atomic_write(path, data)
    return Offloaded(path=path, sha256=digest, size=len(data), text=stored)
