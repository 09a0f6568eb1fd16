"""`ctxward trust`: let a plan's rules reach the model on this machine, or take that back."""

from __future__ import annotations

import click

from ctxward.commands import echo_problems, echo_result, json_option, project_of
from ctxward.errors import BadInput


@click.command()
@click.argument("slugs", nargs=-1, metavar="[SLUG]...")
@click.option(
    "--revoke", is_flag=True, help="Take the trust back: the plans' rules stop reaching the model."
)
@json_option
@click.pass_context
def trust(ctx: click.Context, slugs: tuple[str, ...], revoke: bool, as_json: bool) -> None:
    """Trust plans as they are now, so that their rules reach the summarizer and the model.

    A plan that came with a repository (docs/plans/SLUG/invariants.md, committed by someone
    else) is never given to the model until you trust it here. Read it first: its rules are
    presented as non-negotiable. With no SLUG, every plan not trusted yet is trusted. The trust
    is per user, outside the repository, and for this exact content: any change to the file
    (a hand edit, a pull) makes it untrusted again. `ctxward activate` trusts what it writes.

    \b
    Example:
        ctxward plan list
        ctxward trust release-v2
        ctxward trust --revoke release-v2
    """
    from ctxward.invariants.trust import revoke_plans, trust_plans

    project = project_of(ctx)
    if revoke:
        if not slugs:
            raise BadInput("name the plans to take the trust from: ctxward trust --revoke SLUG")
        revoked = revoke_plans(project, slugs)
        echo_result(as_json, revoked, "invariants/trust_revoked.txt.j2", revoked=revoked)
        return
    trusted, unreadable = trust_plans(project, slugs)
    echo_problems("invariants/trust_unreadable.txt.j2", unreadable)
    echo_result(as_json, trusted, "invariants/trust.txt.j2", trusted=trusted, named=bool(slugs))
