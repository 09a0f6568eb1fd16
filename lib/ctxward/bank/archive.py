"""`_notes/archive/YYYY-MM-compressed-entries.md`: what the C7 trim took out (seed 000 §18),
and the previous version of every entry an update replaced in `## Completed Phases` (issue 16).

Append-only. Each archived block is the entry as it stood in `## Completed Phases`, under a
marker with its key, content hash and action (`removed`: a LOW entry taken out; `cut`: a MEDIUM
entry's standard line before it was cut to 0.5 lines; `updated`: the version a newer text of
the same entry replaced). The same (key, hash, action) is never
archived twice. This is the only file ctxward writes under `_notes/`; ADRs are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ctxward.bank.active import Row
from ctxward.bank.markup import escaped, parse_marker
from ctxward.errors import BadInput


def relpath(month: str) -> str:
    """The archive file for `month` (YYYY-MM), relative to the bank."""
    return str(PurePosixPath("_notes", "archive", f"{month}-compressed-entries.md"))


def read(path: Path) -> str:
    """The archive file's text ('' when there is none); BadInput when it cannot be read (not
    UTF-8, a folder, a FIFO: `read_regular_text` never waits on one)."""
    from ctxward.core.fsutil import read_regular_text

    try:
        return read_regular_text(path)
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None


@dataclass(slots=True)
class Archive:
    month: str
    text: str  # the file as read ('' when new)
    seen: set[tuple[str, str, str]] = field(default_factory=set)
    added: list[str] = field(default_factory=list)

    def add(self, row: Row, action: str, on: str) -> bool:
        """Archive `row` as it is now; False when it is archived already."""
        from ctxward.core.render import render

        key = (row.key, row.hash, action)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.added.append(
            render(
                "bank/archive_entry.md.j2",
                marker=escaped(
                    {
                        "key": row.key,
                        "hash": row.hash,
                        "action": action,
                        "band": row.band,
                        "score": f"{row.score:.2f}",
                        "on": on,
                    }
                ),
                band=row.band,
                score=f"{row.score:.2f}",
                lines=row.lines,
            ).rstrip("\n")
        )
        return True

    def render(self) -> str:
        from ctxward.core.render import render

        head = self.text.rstrip("\n") if self.text.strip() else ""
        return render("bank/archive.md.j2", month=self.month, head=head, blocks=self.added)


def parse(month: str, text: str) -> Archive:
    archive = Archive(month, text)
    for line in text.splitlines():
        marker = parse_marker(line)
        if marker is not None and marker[0] == "archived":
            attrs = marker[1]
            archive.seen.add((attrs.get("key", ""), attrs.get("hash", ""), attrs.get("action", "")))
    return archive
