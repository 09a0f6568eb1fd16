"""Session summaries and recovery (seed 001): a transcript in, a ≤ 200-token summary out.

Extraction is deterministic (no model). It reads a Claude Code transcript with
`ctxward.transcript.reader.iter_records` (streaming) and looks only at what the user typed and what
the assistant wrote: tool output, injected reminders, slash-command records and the compaction
summaries are evidence, not content. Fenced code blocks and code-like lines are dropped (seed
001: code lives in project memory). Each remaining sentence is scrubbed of secrets, then
classified by the seed's patterns, extended to real phrasing:

| category | priority | max tokens | triggers (case-insensitive) |
|---|---|---|---|
| decisions | critical | 50 | decided, chose, selected, let's go with, we'll use, instead of, ... |
| errors_and_fixes | critical | 50 | error, exception, bug, fails, ...; a later "fixed by" joins |
| action_items | high | 30 | TODO, next step, follow-up, need to, ...; "(done)" once said so |
| user.preferences | high | 20 | (user only) I prefer, please always / never, keep it short, ... |
| user.level | high | 10 | (user only) I'm new to / a beginner / senior / an expert, ... |
| architecture | medium | 20 | layered, monolith, microservices, hexagonal, ...; the stack named |
| skill_updates | medium | 10 | the Skill tool's uses; "skill" with updated / added / created, ... |
| patterns | low | 10 | pattern, convention, recurring, every time, keeps failing, ... |

One idea said several ways is kept once (the phrasing that gives a reason, else the first).

The budget: the `session_summary` block, as written, stays ≤ 200 estimated tokens
(ceil(UTF-8 bytes / 4)). Each lower category is first held to its own maximum; then, while the
block is over budget, the seed's loop runs: patterns are dropped, then architecture and skill
updates are truncated one entry at a time, then user preferences and the user level. Decisions,
errors and action items are never dropped from the file: when they alone exceed the budget the
file keeps them all, and the injected recovery text shows what fits and says "N more in <path>".
Whatever the budget cuts is kept under `dropped:` in the same file.

One module per concern: `patterns` (the categories, their limits, the sentence patterns),
`extract` (a transcript's sentences, classified), `budget` (the block held to its token limit),
`store` (the YAML file, written from the hooks), `recovery` (the injected text and the stats).
"""
