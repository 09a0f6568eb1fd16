"""Shared pieces of the click commands; each capability's commands live in a module here."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import click

from ctxward.core.project import Project
from ctxward.errors import EXIT_OS_ERROR, BadInput, CtxwardError, os_problem


class Group(click.Group):
    """Maps every expected failure, and every OSError, to one line on stderr and its
    documented exit code (ctxward.errors' table).

    `lazy` names commands as "module:attribute", imported only when that command (or the
    command list, for --help) is asked for: `ctxward hook` runs in the OpenCode plugin on every
    sub-agent call and compaction, and should not pay for every capability's imports.
    """

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            import importlib

            module, attribute = self.lazy[cmd_name].split(":")
            command: click.Command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CtxwardError as exc:
            click.echo(f"ctxward: error: {exc}", err=True)
            raise click.exceptions.Exit(exc.exit_code) from None
        except OSError as exc:  # a full disk, a read-only mount, a link on the way: one line
            click.echo(f"ctxward: error: {os_problem(exc)}", err=True)
            raise click.exceptions.Exit(EXIT_OS_ERROR) from None


def project_of(ctx: click.Context, *, anywhere: bool = False) -> Project:
    """The command's project; BadInput (exit 2, nothing written) when the folder is no project
    and the command writes state (`anywhere` False), so that no `docs/` or `.ctxward/` appears in
    whatever folder the command was started in."""
    project: Project = ctx.obj
    if not (anywhere or project.anchored):
        raise BadInput(
            f"{project.root} is not a project (no .git or .ctxward above it): run this inside "
            f"one, or name it with -C DIR"
        )
    return project


def echo_json(value: Any) -> None:
    """Print `value` as JSON; a record in it (anything with `as_dict`) as its `as_dict()`."""
    click.echo(json.dumps(value, ensure_ascii=False, indent=2, default=_as_dict))


def _as_dict(value: Any) -> Any:
    if hasattr(value, "as_dict"):
        return value.as_dict()
    raise TypeError(f"{type(value).__name__} is not JSON: give echo_json its as_dict()")


def echo_result(as_json: bool, data: Any, template: str, **context: Any) -> None:
    """Print `data` as JSON for machines, or `template` rendered with `context` for people."""
    if as_json:
        echo_json(data)
    else:
        from ctxward.core.render import render

        click.echo(render(template, **context), nl=False)


def echo_problems(template: str, problems: Iterable[str]) -> None:
    """One warning on stderr for each problem, `template` rendered with `problem`."""
    from ctxward.core.render import render

    for problem in problems:
        click.echo(render(template, problem=problem), err=True, nl=False)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
