"""Session summaries for recovery (seed 001)."""
