"""The verified webhook, independent of any server: headers and body in, status and JSON out."""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import hashlib
import hmac
import inspect
import json
import logging
import math
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
import weakref
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from ._json import js_number, to_json
from .accounts import accounts_from, accounts_problem_sentence
from .addon import App, ApprovalReceipt, CallContext, Confirm, Content, File, Json, Text, Tool, ToolsFor
from .arguments import check_arguments
from .errors import is_addon_error
from .settings import settings_from

if TYPE_CHECKING:
    from .addon import AddOn
    from .servers import AddOnServer

GENERIC_FAILURE = "The add-on failed; try again later."
"""The sentence an app sees when a tool raises something other than AddOnError."""

NOT_APPROVED = "This call carries no approval from the person for these arguments, so it did not run."
"""What a ``require_approval`` tool answers to a call without a matching approval."""

RESULT_LIMIT_BYTES = 64 * 1024
# Toolport closes the connection at the deadline; waiting a moment longer costs nothing then, and
# keeps a clock running slightly ahead of Toolport's from cutting off an answer it still awaits.
DEADLINE_GRACE_SECONDS = 1.0
# A wait is bounded even when a signed body names a deadline years away (threads refuse huge timeouts).
MAX_WAIT_SECONDS = 3600.0
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
# Tries at a task's answer URL (its answer, or its progress) before giving up.
_LATER_ATTEMPTS = 5
_log = logging.getLogger("toolport_addon_kit")


@dataclass(frozen=True)
class Where:
    """Where an unexpected error happened, for ``on_error``."""

    tool: str | None = None
    call_id: str | None = None


OnError = Callable[[BaseException, Where], None]


class Answer(NamedTuple):
    """What the handler answers, before a server turns it into a response."""

    status: int
    content_type: str
    body: bytes


class BodyTooLarge(Exception):
    """Raised by a server adapter whose body read passed ``max_body_bytes``."""


def _json_answer(status: int, body: Any) -> Answer:
    return Answer(status, "application/json", to_json(body).encode("utf-8"))


# Every refusal before verification looks the same: no hint about which check failed.
UNAUTHORIZED = Answer(401, "text/plain", b"Unauthorized")
TOO_LARGE = _json_answer(413, {"error": "The delivery is too large."})
_FAILED = to_json({"error": GENERIC_FAILURE, "failed": True}).encode("utf-8")


def arguments_hash(arguments: Any) -> str:
    """``sha256:<hex>`` of the arguments' JSON text as Toolport writes it: what a receipt's argumentsHash says."""
    return "sha256:" + hashlib.sha256(to_json({} if arguments is None else arguments).encode("utf-8")).hexdigest()


def _secret_key(secret: str) -> bytes:
    raw = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        key = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        # Never quote the secret: this sentence may reach a log.
        raise ValueError("A signing secret must be whsec_ followed by base64, as Toolport shows it.")
    return key


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None


def _js_string_of(v: Any) -> str:
    """String(v) for what JSON.parse can produce."""
    if isinstance(v, str):
        return v
    if v is True or v is False:
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return js_number(v) if math.isfinite(v) else ("NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"))
    if isinstance(v, list):
        return ",".join("" if x is None else _js_string_of(x) for x in v)
    return "[object Object]"


def _utf16_prefix(s: str, units: int) -> str:
    """s.slice(0, units) as JavaScript counts (UTF-16 code units)."""
    b = s.encode("utf-16-le", "surrogatepass")[: units * 2]
    return b.decode("utf-16-le", "surrogatepass")


def _parse_instant(s: Any) -> datetime | None:
    if not isinstance(s, str):
        return None
    try:
        at = datetime.fromisoformat(s)
    except ValueError:
        return None
    return at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at.astimezone(timezone.utc)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _receipt_of(d: dict[str, Any]) -> ApprovalReceipt | None:
    """The delivery's approval, when it is well formed and names the arguments this delivery carries.

    Toolport sends the arguments as the exact JSON text the person saw; to_json of what json.loads
    read back gives that text again, as JSON.stringify does in the TypeScript kit.
    """
    a = d.get("approval")
    if not isinstance(a, dict):
        return None
    rid, decided, channel, sent = a.get("id"), a.get("decidedAt"), a.get("channel"), a.get("argumentsHash")
    if not all(isinstance(x, str) for x in (rid, decided, channel, sent)):
        return None
    decided_at = _parse_instant(decided)
    if decided_at is None:
        return None
    try:
        digest = arguments_hash(d.get("arguments"))
    except (TypeError, ValueError, RecursionError):
        return None
    if not hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), digest.encode("ascii")):
        return None
    return ApprovalReceipt(id=rid, decided_at=decided_at, channel=channel, arguments_hash=sent)


def _artifacts(files: Sequence[File]) -> dict[str, Any]:
    if not files:
        return {}
    return {
        "artifacts": [
            {
                "name": f.name,
                "mediaType": f.media_type,
                "data": base64.b64encode(f.data.encode("utf-8") if isinstance(f.data, str) else bytes(f.data)).decode("ascii"),
            }
            for f in files
        ]
    }


def _answer_of(result: Any) -> dict[str, Any] | None:
    if isinstance(result, str):
        return {"text": result}
    if isinstance(result, Text):
        return {"text": result.text, **_artifacts(result.files)}
    if isinstance(result, Json):
        return {"json": result.value, **_artifacts(result.files)}
    if isinstance(result, Content):
        return {"content": list(result.blocks), **_artifacts(result.files)}
    if isinstance(result, (dict, list, tuple)):
        return {"json": result}
    return None


@dataclass
class _Work:
    """A verified delivery that runs code: a tool call or a confirm."""

    kind: str  # "tool.call" or "tool.confirm"
    tool: Tool
    args: dict[str, Any]
    ctx: CallContext
    key: str | None  # the dedupe key of a tool call
    answer_url: str | None = None  # a task's call: answered there, later


class Handler:
    """Verifies and answers Toolport's deliveries. Made by ``addon.handler(...)``.

    Serve it with ``serve(handler, port)``, mount ``handler.wsgi`` in a WSGI server or
    ``handler.asgi`` in an ASGI server, or call ``handler.handle(method, headers, body)``.
    """

    def __init__(
        self,
        addon: AddOn,
        *,
        secrets: Iterable[str] | Callable[[], Iterable[str]],
        tolerance_seconds: float = 300,
        max_body_bytes: int = 1_000_000,
        dedupe: bool = True,
        remember_at_most: int = 10_000,
        strict_ping: bool = False,
        on_error: OnError | None = None,
    ) -> None:
        self.addon = addon
        self._secrets = [secrets] if isinstance(secrets, str) else secrets if callable(secrets) else list(secrets)
        self.tolerance_seconds = tolerance_seconds
        self.max_body_bytes = max_body_bytes
        self.dedupe = dedupe
        self.remember_at_most = max(1, remember_at_most)
        self.strict_ping = strict_ping
        self._on_error = on_error or self._log_error
        self._keys: dict[str, bytes] = {}
        self._remembered: collections.OrderedDict[str, tuple[float, Future[bytes]]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        # The futures whose answer is already on its way to an answer URL (a redelivery sends nothing more).
        self._sending: weakref.WeakSet[Future[bytes]] = weakref.WeakSet()
        # Fail at start, not on the first delivery, when a static secret is malformed.
        if not callable(self._secrets):
            self._keys_now()

    # -- errors ---------------------------------------------------------------------------------

    def _log_error(self, err: BaseException, where: Where) -> None:
        call = f" (call {where.call_id})" if where.call_id else ""
        _log.error("[toolport add-on %s] %s failed%s:", self.addon.id, where.tool or "delivery", call, exc_info=(type(err), err, err.__traceback__))

    def _report(self, err: BaseException, where: Where) -> None:
        try:
            self._on_error(err, where)
        except Exception:  # an on_error that fails must not take the answer down with it
            _log.exception("[toolport add-on %s] on_error failed", self.addon.id)

    # -- verification ---------------------------------------------------------------------------

    def _keys_now(self) -> list[bytes]:
        listed = self._secrets() if callable(self._secrets) else self._secrets
        listed = [listed] if isinstance(listed, str) else list(listed)
        keys = []
        for s in listed:
            if not s:
                continue
            key = self._keys.get(s)
            if key is None:
                key = _secret_key(s)
                if len(self._keys) > 64:  # secrets change rarely; keep the cache small anyway
                    self._keys.clear()
                self._keys[s] = key
            keys.append(key)
        return keys

    def _signed_headers(self, method: str, header: Mapping[str, str]) -> tuple[str, int, str] | None:
        if method != "POST":
            return None
        wid, ts, sig = header.get("webhook-id"), header.get("webhook-timestamp"), header.get("webhook-signature")
        if not wid or not ts or not sig or len(wid) > 256 or len(sig) > 4096 or not _TIMESTAMP.fullmatch(ts):
            return None
        timestamp = int(ts)
        if abs(time.time() - timestamp) > self.tolerance_seconds:
            return None
        return wid, timestamp, sig

    def precheck(self, method: str, header: Mapping[str, str]) -> Answer | None:
        """The answer due before the body is read (401, or 413 by the declared length), or None to read it.

        ``header`` maps lower-case header names to values (several joined with ", ").
        """
        if self._signed_headers(method, header) is None:
            return UNAUTHORIZED
        declared = header.get("content-length")
        if declared is not None:
            try:
                length = float(declared.strip() or "0")
            except ValueError:
                length = math.nan
            if math.isfinite(length) and length > self.max_body_bytes:
                return TOO_LARGE
        return None

    def _verified(self, keys: list[bytes], wid: str, timestamp: int, body: bytes, header: str) -> bool:
        passed = [s[3:].encode("utf-8", "surrogateescape") for s in header.split(" ") if s.startswith("v1,")]
        if not passed:
            return False
        content = wid.encode("utf-8", "surrogateescape") + b"." + str(timestamp).encode("ascii") + b"." + body
        ok = False
        for key in keys:
            expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest())
            for p in passed:
                # No early exit: every signature is compared, in constant time.
                if hmac.compare_digest(p, expected):
                    ok = True
        return ok

    def _decide(self, method: str, header: Mapping[str, str], body: bytes) -> Answer | _Work:
        signed = self._signed_headers(method, header)
        if signed is None:
            return UNAUTHORIZED
        if len(body) > self.max_body_bytes:
            return TOO_LARGE
        wid, timestamp, sig = signed
        try:
            keys = self._keys_now()
        except Exception as err:
            self._report(err, Where())
            return UNAUTHORIZED
        verified = self._verified(keys, wid, timestamp, body, sig)
        try:
            d: Any = json.loads(body.decode("utf-8", "replace"), parse_constant=_reject_constant)
            parsed = True
        except (ValueError, RecursionError):
            d, parsed = None, False
        is_ping = isinstance(d, dict) and d.get("type") == "ping" and isinstance(d.get("challenge"), str)
        if not verified and not (is_ping and not self.strict_ping):
            return UNAUTHORIZED
        # As JSON.parse gives it to the TypeScript kit: an array is an object without a type.
        if not parsed or not isinstance(d, (dict, list)):
            return _json_answer(400, {"error": "The delivery is not a JSON object."})
        if is_ping:
            return _json_answer(200, {"challenge": d["challenge"]})
        kind = d.get("type") if isinstance(d, dict) else None
        if kind == "tools.list":
            return self._tools_list(d)
        if kind not in ("tool.call", "tool.confirm"):
            return _json_answer(400, {"error": "Unknown delivery type."})

        name = d.get("tool") if isinstance(d.get("tool"), str) else ""
        t = self.addon.tools.get(name)
        if t is None:
            return _json_answer(200, {"error": f'This add-on has no tool named "{_utf16_prefix(name, 64)}".'})
        value, problems = check_arguments(t.arguments, d.get("arguments"))
        if problems:
            return _json_answer(200, {"error": " ".join(problems)})
        # Only the providers this tool lists, even if the body carried more.
        accounts, problem = accounts_from(t.accounts, d.get("accounts"))
        ctx = self._context_of(d, wid, accounts)
        if not ctx.user_id:
            return _json_answer(400, {"error": "The delivery names no user."})
        if kind == "tool.confirm":
            # A confirm may come without them; a call never runs without every one.
            return _Work(kind, t, value, ctx, None)
        if problem is not None:
            # Toolport does not send such a call: the registered manifest and this code disagree.
            # Say so where the developer looks, and fail the call (the delivery log shows addon_failed).
            declared = self.addon.accounts.get(problem.provider)
            sentence = accounts_problem_sentence(problem, declared.title if declared else problem.provider)
            self._report(LookupError(sentence), Where(t.name, ctx.call_id))
            return _json_answer(200, {"error": sentence, "failed": True})
        if t.require_approval and ctx.approval is None:
            return _json_answer(200, {"error": NOT_APPROVED})
        key = "\u0000".join([wid, ctx.call_id, ctx.user_id, name]) if self.dedupe else None
        answer_url = _field(d.get("call"), "answerUrl")
        if isinstance(answer_url, str) and answer_url.startswith(("http://", "https://")):
            where = Where(t.name, ctx.call_id)
            ctx = dataclasses.replace(ctx, _send_later=lambda payload: self._send_later(answer_url, payload, where))
            return _Work(kind, t, value, ctx, key, answer_url)
        return _Work(kind, t, value, ctx, key)

    def _context_of(self, d: dict[str, Any], wid: str, accounts: Mapping[str, Any]) -> CallContext:
        call = d.get("call")
        # A task's call may run until its answer is due (answered at its answer URL).
        later = isinstance(_field(call, "answerUrl"), str) and _field(call, "answerBy") is not None
        deadline = _parse_instant(_field(call, "answerBy" if later else "deadline"))
        now = datetime.now(timezone.utc)
        if deadline is None:
            deadline = now + timedelta(seconds=30)
        attempt = _field(call, "attempt")
        call_id = _field(call, "id")
        user_id = _field(d.get("user"), "id")
        app = d.get("app")
        return CallContext(
            user_id="" if user_id is None else _js_string_of(user_id),
            call_id=wid if call_id is None else _js_string_of(call_id),
            attempt=attempt if isinstance(attempt, (int, float)) and not isinstance(attempt, bool) else 1,
            deadline=deadline,
            app=App(
                name="" if _field(app, "name") is None else _js_string_of(_field(app, "name")),
                client_id="" if _field(app, "clientId") is None else _js_string_of(_field(app, "clientId")),
            ),
            webhook_id=wid,
            session=session if isinstance(session := _field(call, "session"), str) else None,
            approval=_receipt_of(d),
            settings=settings_from(self.addon.settings, d.get("settings")),
            accounts=accounts,
            _deadline_monotonic=time.monotonic() + (deadline - now).total_seconds(),
        )

    # -- running tools --------------------------------------------------------------------------

    def _shape(self, work: _Work, outcome: Any, err: BaseException | None) -> bytes:
        """The JSON body of a finished call or confirm; never raises."""
        where = Where(work.tool.name, work.ctx.call_id)
        if work.kind == "tool.confirm":
            if err is not None:
                if is_addon_error(err):
                    return to_json({"error": str(err)}).encode("utf-8")
                self._report(err, where)
                return _FAILED
            c = outcome.to_dict() if isinstance(outcome, Confirm) else outcome
            if c is not None and not isinstance(c, dict):
                self._report(TypeError("a confirm handler must return a Confirm, a dict or None"), where)
                return _FAILED
            try:
                return to_json({"confirm": c}).encode("utf-8")
            except (TypeError, ValueError, RecursionError) as bad:
                self._report(bad, where)
                return _FAILED
        if err is not None:
            if is_addon_error(err):
                return to_json({"error": str(err)}).encode("utf-8")
            self._report(err, where)
            # `failed`: Toolport's delivery log then shows the add-on's code failing, not a refusal.
            return _FAILED
        answer = _answer_of(outcome)
        if answer is None:
            self._report(TypeError(f"a tool must return a str, a dict, a list, Json(...) or Content(...), not {type(outcome).__name__}"), where)
            return _FAILED
        try:
            body = to_json(answer).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as bad:
            self._report(bad, where)
            return _FAILED
        if len(body) > RESULT_LIMIT_BYTES:
            self._report(ValueError(f"the result is {len(body)} bytes; Toolport refuses results over 64 KB"), where)
        return body

    def _thread_run(self, work: _Work, future: Future[bytes]) -> None:
        fn = work.tool.run if work.kind == "tool.call" else work.tool.confirm_handler
        try:
            assert fn is not None
            outcome = fn(work.args, work.ctx)
            if inspect.isawaitable(outcome):
                outcome = asyncio.run(_awaited(outcome))
            future.set_result(self._shape(work, outcome, None))
        except BaseException as err:  # noqa: BLE001 - whatever a tool raises is its answer
            future.set_result(self._shape(work, None, err))

    async def _task_run(self, work: _Work, future: Future[bytes]) -> None:
        fn = work.tool.run if work.kind == "tool.call" else work.tool.confirm_handler
        try:
            assert fn is not None
            outcome = await fn(work.args, work.ctx)
            future.set_result(self._shape(work, outcome, None))
        except BaseException as err:
            future.set_result(self._shape(work, None, err))
            if isinstance(err, asyncio.CancelledError):
                raise

    def _start(self, work: _Work, loop: asyncio.AbstractEventLoop | None) -> Future[bytes]:
        fn = work.tool.run if work.kind == "tool.call" else work.tool.confirm_handler
        future: Future[bytes] = Future()
        if loop is not None and inspect.iscoroutinefunction(fn):
            task = loop.create_task(self._task_run(work, future))
            self._tasks.add(task)  # the loop keeps only a weak reference to a task
            task.add_done_callback(self._tasks.discard)
        else:
            # A daemon thread, not a pool: a tool that never returns holds one thread, never the
            # server, and never keeps the process from exiting.
            threading.Thread(target=self._thread_run, args=(work, future), name=f"toolport-{work.tool.name}", daemon=True).start()
        return future

    def _future_for(self, work: _Work, loop: asyncio.AbstractEventLoop | None) -> Future[bytes]:
        if work.kind == "tool.confirm" and work.tool.confirm_handler is None:
            # Only reached when the registered manifest says confirm but this code has no handler:
            # keep the approval rather than skip it.
            fallback = {"message": f"Run “{work.tool.title}”?", "style": "destructive" if work.tool.destructive else "default"}
            done: Future[bytes] = Future()
            done.set_result(to_json({"confirm": fallback}).encode("utf-8"))
            return done
        if work.key is None:
            return self._start(work, loop)
        with self._lock:
            now = time.monotonic()
            hit = self._remembered.get(work.key)
            if hit is not None and hit[0] > now:
                return hit[1]
            # Oldest first, and every entry lives equally long: the expired ones are at the front.
            while self._remembered:
                first_key, (expires, _) = next(iter(self._remembered.items()))
                if expires > now and len(self._remembered) < self.remember_at_most:
                    break
                del self._remembered[first_key]
            future = self._start(work, loop)
            self._remembered[work.key] = (now + max(self.tolerance_seconds, 60), future)
            return future

    def _accept(self, work: _Work, loop: asyncio.AbstractEventLoop | None) -> Answer:
        """A task's call: taken now (202), its answer sent to its answer URL when the tool returns.

        A retried delivery gets the same future back, and is taken again without a second send.
        """
        future = self._future_for(work, loop)
        with self._lock:
            first = future not in self._sending
            self._sending.add(future)
        if first:
            answer_url = work.answer_url
            assert answer_url is not None
            where = Where(work.tool.name, work.ctx.call_id)
            future.add_done_callback(
                lambda f: threading.Thread(
                    target=self._send_later, args=(answer_url, json.loads(f.result()), where), name="toolport-answer", daemon=True
                ).start()
            )
        return _json_answer(202, {"accepted": True})

    def _send_later(self, url: str, payload: dict[str, Any], where: Where) -> bool:
        """POSTs to a task's answer URL, signed like the deliveries (the first secret; the webhook-id
        names the call); retried on a
        network error, 408, 429 or a 5xx. 409 and 410 (answered already, or the call ended) end it quietly."""
        body = to_json(payload).encode("utf-8")
        for attempt in range(1, _LATER_ATTEMPTS + 1):
            wid = f"{where.call_id}.{uuid.uuid4().hex}"
            ts = int(time.time())
            content = wid.encode("ascii") + b"." + str(ts).encode("ascii") + b"." + body
            signature = base64.b64encode(hmac.new(self._keys_now()[0], content, hashlib.sha256).digest()).decode("ascii")
            request = urllib.request.Request(
                url,
                data=body,
                method="POST",
                headers={"content-type": "application/json", "webhook-id": wid, "webhook-timestamp": str(ts), "webhook-signature": f"v1,{signature}"},
            )
            try:
                with urllib.request.urlopen(request, timeout=10):
                    return True
            except urllib.error.HTTPError as err:
                if err.code not in (408, 429) and err.code < 500:
                    if err.code not in (409, 410):
                        self._report(RuntimeError(f"Toolport refused the answer: HTTP {err.code} {err.read()[:300].decode('utf-8', 'replace')}"), where)
                    return False
                if attempt == _LATER_ATTEMPTS:
                    self._report(RuntimeError(f"Toolport did not take the answer: HTTP {err.code}"), where)
            except (urllib.error.URLError, OSError) as err:
                if attempt == _LATER_ATTEMPTS:
                    self._report(err, where)
            if attempt < _LATER_ATTEMPTS:
                time.sleep(min(8.0, 0.25 * 2**attempt))
        return False

    def _late(self, work: _Work) -> Answer:
        self._report(
            TimeoutError(f"the tool was still running at the call's deadline ({work.ctx.deadline.isoformat()}); Toolport has stopped waiting for it"),
            Where(work.tool.name, work.ctx.call_id),
        )
        return Answer(200, "application/json", _FAILED)

    def respond(self, method: str, header: Mapping[str, str], body: bytes) -> Answer:
        """Answers a delivery whose body has been read, waiting for its tool until the call's deadline."""
        decided = self._decide(method, header, body)
        if isinstance(decided, Answer):
            return decided
        if decided.answer_url is not None:
            return self._accept(decided, None)
        future = self._future_for(decided, None)
        try:
            return Answer(200, "application/json", future.result(timeout=_wait_for(decided.ctx)))
        except FutureTimeout:
            return self._late(decided)

    async def respond_async(self, method: str, header: Mapping[str, str], body: bytes) -> Answer:
        """respond() for an event loop: async tools run on it, other tools in a thread."""
        decided = self._decide(method, header, body)
        if isinstance(decided, Answer):
            return decided
        loop = asyncio.get_running_loop()
        if decided.answer_url is not None:
            return self._accept(decided, loop)
        future = self._future_for(decided, loop)
        waiter = loop.create_future()

        def relay(f: Future[bytes]) -> None:
            def settle() -> None:
                if not waiter.done():
                    waiter.set_result(f.result())

            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the loop has closed: nobody is waiting any more
                pass

        future.add_done_callback(relay)
        try:
            return Answer(200, "application/json", await asyncio.wait_for(waiter, _wait_for(decided.ctx)))
        except asyncio.TimeoutError:
            return self._late(decided)

    def _tools_list(self, d: dict[str, Any]) -> Answer:
        """Which tools the person is offered: every one without ``tools_for``; a failure keeps their last list at Toolport."""
        listed = d.get("tools")
        tools = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
        fn = self.addon.tools_for_handler
        if fn is None:
            return _json_answer(200, {"tools": tools})
        user = d.get("user") if isinstance(d.get("user"), dict) else {}
        settings = d.get("settings") if isinstance(d.get("settings"), dict) else {}
        accounts = [n for n in d.get("accounts") or [] if isinstance(n, str)] if isinstance(d.get("accounts"), list) else []
        who = ToolsFor(user_id=user.get("id") if isinstance(user.get("id"), str) else "", settings=settings, accounts=accounts, tools=tools)
        try:
            return _json_answer(200, {"tools": [str(n) for n in fn(who)]})
        except Exception as err:  # noqa: BLE001 - the developer's code; reported, never shown
            self._report(err, Where())
            return _json_answer(500, {"error": "tools_for failed."})

    def handle(self, method: str, headers: Mapping[str, str], body: bytes) -> Answer:
        """The whole exchange for a server of your own: any-case header names, the whole body read."""
        header = {k.lower(): v for k, v in headers.items()}
        early = self.precheck(method, header)
        return early if early is not None else self.respond(method, header, body)

    # -- servers --------------------------------------------------------------------------------

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        """This handler as a WSGI application (PEP 3333)."""
        from .servers import wsgi_app

        return wsgi_app(self, environ, start_response)

    async def asgi(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        """This handler as an ASGI 3 application (http and lifespan)."""
        from .servers import asgi_app

        await asgi_app(self, scope, receive, send)

    def serve(self, port: int = 8787, host: str | None = None) -> AddOnServer:
        """``serve(self, port, host)``: listening on http.server, serving in a background thread."""
        from .servers import serve

        return serve(self, port, host)


def _wait_for(ctx: CallContext) -> float:
    return min(ctx.seconds_left() + DEADLINE_GRACE_SECONDS, MAX_WAIT_SECONDS)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable
