"""Per-user state that a cloned repository cannot forge: outside every project, owned by the user.

A repository can carry anything in `.ctxward/` and `docs/plans/`; what ctxward decides to trust
(a plan's rules, a bank journal it wrote itself) is therefore recorded here, where no clone
reaches: `$XDG_STATE_HOME/ctxward/`, else `~/.local/state/ctxward/`. The folder is the user's
own, so it is resolved (a home reached through a symbolic link is the user's choice); below it
ctxward writes only through `fsutil`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ctxward.errors import CtxwardError

KEY_FILE = "secret.key"
_KEY_BYTES = 32


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/ctxward`, else `~/.local/state/ctxward` (resolved; not created)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):  # the XDG spec: a relative value is to be ignored
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".local", "state")
    return Path(base).resolve() / "ctxward"


def secret_key(env: Mapping[str, str] | None = None) -> bytes:
    """This user's 32-byte secret (created once, mode 0600): the key of ctxward's own HMACs."""
    from ctxward.core.fsutil import ensure_folder, read_regular

    folder = state_dir(env)
    path = folder / KEY_FILE
    try:
        try:
            key = read_regular(path)
        except FileNotFoundError:
            ensure_folder(folder, mode=0o700)
            key = _create_key(path)
    except OSError as exc:
        raise CtxwardError(f"cannot read this user's ctxward key {path}: {exc.strerror}") from None
    if len(key) != _KEY_BYTES:
        raise CtxwardError(
            f"{path} is not a ctxward key ({len(key)} bytes, expected {_KEY_BYTES}): "
            f"remove it and ctxward makes a new one"
        )
    return key


def _create_key(path: Path) -> bytes:
    """Write a fresh key beside `path`, then link it into place: readers never see half a key,
    and of two processes creating it at once both end up with the first one's."""
    key = os.urandom(_KEY_BYTES)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        from ctxward.core.fsutil import read_regular

        key = read_regular(path)
    finally:
        os.unlink(tmp)
    return key
