#!/usr/bin/env python3
"""PostToolUse hook (the drift observer). Logic: lib/ctxward/events/post_tool_use.py."""

from __future__ import annotations

import os
import sys

# os.path, not pathlib: this runs after every tool call (as hooks/pre_tool_use.py does).
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "lib")
)

from ctxward.hookio import run_script

if __name__ == "__main__":
    raise SystemExit(run_script("PostToolUse"))
