#!/usr/bin/env python3
"""Stop hook. Logic: lib/ctxward/events/stop.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

from ctxward.hookio import run_script

if __name__ == "__main__":
    raise SystemExit(run_script("Stop"))
