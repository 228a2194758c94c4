"""Annotators' accounts: Label Studio's invite link, and sign-up through it on someone's behalf.

The local stack runs Label Studio with sign-up only through an invite link
(``LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK``), as a study's server should be. Label Studio 1.23
gives the link at ``GET /api/invite`` (``/user/signup/?token=<the organization's token>``; the SDK's
``organizations.invites.get_invite_link``) and makes a new one, which ends the old, at
``POST /api/invite/reset-token``. Whoever opens the link signs up with an email and a password of
their own and joins the organization, so they see its projects.

Its users API (``POST /api/users/``) creates an account without a password, which nobody can log
in with; a password is set only by the sign-up form (or ``label-studio reset_password`` on the
server itself). :func:`sign_up` therefore fills in the sign-up form of the invite link, as the
annotator would in a browser.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

import httpx

from judgelab.sync.client import SyncError
from judgelab.sync.http_retry import tls_context


@dataclass(frozen=True)
class Invite:
    url: str  # the full sign-up link to hand to annotators
    token: str


def invite_link(client: Any, base_url: str, *, new: bool = False) -> Invite:
    """The organization's invite link (``new``: a new one; links handed out before stop working)."""
    invite = client.organizations.reset_token() if new else client.organizations.invites.get_invite_link()
    path = str(invite.invite_url or "")
    url = path if path.startswith(("http://", "https://")) else base_url.rstrip("/") + "/" + path.lstrip("/")
    return Invite(url=url, token=str(invite.token or ""))


def account_emails(client: Any) -> set[str]:
    """The emails of the organization's accounts (lower case, as Label Studio stores them)."""
    return {str(getattr(user, "email", "") or "").lower() for user in client.users.list()}


_CSRF_INPUT = re.compile(r'name=["\']csrfmiddlewaretoken["\']\s+value=["\']([^"\']+)')
_FORM_ERROR = re.compile(r'class="[^"]*(?:error|field_errors)[^"]*"[^>]*>\s*(?:<[^>]+>\s*)*([^<]{3,200})', re.I)


def sign_up(invite: Invite, email: str, password: str, timeout: float = 60.0) -> None:
    """Create ``email``'s account with ``password`` through the invite link's sign-up form.

    Raises :class:`SyncError` with Label Studio's reason when the form is refused (a password too
    short or too common, an email that has an account already)."""
    with httpx.Client(timeout=timeout, follow_redirects=False, verify=tls_context()) as http:
        try:
            page = http.get(invite.url)
        except httpx.HTTPError as exc:
            raise SyncError(f"cannot open the invite link {invite.url}: {exc}") from None
        if page.status_code >= 400:
            raise SyncError(f"the invite link {invite.url} answered HTTP {page.status_code}")
        found = _CSRF_INPUT.search(page.text)
        csrf = found.group(1) if found else http.cookies.get("csrftoken", "")
        form = {"csrfmiddlewaretoken": csrf, "email": email, "password": password, "allow_newsletters": ""}
        try:
            answer = http.post(invite.url, data=form, headers={"Referer": invite.url})
        except httpx.HTTPError as exc:
            raise SyncError(f"Label Studio's sign-up for {email} failed: {exc}") from None
    if answer.status_code in (301, 302, 303):  # signed up and logged in: sent on to the projects
        return
    if answer.status_code == 403:
        raise SyncError(f"Label Studio refused the sign-up of {email}: the invite link is no longer valid")
    reasons = sorted({" ".join(html.unescape(m).split()) for m in _FORM_ERROR.findall(answer.text) if m.strip()})
    why = "; ".join(reasons) if reasons else f"HTTP {answer.status_code}"
    raise SyncError(f"Label Studio refused the sign-up of {email}: {why}")
