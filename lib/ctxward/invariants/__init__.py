"""Invariants that survive compaction (seed 003): activate a skill's rules into a plan, read them
back, distill, verify their survival, and put them back before the model exactly once.

The plan file `docs/plans/<slug>/invariants.md` follows seed 003's template; one `## <skill>`
section per skill, rules verbatim as bullets. Reading it back needs only the standard library,
so the compaction hooks stay cheap; writing it renders templates (Jinja2) and reads skills (YAML).

A repository can commit any of it: plans are listed and read without following a symbolic link
(`read.scan_plans`), and only a plan whose exact content this user trusted (`invariants.trust`) is
presented to the summarizer or the model (`read.plans_for_the_model`), from the bytes whose hash was
checked. The distilled `.compaction-payload.md` is written for trusted plans and read by nobody
who speaks to the model: a committed one may claim any source digest.

One module per concern:

- `model`: skills, sections, plans, rule references, activations (`Value`s); slugs checked;
- `skills`: a skill's front matter, found in the project or among the shipped packs;
- `activate`: `ctxward activate`: a skill's rules written into a plan;
- `read`: plans read back (standard library only) and those the compaction hooks may present;
- `plans`: the plan lifecycle (list, complete, clean) and which plans apply on this branch;
- `trust`: which plans may speak to the model on this machine (`ctxward trust`);
- `distill`: each trusted plan's `.compaction-payload.md`;
- `inject`: the rules within one channel's limit, the rest offloaded and named;
- `rulesets`: which rules to show, in what order, when not all fit;
- `ledger`: what ctxward already put before the model in this context segment;
- `summary`, `verdicts`, `survival`: what a compaction summary kept, graded, reported on disk;
- `pending`: the rules a summary lost, waiting for the next prompt.
"""
