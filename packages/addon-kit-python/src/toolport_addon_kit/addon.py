"""Declaring an add-on: its tools, their arguments, what they return, and addon.json from the same code."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from ._json import to_json
from .accounts import Account, Provider, tool_accounts_problem
from .arguments import Arg
from .settings import Setting

if TYPE_CHECKING:
    from .handler import Handler, OnError


@dataclass(frozen=True)
class File:
    """A file returned with an answer (``files=``): Toolport keeps it 24 hours for the app that made
    the call, which reads it through the link in the result. ``data`` as bytes, or text sent as UTF-8.
    Up to 5 files and 4 MB in all, of the types docs/addons.md "Files" lists."""

    name: str
    media_type: str
    data: bytes | str


@dataclass(frozen=True)
class Json:
    """Answer with JSON: the app gets it as text and as structuredContent. A dict or a list returned as is means the same."""

    value: Any
    files: Sequence[File] = ()


@dataclass(frozen=True)
class Content:
    """Answer with MCP content blocks, e.g. ``Content([{"type": "text", "text": "..."}])``."""

    blocks: list[dict[str, Any]]
    files: Sequence[File] = ()


@dataclass(frozen=True)
class ToolsFor:
    """What a ``tools_for`` function is told of the person Toolport asks about."""

    user_id: str
    settings: dict[str, Any]
    accounts: list[str]
    tools: list[str]


@dataclass(frozen=True)
class Text:
    """Answer with text and files; a plain string returned means the text alone."""

    text: str
    files: Sequence[File] = ()


@dataclass(frozen=True)
class Confirm:
    """What a confirm handler returns to describe a call for the person's approval.

    ``info`` lines are ``(name, value)`` pairs or ``{"name", "value"}`` dicts; a line without a value
    is not shown. Return None instead when the call will change nothing: Toolport then skips the
    approval for this call.
    """

    message: str
    info: Iterable[tuple[str, str] | Mapping[str, str]] = ()
    style: str | None = None  # "destructive" or "default"
    # An https URL of a picture of what the call will do (PNG, JPEG, WebP or GIF, up to 512 KB):
    # Toolport fetches it once and shows its own copy to the person.
    image: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message}
        lines = [dict(line) if isinstance(line, Mapping) else {"name": line[0], "value": line[1]} for line in self.info]
        if lines:
            out["info"] = lines
        if self.style is not None:
            out["style"] = self.style
        if self.image is not None:
            out["image"] = self.image
        return out


@dataclass(frozen=True)
class ApprovalReceipt:
    """Proof, inside the signed body, that a person allowed this exact call (its arguments' hash matches)."""

    id: str  # apr_...
    decided_at: datetime
    channel: str  # dashboard, push or check script
    arguments_hash: str  # sha256:<hex> of the arguments' JSON text


@dataclass(frozen=True)
class App:
    """The AI app that made the call, as it registered itself (unverified)."""

    name: str
    client_id: str


@dataclass(frozen=True)
class CallContext:
    """Who and what a delivery is about. Identity comes from here, never from the arguments."""

    user_id: str  # the person, pseudonymous and stable per add-on: scope your data by it
    call_id: str  # identical on every retry: the idempotency key
    attempt: int  # 1, then 2, 3... on retries
    deadline: datetime  # after it Toolport has stopped waiting for the answer (timezone-aware, UTC)
    app: App
    webhook_id: str  # the raw webhook-id header
    approval: ApprovalReceipt | None = None  # set only when the receipt matches these arguments
    # The person's values for the add-on's settings (a read-only mapping); secrets too: never log them.
    settings: Mapping[str, Any] = field(default_factory=dict)
    # The person's connected accounts this tool lists (``accounts=[...]``), each an Account with a
    # fresh ``access_token``: ``ctx.accounts["github"].access_token``. A tool's run is never called
    # without every one of them; a confirm handler may get them or not. Never log them.
    accounts: Mapping[str, Account] = field(default_factory=dict)
    # The app's session or conversation, when the app names one: stable across its calls in that
    # session, different in another, never the same value for two add-ons. Key per-conversation state by it.
    session: str | None = None
    _deadline_monotonic: float = field(default=0.0, repr=False, compare=False)
    # A task's call (a tool whose timeout_seconds is over 30): where its progress and answer go.
    _send_later: Callable[[dict[str, Any]], bool] | None = field(default=None, repr=False, compare=False)

    def progress(self, message: str) -> None:
        """Tells the app how far a long call is: a short sentence, shown as the task's status.

        Only a tool whose ``timeout_seconds`` is over 30 runs as a task (taken at once, answered
        when ``run`` returns, up to its deadline); for any other call this does nothing.
        """
        if self._send_later is not None:
            self._send_later({"progress": message})

    def seconds_left(self) -> float:
        """Seconds until the deadline, never negative: pass it as the timeout of slow work."""
        return max(0.0, self._deadline_monotonic - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.seconds_left() <= 0


Run = Callable[[dict[str, Any], CallContext], Any]


class Tool:
    """One declared tool. Calling it calls the function it decorates."""

    def __init__(
        self,
        run: Run,
        *,
        name: str,
        title: str,
        summary: str,
        destructive: bool,
        read_only: bool,
        require_approval: bool,
        timeout_seconds: int | None,
        arguments: Mapping[str, Arg],
        always_ask: bool = False,
        accounts: Iterable[str] = (),
        exclusive: bool = False,
    ) -> None:
        self.run = run
        self.name = name
        self.title = title
        self.summary = summary
        self.destructive = destructive
        self.read_only = read_only
        self.always_ask = always_ask
        self.exclusive = exclusive
        self.require_approval = require_approval
        self.timeout_seconds = timeout_seconds
        self.arguments = dict(arguments)
        self.accounts: tuple[str, ...] = tuple(accounts)
        self.confirm_handler: Run | None = None
        self.__doc__ = run.__doc__
        self.__wrapped__ = run

    def confirm(self, fn: Run) -> Run:
        """Decorates the function that describes a call for the approval prompt (``"confirm": true``).

        It returns a Confirm (or a dict of the same fields), or None when the call will change
        nothing, which skips the approval for that call.
        """
        if not callable(fn):
            raise TypeError(f"tools.{self.name}.confirm must be a function.")
        self.confirm_handler = fn
        return fn

    def __call__(self, args: dict[str, Any], ctx: CallContext) -> Any:
        return self.run(args, ctx)

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "title": self.title, "summary": self.summary}
        if self.destructive:
            out["destructive"] = True
        if self.read_only:
            out["readOnly"] = True
        if self.confirm_handler is not None:
            out["confirm"] = True
        if self.always_ask:
            out["alwaysAsk"] = True
        if self.exclusive:
            out["exclusive"] = True
        if self.timeout_seconds is not None:
            out["timeoutSeconds"] = self.timeout_seconds
        if self.accounts:
            out["accounts"] = list(self.accounts)
        args = []
        for arg_name, arg in self.arguments.items():
            a: dict[str, Any] = {"name": arg_name, "summary": arg.summary, "kind": arg.kind}
            if not arg.required:
                a["required"] = False
            args.append(a)
        out["arguments"] = args
        return out


class AddOn:
    """An add-on: its manifest fields and its tools, declared with ``@addon.tool(...)``."""

    def __init__(
        self,
        *,
        id: str,
        name: str,
        description: str,
        webhook: str,
        visibility: str | None = None,
        settings: Mapping[str, Setting] | None = None,
        accounts: Iterable[Provider] | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.description = description
        self.webhook = webhook
        self.visibility = visibility
        self.tools: dict[str, Tool] = {}
        self.tools_for_handler: Callable[[ToolsFor], Iterable[str]] | None = None
        for setting_name, s in (settings or {}).items():
            if not isinstance(s, Setting):
                raise TypeError(f"settings.{setting_name} must be made with setting.text(), setting.secret() or another setting builder.")
        # Per-install settings the person fills in; each delivery's values are ``ctx.settings``.
        self.settings: dict[str, Setting] = dict(settings or {})
        # OAuth providers whose accounts the person connects; tools list the ones they act on.
        self.accounts: dict[str, Provider] = {}
        for p in accounts or ():
            if not isinstance(p, Provider):
                raise TypeError('accounts must be Provider("github", title=..., authorization_url=..., token_url=..., scopes=[...]) entries.')
            if p.provider in self.accounts:
                raise ValueError(f'accounts declares "{p.provider}" twice.')
            self.accounts[p.provider] = p

    def tool(
        self,
        name: str | None = None,
        *,
        title: str,
        summary: str,
        destructive: bool = False,
        read_only: bool = False,
        always_ask: bool = False,
        exclusive: bool = False,
        require_approval: bool = False,
        timeout_seconds: int | None = None,
        arguments: Mapping[str, Arg] | None = None,
        accounts: Iterable[str] | None = None,
    ) -> Callable[[Run], Tool]:
        """Declares the decorated function ``fn(args, ctx)`` as a tool (named after it unless ``name`` is given).

        ``require_approval`` refuses, before the function runs, any call that does not carry the
        person's approval of exactly these arguments (for destructive tools whose confirm never
        returns None; a call a rule of the person allowed carries one too, channel "rule").
        ``always_ask`` makes every call ask the person, and no rule of theirs can let it run
        unasked. ``exclusive`` runs one call at a time for each person, with the add-on's other
        exclusive tools (later calls wait their turn, in order). ``timeout_seconds`` (1 to 3600) goes to the manifest; over 30 the tool runs as an MCP
        task: the kit takes each call at once and answers it when ``run`` returns. ``accounts`` lists the
        providers (of the add-on's ``accounts``) whose connected account the tool acts on, at most
        5: ``ctx.accounts["github"].access_token`` in the tool, and only those tokens reach it.
        """

        def decorate(fn: Run) -> Tool:
            tool_name = name if name is not None else getattr(fn, "__name__", "")
            if not callable(fn):
                raise TypeError(f"tools.{tool_name} needs a run function.")
            if tool_name in self.tools:
                raise ValueError(f"tools.{tool_name} is declared twice.")
            for arg_name, arg in (arguments or {}).items():
                if not isinstance(arg, Arg):
                    raise TypeError(f"tools.{tool_name}.arguments.{arg_name} must be made with text(), number(), boolean() or choice().")
            if require_approval and not destructive and not always_ask:
                raise TypeError(
                    f"tools.{tool_name}: require_approval needs destructive=True or always_ask=True (only calls that ask are approved)."
                )
            listed = list(accounts) if accounts is not None and not isinstance(accounts, (str, list, tuple)) else accounts
            problem = tool_accounts_problem(tool_name, listed, self.accounts)
            if problem:
                raise TypeError(problem)
            t = Tool(
                fn,
                name=tool_name,
                title=title,
                summary=summary,
                destructive=bool(destructive),
                read_only=bool(read_only),
                always_ask=bool(always_ask),
                exclusive=bool(exclusive),
                require_approval=bool(require_approval),
                timeout_seconds=timeout_seconds,
                arguments=arguments or {},
                accounts=listed or (),
            )
            self.tools[tool_name] = t
            return t

        return decorate

    def tools_for(self, fn: Callable[[ToolsFor], Iterable[str]]) -> Callable[[ToolsFor], Iterable[str]]:
        """Decorates the function that says which tools a person is offered now (``"toolsPerPerson": true``).

        It gets a ToolsFor (their user id, settings, connected providers and every tool name) and
        returns the names to offer; Toolport asks with a 3 s bound and keeps the answer 5 minutes.
        """
        if not callable(fn):
            raise TypeError("tools_for needs a function.")
        self.tools_for_handler = fn
        return fn

    def manifest(self, *, webhook: str | None = None, visibility: str | None = None) -> dict[str, Any]:
        """The addon.json object, in the TypeScript kit's format; the overrides replace top-level fields."""
        vis = visibility if visibility is not None else self.visibility
        m: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "webhook": webhook if webhook is not None else self.webhook,
        }
        if vis:
            m["visibility"] = vis
        if self.tools_for_handler is not None:
            m["toolsPerPerson"] = True
        m["tools"] = [t.manifest() for t in self.tools.values()]
        if self.settings:
            m["settings"] = [s.manifest(n) for n, s in self.settings.items()]
        if self.accounts:
            m["accounts"] = [p.manifest() for p in self.accounts.values()]
        return m

    def manifest_json(self, *, webhook: str | None = None, visibility: str | None = None) -> str:
        """addon.json's text: ``JSON.stringify(manifest, null, 2)`` and a newline, byte for byte."""
        return to_json(self.manifest(webhook=webhook, visibility=visibility), indent=2) + "\n"

    def handler(
        self,
        *,
        secrets: Iterable[str] | Callable[[], Iterable[str]],
        tolerance_seconds: float = 300,
        max_body_bytes: int = 1_000_000,
        dedupe: bool = True,
        remember_at_most: int = 10_000,
        strict_ping: bool = False,
        on_error: OnError | None = None,
    ) -> Handler:
        """The verified webhook: serve it with ``serve()``, or as ``handler.wsgi`` or ``handler.asgi``."""
        from .handler import Handler

        return Handler(
            self,
            secrets=secrets,
            tolerance_seconds=tolerance_seconds,
            max_body_bytes=max_body_bytes,
            dedupe=dedupe,
            remember_at_most=remember_at_most,
            strict_ping=strict_ping,
            on_error=on_error,
        )
