"""Which of the active rules to show, and in what order, when not all of them can be.

- `unique`: a rule declared by two skills (the same fingerprint, `ctxward.core.fingerprint`) is
  shown once, under the first skill that declares it.
- `without`: the plans less the rules the model already has (`ctxward.invariants.ledger`).
- `in_order`: the order in which rules get the room a channel has: the rules of skills with a
  higher `priority:` (front matter, a whole number, default 0) first; within one priority,
  round-robin across plans (the first rule of every plan, then the second of every plan, …), so
  that no plan is starved by a large one listed before it; within a plan, its declared order.
- `only`: the plans cut down to a set of rules, in their own layout (plan, skill).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import zip_longest

from ctxward.invariants.model import Plan, RuleRef


def _cut(plans: Sequence[Plan], keep: Callable[[str, str, str], bool]) -> list[Plan]:
    kept: list[Plan] = []
    for plan in plans:
        sections = []
        for section in plan.sections:
            rules = tuple(r for r in section.rules if keep(plan.slug, section.skill, r))
            if rules:
                sections.append(section.replace(rules=rules))
        if sections:
            kept.append(plan.replace(sections=tuple(sections)))
    return kept


def unique(plans: Sequence[Plan]) -> list[Plan]:
    """The plans with every rule after its first declaration left out (by fingerprint)."""
    from ctxward.core.fingerprint import fingerprint

    seen: set[str] = set()

    def first(_slug: str, _skill: str, rule: str) -> bool:
        digest = fingerprint(rule)
        if digest in seen:
            return False
        seen.add(digest)
        return True

    return _cut(plans, first)


def refs_not_in(refs: Iterable[RuleRef], known: Collection[str]) -> list[RuleRef]:
    """The references whose fingerprint is not in `known`, the first of each fingerprint only."""
    seen = set(known)
    kept = []
    for ref in refs:
        digest = ref.fingerprint  # a property: computed on each access
        if digest not in seen:
            seen.add(digest)
            kept.append(ref)
    return kept


def without(plans: Sequence[Plan], known: Collection[str]) -> list[Plan]:
    """The plans less the rules whose fingerprint is in `known`."""
    if not known:
        return list(plans)
    from ctxward.core.fingerprint import fingerprint

    return _cut(plans, lambda _slug, _skill, rule: fingerprint(rule) not in known)


def in_order(plans: Sequence[Plan]) -> list[RuleRef]:
    """Every rule: the skills of a higher `priority:` first; within one priority, round-robin
    across plans (each plan's own order kept)."""
    ranks = sorted({section.rank for plan in plans for section in plan.sections}, reverse=True)
    ordered: list[RuleRef] = []
    for rank in ranks:
        per_plan = [
            [
                RuleRef(plan.slug, section.skill, rule)
                for section in plan.sections
                if section.rank == rank
                for rule in section.rules
            ]
            for plan in plans
        ]
        ordered += [ref for row in zip_longest(*per_plan) for ref in row if ref is not None]
    return ordered


def only(plans: Sequence[Plan], refs: Collection[RuleRef]) -> list[Plan]:
    """The plans cut down to `refs`, in their own order; emptied sections and plans dropped."""
    wanted = {(ref.slug, ref.skill, ref.rule) for ref in refs}
    return _cut(plans, lambda slug, skill, rule: (slug, skill, rule) in wanted)


def fingerprints(refs: Sequence[RuleRef]) -> list[str]:
    return [ref.fingerprint for ref in refs]
