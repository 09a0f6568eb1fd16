"""Setting ctxward up on a machine: install, uninstall, doctor, demo.

One module per concern:

- `install`: `ctxward install` / `uninstall`: each host's file written, format kept
  (`core.jsonedit`), one backup, the state folder kept out of git;
- `merge`: ctxward's hook blocks merged into a host's settings and taken out again;
- `doctor`: `ctxward doctor`'s diagnosis, in order, from the checks below;
- `diagnosis`: what doctor reports (`Check`, `Diagnosis`, `WiredHook`);
- `wiring_checks`: the host files: wiring, programs, foreign commands (never run), trust;
- `hook_runs`: every wired hook run on a synthetic payload (`hosts.payloads`), as the host would;
- `plan_checks`: the project's state: plans, their branches, drift, the thresholds;
- `demo`: `ctxward demo`, the main job end to end in a throwaway project.
"""
