"""Connected accounts (manifest ``accounts``): OAuth providers the person connects for the add-on.

Declare the providers on the add-on, ``AddOn(..., accounts=[Provider("github", title="GitHub", ...)])``,
list the ones a tool acts on, ``@addon.tool(..., accounts=["github"])``, and read the token in it
as ``ctx.accounts["github"].access_token``. Toolport sends a fresh token for each provider the tool
lists, and only those, inside the signed delivery. Never log it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple

PROVIDER_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
MAX_TOOL_ACCOUNTS = 5
"""A tool lists at most this many providers, as the add-on declares at most this many."""
ACCESS_TOKEN_MAX = 16_384
"""Characters of an access token the kit accepts: room for a long JWT, not for a file."""
# RFC 6749 A.12: an access token is 1*VSCHAR, printable ASCII and space (no line break, so no header injection).
_VSCHAR = re.compile(r"[\x20-\x7e]+")


@dataclass(frozen=True)
class Account:
    """The person's account at one provider, as one delivery carries it.

    Send ``access_token`` as ``Authorization: Bearer <access_token>`` to the provider's API. It is
    left out of ``repr()``, so a logged context does not show it.
    """

    access_token: str = field(repr=False)


@dataclass(frozen=True)
class Provider:
    """One OAuth provider the add-on declares (manifest ``accounts``).

    The OAuth client (id and secret) is stored through the developer API, never here.
    """

    provider: str  # ^[a-z][a-z0-9_]{0,31}$: what tools list in accounts, the key in ctx.accounts
    title: str  # the service's name as the person knows it, up to 60 characters
    authorization_url: str  # https (http only on a loopback host), no credentials, no fragment
    token_url: str
    scopes: tuple[str, ...] = ()  # up to 20 scope tokens; empty asks for none
    revocation_url: str | None = None  # RFC 7009: disconnecting then revokes the token

    def __post_init__(self) -> None:
        if not isinstance(self.provider, str) or not PROVIDER_NAME.fullmatch(self.provider):
            raise ValueError('A provider name is a lowercase letter, then up to 31 lowercase letters, digits or underscores, such as "github".')
        if isinstance(self.scopes, str):
            raise TypeError('scopes is a list of scope strings, for example ["repo", "read:user"].')
        object.__setattr__(self, "scopes", tuple(self.scopes))

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": self.provider,
            "title": self.title,
            "authorizationUrl": self.authorization_url,
            "tokenUrl": self.token_url,
        }
        if self.revocation_url is not None:
            out["revocationUrl"] = self.revocation_url
        out["scopes"] = list(self.scopes)
        return out


class AccountsProblem(NamedTuple):
    """The first account a tool lists that the delivery lacks (``missing``) or carries unusable (``malformed``)."""

    provider: str
    reason: str


def accounts_from(listed: Iterable[str], sent: Any) -> tuple[Mapping[str, Account], AccountsProblem | None]:
    """The accounts a tool lists, from the delivery's ``accounts``: well-formed ones only, others left out."""
    given = sent if isinstance(sent, dict) else {}
    out: dict[str, Account] = {}
    problem: AccountsProblem | None = None
    for provider in listed:
        entry = given.get(provider)
        if entry is None:
            problem = problem or AccountsProblem(provider, "missing")
            continue
        token = entry.get("accessToken") if isinstance(entry, dict) else None
        if not isinstance(token, str) or len(token) > ACCESS_TOKEN_MAX or not _VSCHAR.fullmatch(token):
            problem = problem or AccountsProblem(provider, "malformed")
            continue
        out[provider] = Account(token)
    return MappingProxyType(out), problem


def accounts_problem_sentence(p: AccountsProblem, title: str) -> str:
    """What a call answers when its delivery lacks a listed account; the same words as the TypeScript kit.

    Toolport never sends such a call (it answers the person with a link to connect the account
    instead), so the code and the registered manifest disagree. Names the provider, never a token.
    """
    if p.reason == "malformed":
        return f'The {title} account ("{p.provider}") this call carries is not a usable access token, so the tool did not run.'
    return (
        f'This tool needs the person\'s {title} account ("{p.provider}") and the call carries none, so it did not run. '
        f'Toolport sends it when the add-on\'s registered manifest lists "{p.provider}" in this tool\'s accounts: push the current addon.json.'
    )


def tool_accounts_problem(tool: str, listed: Any, declared: Mapping[str, Provider]) -> str | None:
    """The TypeError sentence of a tool whose ``accounts`` the add-on cannot keep, or None."""
    if listed is None:
        return None
    if isinstance(listed, str) or not isinstance(listed, (list, tuple)):
        return f'tools.{tool}.accounts must be a list of provider names, for example ["github"].'
    if len(listed) > MAX_TOOL_ACCOUNTS:
        return f"tools.{tool}.accounts lists {len(listed)} providers; a tool needs at most {MAX_TOOL_ACCOUNTS}."
    seen: set[str] = set()
    for p in listed:
        if not isinstance(p, str) or not PROVIDER_NAME.fullmatch(p):
            return f'tools.{tool}.accounts: each entry is a provider name such as "github".'
        if p in seen:
            return f'tools.{tool}.accounts lists "{p}" twice.'
        seen.add(p)
        if p not in declared:
            return f'tools.{tool}.accounts lists "{p}", which the add-on does not declare: add Provider("{p}", ...) to AddOn(accounts=[...]).'
    return None
