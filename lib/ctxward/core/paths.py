"""Where ctxward's shipped files are: inside the wheel, or in a checkout.

One mechanism for every shipped file: the wheel carries each one below `ctxward/data/` at the
path it has below the repository root (pyproject's `force-include`: `templates/`, `invariants/`,
`settings.example.json`, `hooks/opencode/ctxward.js`), next to the package's own tables
(`lib/ctxward/data/*.yaml`, which are there in a checkout too). So a file is looked for below
`data/` first, then below the checkout's root.
"""

from __future__ import annotations

from pathlib import Path

from ctxward.errors import CtxwardError

PACKAGE = Path(__file__).resolve().parent.parent  # lib/ctxward, or site-packages/ctxward
DATA = PACKAGE / "data"
CHECKOUT = PACKAGE.parent.parent  # lib/ctxward -> the repository root


def shipped(relpath: str) -> Path:
    """The shipped file or folder at `relpath` (wheel first, then checkout)."""
    for candidate in (DATA / relpath, CHECKOUT / relpath):
        if candidate.exists():
            return candidate
    raise CtxwardError(f"ctxward is installed without its {relpath} (reinstall ctxward)")


def data_dir(name: str) -> Path:
    """The shipped `templates/` or `invariants/` folder (the package's own tables: `DATA`)."""
    return shipped(name)
