"""Annotators: invite, annotators add."""

from __future__ import annotations

import click

from judgelab.sync.cli.base import Output, _connection, json_option, main
from judgelab.sync.client import connect


@main.command("invite")
@click.option("--new", is_flag=True, help="Make a new link; the links handed out before stop working.")
@json_option
@click.pass_context
def invite_cmd(ctx: click.Context, new: bool, as_json: bool) -> None:
    """Print Label Studio's invite link: annotators sign up there with their own password.

    Whoever opens the link joins your organization and sees its projects (the local stack allows
    sign-up only through this link).
    """
    from judgelab.sync.people import invite_link

    conn = _connection(ctx)
    invite = invite_link(connect(conn), conn.url, new=new)
    out = Output(as_json)
    out.line(invite.url)
    out.note(
        "Send this link to your annotators: each signs up with an email and a password of their own and "
        "then sees the organization's projects" + (" (the links sent before no longer work)" if new else "")
    )
    out.result({"invite_url": invite.url, "new": new})


@main.group("annotators")
def annotators_group() -> None:
    """Annotators' accounts in Label Studio."""


@annotators_group.command("add")
@click.argument("emails", nargs=-1, required=True)
@click.option(
    "--password",
    envvar="JUDGELAB_ANNOTATOR_PASSWORD",
    prompt=True,
    hide_input=True,
    confirmation_prompt=True,
    help="The new accounts' password (asked for when not given; env JUDGELAB_ANNOTATOR_PASSWORD).",
)
@json_option
@click.pass_context
def annotators_add_cmd(ctx: click.Context, emails: tuple[str, ...], password: str, as_json: bool) -> None:
    """Create annotators' accounts (email and password), as if each signed up through the invite link.

    An email that has an account already is left as it is. Label Studio checks the password as on
    its sign-up page (at least 8 characters, not too common).
    """
    from judgelab.sync.people import account_emails, invite_link, sign_up

    conn = _connection(ctx)
    client = connect(conn)
    invite = invite_link(client, conn.url)
    known = account_emails(client)
    out, created, already = Output(as_json), [], []
    for email in dict.fromkeys(e.strip() for e in emails):
        if email.lower() in known:
            already.append(email)
            out.line(f"{email}: has an account already (left as it is)")
            continue
        sign_up(invite, email, password)
        created.append(email)
        out.line(f"{email}: account created; log in at {conn.url}/user/login/")
    out.result({"created": created, "already": already})
