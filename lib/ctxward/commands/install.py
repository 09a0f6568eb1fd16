"""`ctxward install`, `ctxward uninstall`, `ctxward doctor`: thin commands over ctxward.install
and ctxward.doctor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ctxward.commands import Group, echo_json, json_option, project_of
from ctxward.render import render

F = TypeVar("F", bound=Callable[..., Any])

dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Show what would change (a diff); write nothing."
)
claude_version_option = click.option(
    "--claude-version",
    metavar="X.Y.Z",
    help="The Claude Code version to go by (default: what `claude --version` prints; when that "
    "fails, 2.0.77 is assumed, which leaves out PostCompact).",
)


def scope_option(*scopes: str) -> Callable[[F], F]:
    return click.option(
        "--scope",
        type=click.Choice(list(scopes)),
        default="project",
        show_default=True,
        help="Which file: " + ", ".join(scopes) + " (see README 'Install, doctor, watch').",
    )


def _show(ctx: click.Context, result: Any, as_json: bool) -> None:
    from ctxward.install import diff, label_of

    if as_json:
        echo_json(result.as_dict())
        return
    backup = label_of(result.backup, project_of(ctx, anywhere=True)) if result.backup else ""
    left_out = any(c.action in ("skipped", "removed") and c.reason for c in result.changes)
    text = render(
        "install/result.txt.j2",
        r=result,
        diff=diff(result) if result.dry_run else [],
        backup=backup,
        left_out=left_out,
    )
    click.echo(text, nl=False)


@click.group(cls=Group)
def install() -> None:
    """Wire ctxward's hooks into Claude Code, OpenCode or Codex (merging, never replacing).

    \b
    Example:
        ctxward install claude --dry-run
        ctxward install claude --scope user
    """


@install.command("claude")
@scope_option("project", "local", "user")
@dry_run_option
@claude_version_option
@json_option
@click.pass_context
def install_claude(
    ctx: click.Context, scope: str, dry_run: bool, claude_version: str | None, as_json: bool
) -> None:
    """Merge ctxward's hooks into a Claude Code settings file.

    project: .claude/settings.json; local: .claude/settings.local.json; user:
    ~/.claude/settings.json ($CLAUDE_CONFIG_DIR). Other hooks and keys stay as they are; a
    backup is written; a second run changes nothing. Events your Claude Code version does not
    know are left out.

    \b
    Example:
        ctxward install claude --scope local --dry-run
    """
    from ctxward.install import detect_claude_version
    from ctxward.install import install as run

    version = detect_claude_version(claude_version)
    result = run(
        "claude",
        scope,
        project_of(ctx, anywhere=scope == "user"),
        dry_run=dry_run,
        claude_version=version,
    )
    _show(ctx, result, as_json)


@install.command("opencode")
@scope_option("project", "user")
@dry_run_option
@json_option
@click.pass_context
def install_opencode(ctx: click.Context, scope: str, dry_run: bool, as_json: bool) -> None:
    """Write the OpenCode plugin file.

    project: .opencode/plugin/ctxward.js; user: ~/.config/opencode/plugin/ctxward.js. An older
    ctxward plugin there is replaced (with a backup); any other file of that name is refused.

    \b
    Example:
        ctxward install opencode
    """
    from ctxward.install import install as run

    _show(
        ctx,
        run("opencode", scope, project_of(ctx, anywhere=scope == "user"), dry_run=dry_run),
        as_json,
    )


@install.command("codex")
@scope_option("project", "user")
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
    from ctxward.install import install as run

    _show(
        ctx,
        run("codex", scope, project_of(ctx, anywhere=scope == "user"), dry_run=dry_run),
        as_json,
    )


@click.group(cls=Group)
def uninstall() -> None:
    """Remove exactly what `ctxward install` added (other hooks and keys stay).

    \b
    Example:
        ctxward uninstall claude --scope user
    """


def _uninstall_command(host: str, scopes: tuple[str, ...]) -> click.Command:
    @click.command(host)
    @scope_option(*scopes)
    @dry_run_option
    @json_option
    @click.pass_context
    def command(ctx: click.Context, scope: str, dry_run: bool, as_json: bool) -> None:
        from ctxward.install import uninstall as run

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


uninstall.add_command(_uninstall_command("claude", ("project", "local", "user")))
uninstall.add_command(_uninstall_command("opencode", ("project", "user")))
uninstall.add_command(_uninstall_command("codex", ("project", "user")))


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
    from ctxward.doctor import diagnose
    from ctxward.install import detect_claude_version

    version = detect_claude_version(claude_version)
    result = diagnose(project_of(ctx, anywhere=True), version=version, run_hooks=not no_run)
    if as_json:
        echo_json(result.as_dict())
    else:
        marks = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "info": "-"}
        text = render("doctor/report.txt.j2", d=result, marks=marks, counts=result.counts())
        click.echo(text, nl=False)
    if not result.ok:
        raise click.exceptions.Exit(1)


COMMANDS = [install, uninstall, doctor]
