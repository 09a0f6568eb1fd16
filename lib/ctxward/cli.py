"""The `ctxward` command: thin click commands over the library."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click

from ctxward.commands import Group, echo_json, echo_problems, echo_result, json_option, project_of
from ctxward.core.project import Project, find_project
from ctxward.core.render import render
from ctxward.errors import EXIT_BAD_INPUT, EXIT_OS_ERROR, CtxwardError, os_problem
from ctxward.hosts import HOSTS

HOOK_EVENTS = {
    "pre-compact": "PreCompact",
    "session-start": "SessionStart",
    "post-compact": "PostCompact",
    "subagent-stop": "SubagentStop",
    "stop": "Stop",
    "pre-tool-use": "PreToolUse",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "post-tool-use-failure": "PostToolUseFailure",
    "session-end": "SessionEnd",
}


# The later capabilities' commands, one module each under ctxward/commands/, loaded on use.
LAZY_COMMANDS = {
    "artifact": "ctxward.commands.subagents:artifact",
    "audit": "ctxward.commands.audit:audit",
    "bank": "ctxward.commands.bank:bank",
    "debate": "ctxward.commands.debate:debate",
    "dispatch": "ctxward.commands.dispatch:dispatch",
    "doctor": "ctxward.commands.install:doctor",
    "drift": "ctxward.commands.drift:drift_command",
    "handoff": "ctxward.commands.inline:handoff_command",
    "heartbeat": "ctxward.commands.subagents:heartbeat",
    "inline": "ctxward.commands.inline:inline",
    "install": "ctxward.commands.install:install",
    "reduce": "ctxward.commands.subagents:reduce",
    "scrub": "ctxward.commands.scrub:scrub_command",
    "session": "ctxward.commands.session:session",
    "share": "ctxward.commands.subagents:share",
    "shared-read": "ctxward.commands.subagents:shared_read",
    "subagent-prompt": "ctxward.commands.subagent_prompt:subagent_prompt",
    "thresholds": "ctxward.commands.dispatch:thresholds",
    "trust": "ctxward.commands.trust:trust",
    "uninstall": "ctxward.commands.install:uninstall",
    "watch": "ctxward.commands.watch:watch",
}


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from ctxward import __version__  # importlib.metadata: only when asked

    click.echo(f"ctxward, version {__version__}")
    ctx.exit()


@click.group(
    cls=Group,
    lazy=LAZY_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and exit.",
)
@click.option(
    "-C",
    "--project",
    "project_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project root (default: $CLAUDE_PROJECT_DIR, else the nearest folder with .git).",
)
@click.pass_context
def cli(ctx: click.Context, project_dir: Path | None) -> None:
    """Keep a coding agent's rules alive across compaction, and its context governed.

    \b
    Example:
        ctxward activate deep-review --slug parser-fix
        ctxward plan list
    """
    project = Project(project_dir.resolve()) if project_dir else find_project()
    ctx.obj = project
    if project.anchored:  # a crash's temporary files go once this command has written
        from ctxward.core.fsutil import sweep_after_writes

        ctx.with_resource(sweep_after_writes(project.state_dir, project.plans_dir))


@cli.command()
@click.argument("skill")
@click.option("--slug", required=True, help="The plan: docs/plans/SLUG/invariants.md.")
@json_option
@click.pass_context
def activate(ctx: click.Context, skill: str, slug: str, as_json: bool) -> None:
    """Write SKILL's invariants into docs/plans/SLUG/invariants.md.

    SKILL is a skill file, or a name looked up in .claude/skills/, .opencode/skill(s)/,
    .codex/skills/, .agents/skills/ (Codex) and then
    the shipped packs. Re-activating a skill replaces its section; another skill appends one.

    \b
    Example:
        ctxward activate deep-review --slug parser-fix
        ctxward activate .claude/skills/release/SKILL.md --slug v2
    """
    from ctxward.invariants.activate import activate as activate_skill

    project = project_of(ctx)
    result = activate_skill(project, skill, slug)
    path = project.relative(result.path)
    if as_json:
        echo_json(
            {
                "path": path,
                "skill": result.skill.name,
                "rules": list(result.skill.rules),
                "replaced": result.replaced,
                "branch": result.branch or None,
                "trusted": result.trusted,
            }
        )
    else:
        click.echo(
            render("invariants/activate.txt.j2", activation=result, path=path, slug=slug), nl=False
        )


@cli.group(cls=Group)
def plan() -> None:
    """List, complete and clean active plans.

    \b
    Example:
        ctxward plan list --json
    """


@plan.command("list")
@json_option
@click.pass_context
def plan_list(ctx: click.Context, as_json: bool) -> None:
    """List active plans: skills, rule count, branch, payload fresh/stale/missing, trusted.

    An untrusted plan (one that came with the repository, or was edited by hand since it was
    trusted) never reaches the model: read it, then `ctxward trust SLUG`.

    A plan that cannot be read is left out with a warning on stderr (exit 0: the compaction
    hooks carry on without it too; `ctxward doctor` fails on it).

    \b
    Example:
        ctxward plan list
    """
    from ctxward.invariants.plans import readable_summaries

    plans, unreadable = readable_summaries(project_of(ctx, anywhere=True))
    echo_problems("invariants/plan_unreadable.txt.j2", unreadable)
    echo_result(as_json, plans, "invariants/plan_list.txt.j2", plans=plans)


@plan.command("complete")
@click.argument("slug")
@click.pass_context
def plan_complete(ctx: click.Context, slug: str) -> None:
    """Remove SLUG's invariants.md and payload; other files in the folder stay.

    \b
    Example:
        ctxward plan complete parser-fix
    """
    from ctxward.invariants.plans import complete

    removed = complete(project_of(ctx), slug)
    click.echo(render("invariants/plan_complete.txt.j2", slug=slug, removed=removed), nl=False)


@plan.command("clean")
@click.option("--dry-run", is_flag=True, help="List the plans, remove nothing.")
@click.pass_context
def plan_clean(ctx: click.Context, dry_run: bool) -> None:
    """Complete every plan whose recorded git branch no longer exists.

    \b
    Example:
        ctxward plan clean --dry-run
    """
    from ctxward.invariants.plans import complete, orphaned

    project = project_of(ctx)
    plans = orphaned(project)
    if not dry_run:
        for summary in plans:
            complete(project, summary.slug)
    click.echo(render("invariants/plan_clean.txt.j2", plans=plans, dry_run=dry_run), nl=False)


@cli.command()
@click.argument("name", required=False)
@click.pass_context
def packs(ctx: click.Context, name: str | None) -> None:
    """List the shipped invariant packs (usable by name with `activate`), or print one.

    A plan activated from a pack names it as its full rules by this command, not by a path
    into the installed package: the reference works after a reinstall and on a teammate's
    machine.

    \b
    Example:
        ctxward packs
        ctxward packs deep-review
    """
    from ctxward.invariants.skills import pack_text, shipped_packs

    if name is not None:
        click.echo(pack_text(name), nl=False)
        return
    click.echo(render("invariants/packs.txt.j2", skills=shipped_packs()), nl=False)


@cli.command()
@click.option("--limit", default=5, show_default=True, help="How many reports, newest first.")
@json_option
@click.pass_context
def compactions(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Show the latest survival reports: which rules each compaction summary carried.

    \b
    Example:
        ctxward compactions --limit 1 --json
    """
    from ctxward.invariants.survival import read_reports

    project = project_of(ctx, anywhere=True)
    reports = read_reports(project, limit)
    echo_result(as_json, reports, "invariants/compactions.txt.j2", reports=reports)


@cli.group(cls=Group)
def config() -> None:
    """Show the project's settings (.ctxward/config.yaml over the defaults).

    \b
    Example:
        ctxward config show --json
    """


@config.command("show")
@json_option
@click.pass_context
def config_show(ctx: click.Context, as_json: bool) -> None:
    """Print the settings in force and where they came from.

    \b
    Example:
        ctxward config show
    """
    from ctxward.core.config import load

    settings = load(project_of(ctx, anywhere=True))
    shown = settings.as_dict()
    if isinstance(shown.get("drift"), dict) and "context" in shown["drift"]:
        shown["context"] = shown["drift"].pop("context")  # its own section in config.yaml
    if as_json:
        echo_json(shown)
    else:
        source = shown.pop("source")
        click.echo(render("core/config_show.txt.j2", config=shown, source=source), nl=False)


@cli.command()
@click.argument("event", type=click.Choice(list(HOOK_EVENTS)))
@click.option(
    "--host",
    type=click.Choice(list(HOSTS)),
    default="claude",
    show_default=True,
    help="Whose JSON shape stdin and stdout use (opencode: what hooks/opencode/ctxward.js sends; "
    "codex: Codex CLI's hooks.json contract; gemini: Gemini CLI's settings.json hooks).",
)
def hook(event: str, host: str) -> None:
    """Run one hook by hand: the host's JSON on stdin, its answer on stdout.

    Installed Claude Code settings call `ctxward-hook` instead, which takes no arguments; the
    OpenCode plugin calls `ctxward hook EVENT --host opencode`, Codex's hooks.json
    `ctxward hook EVENT --host codex`.

    \b
    Example:
        ctxward hook pre-compact < payload.json
        ctxward hook pre-compact --host opencode < opencode-payload.json
    """
    from ctxward.hookio import run

    raise click.exceptions.Exit(run(event_name=HOOK_EVENTS[event], host=host))


@cli.command()
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run in this (empty) folder and keep it, instead of a temporary one.",
)
def demo(keep: Path | None) -> None:
    """Show the main job: activate, PreCompact, SessionStart(compact), PostCompact.

    Runs offline in a throwaway project and prints what each hook wrote and what the model
    would receive.

    \b
    Example:
        ctxward demo
    """
    from ctxward.setup.demo import run_demo

    started = time.perf_counter()

    def show(root: Path, where: str) -> None:
        steps = run_demo(root)
        seconds = time.perf_counter() - started
        click.echo(render("setup/demo.txt.j2", steps=steps, where=where, seconds=seconds), nl=False)

    if keep is not None:
        if keep.exists() and any(keep.iterdir()):
            raise CtxwardError(f"{keep}: not empty; give --keep a new or empty folder")
        keep.mkdir(parents=True, exist_ok=True)
        show(keep.resolve(), str(keep.resolve()))
        return
    with tempfile.TemporaryDirectory(prefix="ctxward-demo-") as folder:
        show(Path(folder), "a temporary folder, removed afterwards (keep it with --keep DIR)")


def main(argv: list[str] | None = None) -> int:
    """Console script `ctxward`: returns the exit code instead of raising SystemExit.

    The exit codes are ctxward.errors' table; a command's own failures, OSErrors included,
    are mapped by `commands.Group`. An OSError outside any command (click writing the help to
    a closed pipe) is one line too, exit 5, never a traceback.
    """
    try:
        # Without standalone mode click returns the code of an Exit instead of raising it.
        code = cli.main(args=argv, prog_name="ctxward", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        exc.show()
        return EXIT_BAD_INPUT
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        click.echo("ctxward: aborted", err=True)
        return 1
    except OSError as exc:
        click.echo(f"ctxward: error: {os_problem(exc)}", err=True)
        return EXIT_OS_ERROR
    return code if isinstance(code, int) else 0
