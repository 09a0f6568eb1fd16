"""ctxward: governs a coding agent's context across its lifecycle."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ctxward")
except PackageNotFoundError:  # a bare checkout (hooks/*.py bootstrap) has no metadata
    __version__ = "0.1.0+checkout"
