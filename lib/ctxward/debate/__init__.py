"""Consensus debates (seed 002 "Consensus Debate"): DebateSession, ConsensusBudget, rounds,
convergence by position hash, verdicts, and the mandatory filing of every verdict to the wiki.

- `protocol`: the pure part — input validation, position hashes, the verdict rules;
- `store`: the records under `.ctxward/debates/`, the seal, the wiki page;
- `unfiled`: what the Stop / SubagentStop hooks ask (standard library only).
"""
