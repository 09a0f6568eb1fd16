"""Drift facts (seed 002)."""
