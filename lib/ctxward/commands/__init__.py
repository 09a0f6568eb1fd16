"""Shared pieces of the click commands; each capability's commands live in a module here."""

from __future__ import annotations

import json
from typing import Any

import click

from ctxward.errors import CtxwardError
from ctxward.project import Project


class Group(click.Group):
    """Maps every expected failure to one line on stderr and its documented exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CtxwardError as exc:
            click.echo(f"ctxward: error: {exc}", err=True)
            raise click.exceptions.Exit(exc.exit_code) from None


def project_of(ctx: click.Context) -> Project:
    project: Project = ctx.obj
    return project


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
