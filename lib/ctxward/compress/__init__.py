"""Inline compression (L1)."""
