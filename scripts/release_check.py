#!/usr/bin/env python3
"""Build, check, install and smoke-test a release: what .github/workflows/release.yml runs.

    python scripts/release_check.py [--source DIR] [--workdir DIR] [--expect-version X.Y.Z]

1. `python -m build`: the sdist, then the wheel built from that sdist (so the sdist is complete).
2. `twine check --strict` on both.
3. With --expect-version (the tag the workflow runs for), the versions agree: the wheel's (from
   the git tag, by hatch-vcs), the tag's and .claude-plugin/plugin.json's (which Claude Code reads
   from the repository, so it is written there; this is the check that keeps it equal).
4. A fresh venv installs the wheel, its dependencies from the package index.
5. Smoke test from an empty folder, nothing from the checkout on the path: `ctxward --version`,
   `ctxward demo`, and `ctxward-hook` denying an emergency-sized Agent dispatch.

The interpreter running this needs `build` and `twine` (the dev extra has both). Exit 0 when
every step passed; 1 with one line saying which step failed (and that step's output) otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEP_TIMEOUT = 600  # seconds: an install resolves dependencies from the index
# What a wheel's file name says: ctxward-<version>-<python tag>-<abi tag>-<platform tag>.whl
WHEEL_NAME = re.compile(r"ctxward-(?P<version>[^-]+)-[^-]+-[^-]+-[^-]+\.whl")
# Short paragraphs (nothing to offload), 240,000 bytes: the dispatch guard's emergency tier.
PARAGRAPH = "filler line for a large dispatch prompt, lorem ipsum dolor sit amet.\n" * 12 + "\n"
EMERGENCY_PROMPT_BYTES = 240_000


class CheckFailed(Exception):
    """One step failed; the message says which, and what it printed."""


def run(
    step: str,
    argv: list[str | Path],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    print(f"== {step}: {' '.join(str(a) for a in argv)}", flush=True)
    try:
        done = subprocess.run(
            [str(a) for a in argv],
            input=stdin,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"{step}: no answer within {STEP_TIMEOUT} s") from None
    if done.returncode != 0:
        output = f"{done.stdout[-4000:]}{done.stderr[-4000:]}".rstrip()
        raise CheckFailed(f"{step}: exit {done.returncode}\n{output}")
    return done


def build(source: Path, dist: Path) -> tuple[Path, Path]:
    run("build", [sys.executable, "-m", "build", "--outdir", dist, source])
    sdists, wheels = sorted(dist.glob("ctxward-*.tar.gz")), sorted(dist.glob("ctxward-*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        names = sorted(p.name for p in dist.iterdir())
        raise CheckFailed(f"build: expected one sdist and one wheel in {dist}, found {names}")
    run("twine check", [sys.executable, "-m", "twine", "check", "--strict", sdists[0], wheels[0]])
    return sdists[0], wheels[0]


def check_versions(wheel: Path, source: Path, expected: str | None) -> str:
    """Return the wheel's version, once it agrees with the release tag and plugin.json if given."""
    match = WHEEL_NAME.fullmatch(wheel.name)
    if match is None:
        raise CheckFailed(f"versions: cannot read a version from {wheel.name}")
    version = match["version"]
    if expected is not None and version != expected:
        raise CheckFailed(f"versions: the wheel is {version}, the release tag says {expected}")
    manifest = json.loads((source / ".claude-plugin" / "plugin.json").read_text("utf-8"))
    plugin_version = manifest.get("version")
    if expected is not None and plugin_version != version:
        raise CheckFailed(
            f"versions: the release is {version} but .claude-plugin/plugin.json says"
            f" {plugin_version!r}; set it to {version!r} and tag again"
        )
    print(f"== versions: wheel {version}, plugin.json {plugin_version}", flush=True)
    return version


def install(wheel: Path, venv: Path) -> Path:
    run("fresh venv", [sys.executable, "-m", "venv", venv])
    bin_dir = venv / "bin"
    run("install the wheel", [bin_dir / "python", "-m", "pip", "install", "--quiet", wheel])
    return bin_dir


def smoke(bin_dir: Path, version: str, scratch: Path) -> None:
    """Run the installed commands where nothing from a checkout can be imported."""
    home, project = scratch / "home", scratch / "project"
    home.mkdir()
    project.mkdir()
    keep = {"PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT"}
    env = {key: value for key, value in os.environ.items() if key in keep}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), CLAUDE_PROJECT_DIR=str(project))

    shown = run("ctxward --version", [bin_dir / "ctxward", "--version"], cwd=scratch, env=env)
    if shown.stdout.strip() != f"ctxward, version {version}":
        raise CheckFailed(f"ctxward --version: printed {shown.stdout.strip()!r}, not {version}")
    run("ctxward demo", [bin_dir / "ctxward", "demo"], cwd=scratch, env=env)

    run("git init", ["git", "init", "-q", project], env=env)
    prompt = (PARAGRAPH * (EMERGENCY_PROMPT_BYTES // len(PARAGRAPH) + 1))[:EMERGENCY_PROMPT_BYTES]
    payload = {
        "session_id": "release-check",
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": "Agent",
        "tool_input": {"description": "release check", "prompt": prompt},
        "tool_use_id": "toolu_release_check",
    }
    step = "ctxward-hook (PreToolUse, 240,000-byte Agent prompt)"
    done = run(step, [bin_dir / "ctxward-hook"], stdin=json.dumps(payload), cwd=project, env=env)
    try:
        decision = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"]
    except (ValueError, KeyError, TypeError):
        raise CheckFailed(f"{step}: no hook answer on stdout: {done.stdout[:500]!r}") from None
    if decision != "deny":
        raise CheckFailed(f"{step}: the dispatch guard answered {decision!r}, not 'deny'")


def check(source: Path, workdir: Path, expected: str | None) -> str:
    _sdist, wheel = build(source, workdir / "dist")
    version = check_versions(wheel, source, expected)
    bin_dir = install(wheel, workdir / "venv")
    scratch = workdir / "smoke"
    scratch.mkdir()
    smoke(bin_dir, version, scratch)
    return f"release check passed: {wheel.name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=REPO, help="the tree to build (a checkout)")
    parser.add_argument(
        "--workdir", type=Path, help="where dist/, venv/ and smoke/ go (default: a temporary one)"
    )
    parser.add_argument("--expect-version", help="the version the release tag names (v dropped)")
    args = parser.parse_args(argv)
    expected = args.expect_version.removeprefix("v") if args.expect_version else None
    try:
        if args.workdir is not None:
            args.workdir.mkdir(parents=True, exist_ok=True)
            print(check(args.source.resolve(), args.workdir.resolve(), expected))
        else:
            with tempfile.TemporaryDirectory(prefix="ctxward-release-") as workdir:
                print(check(args.source.resolve(), Path(workdir), expected))
    except CheckFailed as failure:
        print(f"release check failed: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
