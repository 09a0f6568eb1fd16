"""Drift facts (seed 002): stuck patterns in tool use, told to the model as one factual sentence.

One module per concern:

- `signatures`: what one tool call is reduced to (its window entry), the signatures' names and
  the tool classes (writes, searches, shells);
- `machine`: the state machine over a window of recent calls (`Tracker`): which signature just
  started to hold;
- `observe`: the per-tool-call hook path (standard library only): one call observed, the state
  and the call log kept under `.ctxward/sessions/`;
- `context`: two facts about the context window: a large tool output, a pressure stage;
- `log`: reading a session back (`ctxward drift`; not the hook path), and a transcript replayed;
- `tell`: the facts rendered for the model (Jinja2 only when one fired).

The thresholds (`drift:` and `context:` in config.yaml) are in `core.drift_settings`, with the
rest of the one config schema.
"""
