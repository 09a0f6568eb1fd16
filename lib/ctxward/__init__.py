"""ctxward: governs a coding agent's context across its lifecycle."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """`ctxward.__version__`, looked up on first use.

    importlib.metadata costs about three interpreter start-ups, and every hook process imports
    this package: the PreToolUse no-op path must not pay for a version nobody asked for.
    """
    if name != "__version__":
        raise AttributeError(f"module 'ctxward' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxward")
    except PackageNotFoundError:  # a bare checkout (hooks/*.py bootstrap) has no metadata
        return "0.0+checkout"  # the build's fallback: the version lives in git tags
