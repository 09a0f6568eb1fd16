"""Invariants that survive compaction (seed 003)."""
