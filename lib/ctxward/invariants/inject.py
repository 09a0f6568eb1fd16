"""The rules put before the model within one channel's limit; what does not fit is offloaded.

A host cuts a hook's text at 10,000 characters. When the rendered rules are longer than the
channel's limit (`injection.limit_chars`), the whole text is written to `.ctxward/offload/` first
(`core.offload`) and the channel carries as many whole rules as fit, in `rulesets.in_order`,
with the path and sha256 of the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxward.core.offload import offload
from ctxward.core.project import Project
from ctxward.invariants.model import Plan, RuleRef


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
                "invariants/offload_preview.md.j2",
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
