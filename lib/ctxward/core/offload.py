"""Keep injected text under the host's cap without losing any of it.

Claude Code cuts hook output strings at 10,000 characters. What does not fit is written to
`.ctxward/offload/<sha256>.<ext>` first, and the injection becomes a preview naming that file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ctxward.core.fsutil import atomic_write, sha256_hex
from ctxward.core.project import Project
from ctxward.core.values import Value

if TYPE_CHECKING:  # the dispatch guard's offload path imports this module: keep it light
    from ctxward.invariants.model import Plan, RuleRef


class Offloaded(Value):
    """A stored text: its file, the sha256 of its bytes, their count, and the text as stored.

    A `core.values.Value`, not a dataclass: the dispatch guard's offload path builds it in a fresh
    interpreter, where creating a dataclass costs ~0.6 ms.
    """

    __slots__ = ("path", "sha256", "size", "text")
    path: Path
    sha256: str
    size: int
    text: str  # the stored text: the input, scrubbed

    def __init__(self, path: Path, sha256: str, size: int, text: str) -> None:
        self._set(path=path, sha256=sha256, size=size, text=text)


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


def render_rules_within(
    project: Project,
    template: str,
    plans: Sequence[Plan],
    limit: int | None = None,
    **context: object,
) -> str:
    """Render `template` over `plans`; when it is longer than `limit`, offload it and preview.

    `limit` None is the default `injection.limit_chars` (the callers pass the project's).
    See `render_rules_shown`.
    """
    return render_rules_shown(project, template, plans, limit, **context)[0]


def render_rules_shown(
    project: Project,
    template: str,
    plans: Sequence[Plan],
    limit: int | None = None,
    **context: object,
) -> tuple[str, list[RuleRef]]:
    """`render_rules_within`, and the rules the text shows in full.

    The preview keeps as many whole rules as fit, in `rulesets.in_order` (round-robin across
    plans), laid out as the plans are, and names the file with all of them.
    """
    from ctxward.core.render import render
    from ctxward.core.scrub import redact
    from ctxward.invariants.distill import all_rules
    from ctxward.invariants.rulesets import in_order, only

    if limit is None:
        from ctxward.core.config import InjectionConfig  # not at the top: the dispatch guard's path

        limit = InjectionConfig().limit_chars
    full = redact(render(template, plans=list(plans), **context))
    if len(full) <= limit:
        return full, all_rules(plans)
    stored = offload(project, full)
    order = in_order(plans)
    total = len(order)

    def preview(keep: int) -> str:
        return redact(
            render(
                "offload_preview.md.j2",
                head=render(template, plans=only(plans, order[:keep]), **context).rstrip("\n"),
                total_rules=total,
                total_plans=len(plans),
                shown_rules=keep,
                size=stored.size,
                path=project.relative(stored.path),
                sha256=stored.sha256,
            )
        )

    low, high = 0, total  # the largest `keep` whose preview fits, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        if len(preview(middle)) <= limit:
            low = middle
        else:
            high = middle - 1
    return preview(low), order[:low]
