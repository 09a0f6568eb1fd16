"""The L2 memory bank (seed 000 §6–11, §14–18): budgeted promotion at phase gates.

The bank lives at `.ctxward/memory-bank/` (`.pantheon/memory-bank/` under `preset: pantheon`):

    01-active-context.md            ## Completed Phases (budgeted, priority-aware), ## Plans
    02-progress-log.md              ### YYYY-MM-DD — Phase N: agent sections (IMPL/REVIEW archive),
                                    ## Forced Dispatches (`forcedAt` of `dispatch check --force`)
    03-learnings.md                 atomic facts promoted from learnings/ at sprint close (§15)
    _xref/index.md, _next_id.json   cross-references and their monotonic ids (ctxward.bank.xref)
    .tmp/ZZ-phase{N}-context.md     what the next phase's agent receives
    .tmp/L1-*.md                    entries staged by L1 (C8/C11), consumed by a promotion
    .tmp/compress.lock              the lock every bank command takes
    .txn/                           a transaction in flight (txn); refused-journal-*.json: a
                                    journal ctxward did not write, set aside, never replayed
    _notes/archive/YYYY-MM-compressed-entries.md   what the C7 trim removed (other _notes: never)

One module per concern (which entry an entry is: `compress.identity`):
`learnings` (§15 cleanup), `forced` (G9 `forcedAt` in the log), `inject` (the previous phase's
context given to a dispatch by PreToolUse), `budget` (line costs, allocation, carryover,
guardrails), `active` (01), `progress` (02), `archive` (C7 archive), `zz` (ZZ artifact), `inputs`
(reading entries), `promote` (the pipeline), `steps` (its steps: rows, classification, cross-
references, allocation, archive, the files written), `xref` (cross-references and their ids),
`trim` (C7), `sprint` (C5 close-sprint), `view` (status, context), `state` (lock + recovery +
reading), `txn` (the all-or-nothing journal: see its docstring), `markup` (markers, sections, table
cells).

The files are the bank's only state: every block ctxward owns carries a marker comment with its
key and content hash, so the bank can be read back, diffed and committed like any Markdown.
Everything written is scrubbed of secrets first; library functions never print or exit.
"""
