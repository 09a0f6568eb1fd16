"""Reading host transcripts, and the context audit built on them (`ctxward audit`).

One module per concern:

- `reader`: Claude Code's JSONL transcripts, read defensively and in bounded memory
  (`iter_records`, `Record`, `ReadStats`), and where a project's transcripts are
  (`find_transcript`, `projects_dir`, `subagent_transcripts`).
- `tail`: what a transcript gained since the last tool call (the drift observer's hot path).
- `measure`: what the audit counts: a tool call's key, the size of what entered the context.
- `audit`: the context audit: request by request, what fills the window (`audit`, `Audit`).
- `report`: the audit for people: the summary and the HTML/SVG chart model.

Standard library only; Jinja2 renders the report's text and HTML in `commands/audit`.
"""
