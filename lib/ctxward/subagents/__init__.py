"""Sub-agent context economy (G0, G7, G8): what sub-agents hand back, and how it is shared.

One module per concern:

- `artifacts`: names and paths under `.ctxward/sub_agents/<session>/`, and the G7 records: a
  sub-agent's output kept as a file with a metadata record (`ctxward artifact`);
- `batch`: a batch's artifacts read back, and the reducer's view (`ctxward reduce`);
- `channel`: the G8 shared channel: findings and heartbeats of one batch in one locked file
  (`ctxward share`, `shared-read`, `heartbeat`);
- `reports`: the G0 report cap, enforced at SubagentStop;
- `watch`: `ctxward watch`: payloads, plans and artifact records kept fresh as files change.
"""
