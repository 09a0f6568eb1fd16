"""Inline compression (L1, seed 000 §12): a sub-agent's summary in, band-templated lines out.

One module per concern:

- `entries`: what L1 works on (`Entry`, `Result`, `Run`) and the band templates;
- `parse`: reading the input (subtask_summary blocks, mappings, free text);
- `scoring`: the five dimensions, the bands, the agent-pair masks (tables in `data/`);
- `lines`: the entity regexes and the semantic lines built from an entry's own text;
- `engine`: compressing a text or an entry, with its original kept on disk (`compress_text`);
- `identity`: which entry an entry is (its id, title or content; never only date/phase/agent);
- `staging`: one idempotent `.tmp/L1-*.md` file per entry for the memory bank;
- `handoff`: the staged entries promoted at a phase gate (a sub-agent's stop, a session).
"""
