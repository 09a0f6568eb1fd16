#!/usr/bin/env python3
"""PreToolUse hook (the G9 dispatch guard). Logic: lib/ctxward/events/pre_tool_use.py."""

from __future__ import annotations

import os
import sys

# os.path, not pathlib: this runs on every tool call when a user matches broadly.
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "lib")
)

from ctxward.hookio import run_script

if __name__ == "__main__":
    raise SystemExit(run_script("PreToolUse"))
