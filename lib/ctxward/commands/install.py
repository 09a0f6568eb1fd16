"""`ctxward install`, `ctxward uninstall`, `ctxward doctor`: thin commands over setup.install
and ctxward.setup.doctor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ctxward.commands import Group, echo_json, json_option, project_of
from ctxward.core.render import render
from ctxward.hosts import HOSTS

F = TypeVar("F", bound=Callable[..., Any])

dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Show what would change (a diff); write nothing."
)
claude_version_option = click.option(
    "--claude-version",
    metavar="X.Y.Z",
    help="The Claude Code version to go by (default: what `claude --version` prints, else what "
    "Claude Code recorded under ~/.claude; when none is found, every event is wired).",
)


def scope_option(host: str) -> Callable[[F], F]:
    from ctxward.hosts.settings import DEFAULT_SCOPE, SCOPES

    return click.option(
        "--scope",
        type=click.Choice(list(SCOPES[host])),
        default=DEFAULT_SCOPE[host],
        show_default=True,
        help="Which file: " + ", ".join(SCOPES[host]) + " (see README 'Install, doctor, watch').",
    )


def _install(
    ctx: click.Context, host: str, scope: str, dry_run: bool, as_json: bool, **extra: Any
) -> None:
    """Wire `host` at `scope` (the user's scope needs no project) and show what changed."""
    from ctxward.setup.install import install

    project = project_of(ctx, anywhere=scope == "user")
    _show(ctx, install(host, scope, project, dry_run=dry_run, **extra), as_json)


def _show(ctx: click.Context, result: Any, as_json: bool) -> None:
    from ctxward.hosts.settings import label_of
    from ctxward.setup.install import diff

    if as_json:
        echo_json(result.as_dict())
        return
    project = project_of(ctx, anywhere=True)
    backup = label_of(result.backup, project) if result.backup else ""
    state_ignore = label_of(result.state_ignore, project) if result.state_ignore else ""
    git_excluded = label_of(result.git_excluded, project) if result.git_excluded else ""
    left_out = any(c.action in ("skipped", "removed") and c.reason for c in result.changes)
    text = render(
        "setup/install_result.txt.j2",
        r=result,
        diff=diff(result) if result.dry_run else [],
        backup=backup,
        state_ignore=state_ignore,
        git_excluded=git_excluded,
        left_out=left_out,
    )
    click.echo(text, nl=False)


@click.group(cls=Group)
def install() -> None:
    """Wire ctxward's hooks into Claude Code, OpenCode, Codex or Gemini CLI (merging, never
    replacing).

    \b
    Example:
        ctxward install claude --dry-run
        ctxward install claude --scope project
    """


@install.command("claude")
@scope_option("claude")
@dry_run_option
@claude_version_option
@json_option
@click.pass_context
def install_claude(
    ctx: click.Context, scope: str, dry_run: bool, claude_version: str | None, as_json: bool
) -> None:
    """Merge ctxward's hooks into a Claude Code settings file.

    local (the default): .claude/settings.local.json, this machine's, git-ignored, with the
    absolute path of this ctxward-hook; project: .claude/settings.json, for the repository (it
    finds ctxward-hook on PATH or in ~/.local/bin; without it, sub-agent calls are blocked
    with the reason); user: ~/.claude/settings.json ($CLAUDE_CONFIG_DIR), every project. Other
    hooks and keys stay as they are; the previous bytes are kept in one rolling backup; a
    second run changes nothing. Events your Claude Code version is known to lack are left out.

    \b
    Example:
        ctxward install claude --dry-run
    """
    from ctxward.hosts.claude_version import detect

    _install(ctx, "claude", scope, dry_run, as_json, claude_version=detect(claude_version))


@install.command("opencode")
@scope_option("opencode")
@dry_run_option
@json_option
@click.pass_context
def install_opencode(ctx: click.Context, scope: str, dry_run: bool, as_json: bool) -> None:
    """Write the OpenCode plugin file.

    project: .opencode/plugin/ctxward.js; user: ~/.config/opencode/plugin/ctxward.js. The
    plugin runs this ctxward by its absolute path (else the one on PATH). An older ctxward
    plugin there is replaced (with a backup); any other file of that name is refused.

    \b
    Example:
        ctxward install opencode
    """
    _install(ctx, "opencode", scope, dry_run, as_json)


@install.command("codex")
@scope_option("codex")
@dry_run_option
@json_option
@click.pass_context
def install_codex(ctx: click.Context, scope: str, dry_run: bool, as_json: bool) -> None:
    """Merge ctxward's compaction hooks into Codex's hooks.json.

    project: .codex/hooks.json; user: ~/.codex/hooks.json ($CODEX_HOME). PreCompact and
    SessionStart only (Codex gives PostCompact no summary). Codex runs a new hook once you
    trust it under /hooks.

    \b
    Example:
        ctxward install codex --dry-run
    """
    _install(ctx, "codex", scope, dry_run, as_json)


@install.command("gemini")
@scope_option("gemini")
@dry_run_option
@json_option
@click.pass_context
def install_gemini(ctx: click.Context, scope: str, dry_run: bool, as_json: bool) -> None:
    """Merge ctxward's hooks into Gemini CLI's settings.json (timeouts in ms).

    project: .gemini/settings.json; user: ~/.gemini/settings.json ($GEMINI_CLI_HOME).
    SessionStart, BeforeAgent, PreCompress, BeforeTool (invoke_agent: the dispatch guard) and
    AfterTool. Gemini runs a project's hooks only in a trusted folder.

    \b
    Example:
        ctxward install gemini --dry-run
    """
    _install(ctx, "gemini", scope, dry_run, as_json)


@click.group(cls=Group)
def uninstall() -> None:
    """Remove exactly what `ctxward install` added (other hooks and keys stay; a file that held
    nothing else, install created it, is removed with its backup).

    \b
    Example:
        ctxward uninstall claude --scope user
    """


def _uninstall_command(host: str) -> click.Command:
    @click.command(host)
    @scope_option(host)
    @dry_run_option
    @json_option
    @click.pass_context
    def command(ctx: click.Context, scope: str, dry_run: bool, as_json: bool) -> None:
        from ctxward.setup.install import uninstall as run

        _show(
            ctx,
            run(host, scope, project_of(ctx, anywhere=scope == "user"), dry_run=dry_run),
            as_json,
        )

    command.help = (
        f"Remove ctxward's {host} wiring from the file `ctxward install {host}` writes.\n\n"
        f"\b\nExample:\n    ctxward uninstall {host} --dry-run"
    )
    return command


for _host in HOSTS:
    uninstall.add_command(_uninstall_command(_host))


@click.command()
@claude_version_option
@click.option(
    "--no-run", is_flag=True, help="Skip running the hook commands on synthetic payloads."
)
@json_option
@click.pass_context
def doctor(ctx: click.Context, claude_version: str | None, no_run: bool, as_json: bool) -> None:
    """Check the wiring, run each hook on a synthetic payload, find plans out of step.

    Exit 0 when nothing failed (warnings allowed), 1 when a check failed; each failure says how
    to fix it. Only the exact commands `ctxward install` writes are run (without a shell); a
    hook command that merely names ctxward is shown and never run: a failure in a project's
    file (it may have come with a clone), a warning in your own ~/.claude/settings.json.

    \b
    Example:
        ctxward doctor
        ctxward doctor --json
    """
    from ctxward.hosts.claude_version import detect
    from ctxward.setup.doctor import diagnose

    version = detect(claude_version)
    result = diagnose(project_of(ctx, anywhere=True), version=version, run_hooks=not no_run)
    if as_json:
        echo_json(result.as_dict())
    else:
        marks = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "info": "-"}
        text = render("setup/doctor_report.txt.j2", d=result, marks=marks, counts=result.counts())
        click.echo(text, nl=False)
    if not result.ok:
        raise click.exceptions.Exit(1)


COMMANDS = [install, uninstall, doctor]
