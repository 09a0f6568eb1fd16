"""The dispatch guard (G9)."""
