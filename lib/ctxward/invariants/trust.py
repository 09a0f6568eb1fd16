"""Which plans may speak to the model on this machine: direnv's `allow`, for invariants.

A plan's rules are presented to the summarizer and the model as non-negotiable. A repository
the user cloned may commit any `docs/plans/<slug>/invariants.md`, so a plan's rules go out only
when this user trusted that exact content at that exact path. The record of it lives outside
every project, under `userstate.state_dir()`, where no clone can write:

    trusted/<sha256 of the plan file's path>-<sha256 of its bytes>

(a small JSON file saying, for people, what was trusted, when and how). The path is the plan
file's real path: project roots are resolved, and a plan reached through a symbolic link is
refused before it is read (`invariants.scan_plans`). Checking a plan is one `stat`, standard
library only: the compaction hooks check every plan on every run.

- `ctxward activate` trusts the file it writes into a new plan or a trusted one (a plan that
  arrived untrusted stays so: its other sections are still nobody's choice);
- `ctxward trust [SLUG ...]` trusts plans as they are now, after the user has read them;
- any change to the bytes (a hand edit, a pull, a checkout) leaves the plan untrusted until it
  is trusted again, since the record names the content's hash;
- `ctxward trust --revoke SLUG` and `ctxward plan complete` remove every record of the path.

What reaches the model is always parsed from the bytes whose hash was checked
(`invariants.load_plan` reads a plan once, hashes and parses that one read), never from a
`.compaction-payload.md`: a payload is committed too, and its "distilled from sha256=..."
header is a claim anyone can copy.

The invariant packs shipped with ctxward (its `invariants/` data) are trusted by origin, as its
code is: they come with the installed package, not with a repository. `ctxward activate PACK`
reads them from the installation, and the plan it writes is trusted because activate wrote it.
A committed plan that only says it came from a pack is repository content like any other.

`seal` is the other half of "ctxward wrote this here": an HMAC keyed by this user's secret
(`userstate.secret_key`) over state that ctxward leaves in a project for itself to read back and
hand to the model (the rules waiting in `.ctxward/pending/`), so that a committed file there is
never taken for its own.
"""

from __future__ import annotations

import os
import stat

from ctxward.core.userstate import state_dir
from ctxward.core.values import Value

# `typing.TYPE_CHECKING` without importing typing: the compaction hooks import this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from ctxward.core.project import Project
    from ctxward.invariants.model import Plan

TRUSTED_DIRNAME = "trusted"


def records_dir(env: Mapping[str, str] | None = None) -> Path:
    """`<user state>/trusted/`, where the trust records are (it may not exist)."""
    return state_dir(env) / TRUSTED_DIRNAME


def record_name(plan_file: str | os.PathLike[str], sha256: str) -> str:
    """The record's file name for the plan file at `plan_file` with content hash `sha256`."""
    return f"{_path_key(plan_file)}-{sha256}"


def _path_key(plan_file: str | os.PathLike[str]) -> str:
    import hashlib

    return hashlib.sha256(os.fsencode(plan_file)).hexdigest()


def trusted_split(
    plans: Sequence[Plan], env: Mapping[str, str] | None = None
) -> tuple[list[Plan], list[Plan]]:
    """The plans whose current content is trusted here, and the others, each in order."""
    if not plans:
        return [], []
    from ctxward.invariants.model import INVARIANTS_FILE

    folder = str(records_dir(env))  # resolved once for the whole batch
    trusted: list[Plan] = []
    untrusted: list[Plan] = []
    for plan in plans:
        # `plan.invariants_path`, as a string: a Path per plan costs as much as the stat.
        name = record_name(f"{plan.folder}{os.sep}{INVARIANTS_FILE}", plan.source_sha256)
        (trusted if _is_record(os.path.join(folder, name)) else untrusted).append(plan)
    return trusted, untrusted


def is_trusted(plan_file: Path, sha256: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether the content `sha256` of the plan file `plan_file` is trusted here."""
    return _is_record(str(records_dir(env) / record_name(plan_file, sha256)))


def _is_record(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):  # none; or a path the OS refuses: not a record either way
        return False


def record(
    plan_file: Path,
    sha256: str,
    *,
    slug: str,
    rules: int,
    by: str,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Record the content `sha256` of `plan_file` as trusted here; return the record's path.

    CtxwardError (one line) when the user's state folder cannot be written.
    """
    import json
    from datetime import datetime, timezone

    from ctxward.core.fsutil import atomic_write, ensure_folder
    from ctxward.errors import CtxwardError

    folder = records_dir(env)
    path = folder / record_name(plan_file, sha256)
    body = {
        "path": str(plan_file),
        "sha256": sha256,
        "slug": slug,
        "rules": rules,
        "trusted_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "by": by,
    }
    try:
        ensure_folder(folder, mode=0o700)  # the user's own: nobody else lists what they trust
        atomic_write(path, json.dumps(body, indent=2) + "\n")  # ASCII: a path may hold any byte
    except OSError as exc:
        raise CtxwardError(
            f"cannot record {plan_file} as trusted in {folder}: {exc.strerror or exc}"
        ) from None
    return path


def revoke(plan_file: Path, env: Mapping[str, str] | None = None) -> int:
    """Remove every trust record of `plan_file` (all its contents); return how many there were."""
    from ctxward.core.fsutil import remove
    from ctxward.errors import CtxwardError

    folder = records_dir(env)
    prefix = _path_key(plan_file) + "-"
    removed = 0
    try:
        with os.scandir(folder) as entries:
            names = [entry.name for entry in entries if entry.name.startswith(prefix)]
        for name in names:
            remove(folder / name)
            removed += 1
    except FileNotFoundError:
        return removed  # nothing was ever trusted here
    except OSError as exc:
        raise CtxwardError(
            f"cannot revoke the trust in {plan_file}: {exc.strerror or exc}"
        ) from None
    return removed


# --- the line that names untrusted plans --------------------------------------------------------


def untrusted_notice(plans: Sequence[Plan]) -> str:
    """One line for the user naming how many plans are not trusted ('' when none)."""
    if not plans:
        return ""
    from ctxward.core.render import render

    return render("invariants/untrusted.txt.j2", count=len(plans)).strip()


# --- the commands' side -------------------------------------------------------------------------


class TrustResult(Value):
    """One plan `ctxward trust` looked at: trusted now, or already before."""

    slug: str
    rules: int
    path: str
    sha256: str
    already: bool


class RevokeResult(Value):
    """One plan `ctxward trust --revoke` looked at: how many trust records it removed."""

    slug: str
    path: str
    removed: int


def trust_plans(
    project: Project, slugs: Sequence[str], env: Mapping[str, str] | None = None
) -> tuple[list[TrustResult], list[str]]:
    """Trust the named plans (none named: every untrusted one) as they are now.

    Returns what was trusted, and a line for each plan that could not be read (only when none
    was named: a named plan that cannot be read is BadInput).
    """
    from ctxward.invariants.read import find_plan, readable_plans

    problems: list[str] = []
    if slugs:
        plans = [find_plan(project, slug) for slug in dict.fromkeys(slugs)]
    else:
        found, problems = readable_plans(project)
        plans = trusted_split(found, env)[1]
    results = []
    for plan in plans:
        already = is_trusted(plan.invariants_path, plan.source_sha256, env)
        if not already:
            record(
                plan.invariants_path,
                plan.source_sha256,
                slug=plan.slug,
                rules=plan.rule_count,
                by="ctxward trust",
                env=env,
            )
        path = project.relative(plan.invariants_path)
        results.append(TrustResult(plan.slug, plan.rule_count, path, plan.source_sha256, already))
    return results, problems


def revoke_plans(
    project: Project, slugs: Sequence[str], env: Mapping[str, str] | None = None
) -> list[RevokeResult]:
    """Remove every trust record of the named plans (a plan need not be readable to lose it)."""
    from ctxward.invariants.model import INVARIANTS_FILE, validate_slug

    results = []
    for slug in dict.fromkeys(slugs):
        path = project.plans_dir / validate_slug(slug) / INVARIANTS_FILE
        results.append(RevokeResult(slug, project.relative(path), revoke(path, env)))
    return results


# --- seals: state ctxward wrote in a project for itself -----------------------------------------


def seal(data: bytes, env: Mapping[str, str] | None = None) -> str:
    """The hex HMAC-SHA256 of `data` under this user's secret key."""
    import hashlib
    import hmac

    from ctxward.core.userstate import secret_key

    return hmac.new(secret_key(env), data, hashlib.sha256).hexdigest()


def is_sealed(data: bytes, mac: object, env: Mapping[str, str] | None = None) -> bool:
    """Whether `mac` is `seal(data)`: ctxward wrote `data` here, for this user."""
    import hmac

    return isinstance(mac, str) and hmac.compare_digest(seal(data, env), mac)
