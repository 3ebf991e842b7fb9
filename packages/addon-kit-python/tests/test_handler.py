import hashlib
import json
import threading
import time
import unittest
import uuid

import support
from support import delivery, encode, new_secret, sign, signed_headers

from toolport_addon_kit import GENERIC_FAILURE, NOT_APPROVED, AddOn, AddOnError, Confirm, Content, File, Json, Text, boolean, choice, number, text

SECRET_A = new_secret()
SECRET_B = new_secret()


class Recorder:
    """on_error, recording what the kit reports instead of logging it."""

    def __init__(self):
        self.errors = []

    def __call__(self, err, where):
        self.errors.append((err, where))


def build_addon(runs: list):
    addon = AddOn(id="kit-test", name="Kit test", description="Exercises the kit.", webhook="https://kit.example.com/hook")

    @addon.tool(
        title="Echo",
        summary="Returns the text it was given.",
        read_only=True,
        arguments={
            "text": text(max_length=20, summary="What to echo."),
            "n": number(min=1, max=5, whole=True, summary="How many times.").optional(),
            "loud": boolean(summary="Upper case?", required=False),
            "colour": choice(["red", "blue"], summary="A colour.", required=False),
        },
    )
    def echo(args, ctx):
        runs.append(ctx.call_id)
        out = args["text"] * args.get("n", 1)
        return f"{out.upper() if args.get('loud') else out}{' in ' + args['colour'] if 'colour' in args else ''} for {ctx.user_id}"

    @addon.tool(title="As JSON", summary="Returns the call context as JSON.")
    def as_json(args, ctx):
        return {"userId": ctx.user_id, "callId": ctx.call_id, "attempt": ctx.attempt, "app": {"name": ctx.app.name, "clientId": ctx.app.client_id}, "webhookId": ctx.webhook_id, "deadline": support.iso(ctx.deadline), "left": ctx.seconds_left() > 0, "session": ctx.session}

    @addon.tool(title="A list", summary="Returns a list.")
    def as_list(args, ctx):
        return [1, "two", None]

    @addon.tool(title="A number", summary="Returns a number as JSON.")
    def as_number(args, ctx):
        return Json(4.5)

    @addon.tool(title="As content", summary="Returns MCP content blocks.")
    def as_content(args, ctx):
        return Content([{"type": "text", "text": "one"}, {"type": "text", "text": "two"}])

    @addon.tool(title="With files", summary="Returns text and two files.")
    def with_files(args, ctx):
        return Text("The report.", files=[File("report.csv", "text/csv", "a,b\n1,2\n"), File("dot.bin", "application/octet-stream", b"\x00\x01")])

    @addon.tool(title="Json with a file", summary="Returns JSON and a file.")
    def json_with_file(args, ctx):
        return Json({"rows": 1}, files=[File("r.json", "application/json", '{"a": 1}')])

    @addon.tool(title="Refuse", summary="Always refuses.")
    def refuse(args, ctx):
        raise AddOnError("No, and here is why.")

    @addon.tool(title="Crash", summary="Always crashes.")
    def crash(args, ctx):
        raise RuntimeError("db password is hunter2")

    @addon.tool(title="Not JSON", summary="Returns something JSON cannot hold.")
    def not_json(args, ctx):
        return {"when": object()}

    @addon.tool(title="NaN", summary="Returns a float JSON cannot hold.")
    def not_finite(args, ctx):
        return {"x": float("nan")}

    @addon.tool(title="Nothing", summary="Forgets to return.")
    def nothing(args, ctx):
        pass

    @addon.tool(title="Huge", summary="Returns more than 64 KB.")
    def huge(args, ctx):
        return "x" * 70_000

    @addon.tool(title="Remove", summary="Removes a thing.", destructive=True, arguments={"id": text(max_length=10, summary="Which.")})
    def remove(args, ctx):
        return f"removed {args['id']}"

    @remove.confirm
    def describe_remove(args, ctx):
        if args["id"] == "none":
            return None
        if args["id"] == "dict":
            return {"message": "As a dict.", "style": "default"}
        if args["id"] == "refuse":
            raise AddOnError("Cannot describe that.")
        if args["id"] == "crash":
            raise KeyError("secret detail")
        return Confirm(message=f"Remove {args['id']}?", info=[("Id", args["id"])], style="destructive", image=f"https://pictures.example/{args['id']}.png")

    @addon.tool(title="Plain", summary="Destructive without a confirm handler.", destructive=True)
    def no_confirm(args, ctx):
        return "done"

    @addon.tool(title="Wipe", summary="Wipes and returns the approval.", destructive=True, require_approval=True, arguments={"x": number(summary="A number.")})
    def wipe(args, ctx):
        return {"approval": ctx.approval.id, "channel": ctx.approval.channel, "x": args["x"]}

    @addon.tool(title="Receipt", summary="Returns whether a receipt matched.", destructive=True, arguments={"x": number(summary="A number."), "t": text(max_length=50, summary="Text.", required=False)})
    def receipt(args, ctx):
        return {"approved": ctx.approval is not None}

    return addon


def receipt_for(args_text: str) -> dict:
    return {"id": "apr_1", "decidedAt": "2026-01-01T10:00:12.345Z", "channel": "dashboard", "argumentsHash": "sha256:" + hashlib.sha256(args_text.encode()).hexdigest()}


class HandlerTest(unittest.TestCase):
    def setUp(self):
        self.runs = []
        self.errors = Recorder()
        self.secrets = [SECRET_A]
        self.addon = build_addon(self.runs)
        self.h = self.addon.handler(secrets=lambda: self.secrets, on_error=self.errors)

    def send(self, body, secret=SECRET_A, webhook_id=None, at=None, tamper=None, headers=None, method="POST", handler=None):
        raw = encode(body)
        h = signed_headers(raw, secret, webhook_id, at)
        for k, v in (headers or {}).items():
            if v is None:
                h.pop(k, None)
            else:
                h[k] = v
        answer = (handler or self.h).handle(method, h, tamper(raw) if tamper else raw)
        parsed = json.loads(answer.body) if answer.content_type == "application/json" else None
        return answer.status, parsed, answer.body


class ToolsList(HandlerTest):
    def listing(self, **extra):
        return {"type": "tools.list", "addon": "kit-test", "user": {"id": "usr_pseudo1"}, "call": {"id": "call_l1", "deadline": "2026-01-01T00:00:03Z"}, "tools": ["echo", "remove"], "accounts": [], **extra}

    def test_without_tools_for_every_tool_is_offered(self):
        self.assertEqual(self.send(self.listing())[:2], (200, {"tools": ["echo", "remove"]}))

    def test_tools_for_chooses_by_the_person_and_its_failure_is_reported(self):
        addon = AddOn(id="kit-test", name="Kit", description="x", webhook="https://kit.example.com/hook")
        addon.tool(name="echo", title="Echo", summary="Echoes.")(lambda a, c: "x")
        addon.tool(name="remove", title="Remove", summary="Removes.", destructive=True)(lambda a, c: "x")
        seen = []

        @addon.tools_for
        def offered(who):
            seen.append(who)
            if who.settings.get("plan") == "broken":
                raise RuntimeError("plan lookup failed")
            return [n for n in who.tools if who.settings.get("plan") == "pro" or n != "remove"]

        self.assertIs(addon.manifest()["toolsPerPerson"], True)
        self.assertEqual(list(addon.manifest())[:5], ["id", "name", "description", "webhook", "toolsPerPerson"])
        h = addon.handler(secrets=[SECRET_A], on_error=self.errors)
        self.assertEqual(self.send(self.listing(settings={"plan": "free"}), handler=h)[:2], (200, {"tools": ["echo"]}))
        self.assertEqual(self.send(self.listing(settings={"plan": "pro"}, accounts=["github"]), handler=h)[:2], (200, {"tools": ["echo", "remove"]}))
        self.assertEqual((seen[-1].user_id, seen[-1].accounts), ("usr_pseudo1", ["github"]))
        self.assertEqual(self.send(self.listing(settings={"plan": "broken"}), handler=h)[0], 500)
        self.assertIn("plan lookup failed", str(self.errors.errors[-1][0]))


class Ping(HandlerTest):
    def test_echoes_a_ping_challenge(self):
        self.assertEqual(self.send({"type": "ping", "challenge": "abc123"})[:2], (200, {"challenge": "abc123"}))

    def test_echoes_a_registration_ping_signed_with_an_unknown_secret_but_only_with_fresh_headers(self):
        self.assertEqual(self.send({"type": "ping", "challenge": "c1"}, secret=new_secret())[:2], (200, {"challenge": "c1"}))
        self.assertEqual(self.send({"type": "ping", "challenge": "c2"}, headers={"webhook-signature": None})[0], 401)
        self.assertEqual(self.send({"type": "ping", "challenge": "c3"}, at=time.time() - 600)[0], 401)
        strict = self.addon.handler(secrets=[SECRET_A], strict_ping=True)
        self.assertEqual(self.send({"type": "ping", "challenge": "c4"}, secret=new_secret(), handler=strict)[0], 401)
        self.assertEqual(self.send({"type": "ping", "challenge": "c4"}, handler=strict)[:2], (200, {"challenge": "c4"}))

    def test_a_ping_runs_nothing_even_when_it_names_a_tool(self):
        status, body, _ = self.send({"type": "ping", "challenge": "c", "tool": "echo", "arguments": {"text": "x"}}, secret=new_secret())
        self.assertEqual((status, body), (200, {"challenge": "c"}))
        self.assertEqual(self.runs, [])


class Signatures(HandlerTest):
    def test_accepts_a_signature_computed_independently(self):
        self.assertEqual(self.send(delivery("echo", {"text": "hi"}))[:2], (200, {"text": "hi for usr_pseudo1"}))

    def test_refuses_unsigned_badly_signed_tampered_stale_and_future_deliveries_with_a_bare_401(self):
        d = delivery("echo", {"text": "hi"})
        cases = {
            "unknown secret": self.send(d, secret=new_secret()),
            "tampered body": self.send(d, tamper=lambda raw: raw.replace(b'"hi"', b'"ho"')),
            "tampered id": self.send(d, headers={"webhook-id": "msg_other"}),
            "stale": self.send(d, at=time.time() - 360),  # a minute past the tolerance: whole-second headers cannot bring it back
            "future": self.send(d, at=time.time() + 360),
            "no signature": self.send(d, headers={"webhook-signature": None}),
            "no id": self.send(d, headers={"webhook-id": None}),
            "no timestamp": self.send(d, headers={"webhook-timestamp": None}),
            "timestamp not a number": self.send(d, headers={"webhook-timestamp": "soon"}),
            "timestamp with a newline": self.send(d, headers={"webhook-timestamp": f"{int(time.time())}\n"}),
            "another version": self.send(d, headers={"webhook-signature": "v2,abc"}),
            "GET": self.send(d, method="GET"),
        }
        for name, (status, _, raw) in cases.items():
            with self.subTest(name):
                self.assertEqual(status, 401)
                self.assertEqual(raw, b"Unauthorized", "says nothing more")
        self.assertEqual(self.runs, [], "nothing ran")
        self.assertEqual(self.send(d, at=time.time() - 250)[0], 200, "within the tolerance, in the past")
        self.assertEqual(self.send(d, at=time.time() + 250)[0], 200, "and in the future")

    def test_accepts_any_of_several_signatures_and_any_of_several_secrets(self):
        d = lambda: delivery("echo", {"text": "rot"})  # noqa: E731
        # Toolport signs with the new and the old secret; the add-on still has only the old one.
        self.assertEqual(self.send(d(), secret=[new_secret(), SECRET_A])[0], 200)
        self.secrets = [SECRET_B, SECRET_A]  # read on every request: no restart
        self.assertEqual(self.send(d(), secret=SECRET_A)[0], 200)
        self.assertEqual(self.send(d(), secret=SECRET_B)[0], 200)
        self.assertEqual(self.send(d(), secret=new_secret())[0], 401)
        self.secrets = [SECRET_B]
        self.assertEqual(self.send(d(), secret=SECRET_A)[0], 401, "a removed secret is refused")

    def test_a_malformed_secret_fails_at_start_or_is_reported_and_refused(self):
        with self.assertRaisesRegex(ValueError, "whsec_ followed by base64"):
            self.addon.handler(secrets=["whsec_not base64!"])
        self.secrets = ["whsec_@@@"]
        self.assertEqual(self.send(delivery("echo", {"text": "x"}))[0], 401)
        self.assertEqual(len(self.errors.errors), 1)
        self.assertNotIn("@@@", str(self.errors.errors[0][0]), "the error does not quote the secret")

    def test_refuses_an_oversized_body_with_413_before_verifying_it(self):
        small = self.addon.handler(secrets=[SECRET_A], max_body_bytes=100)
        ts = str(int(time.time()))
        unsigned = {"webhook-id": "a", "webhook-timestamp": ts, "webhook-signature": "v1,x"}
        self.assertEqual(small.handle("POST", {**unsigned, "content-length": "500"}, b"x" * 500).status, 413)
        self.assertEqual(small.handle("POST", unsigned, b"x" * 500).status, 413, "without a declared length too")
        self.assertEqual(small.handle("POST", {**unsigned, "webhook-timestamp": "1"}, b"x" * 500).status, 401, "stale first: 401")

    def test_a_signed_body_that_is_not_a_delivery_gets_a_sentence(self):
        self.assertEqual(self.send(b"not json")[:2], (400, {"error": "The delivery is not a JSON object."}))
        self.assertEqual(self.send(b'{"x": NaN}')[:2], (400, {"error": "The delivery is not a JSON object."}))
        self.assertEqual(self.send(b"[1]")[:2], (400, {"error": "Unknown delivery type."}))
        self.assertEqual(self.send({"type": "tool.other"})[:2], (400, {"error": "Unknown delivery type."}))
        self.assertEqual(self.send({**delivery("echo", {"text": "x"}), "user": {}})[:2], (400, {"error": "The delivery names no user."}))


class Answers(HandlerTest):
    def test_a_string_is_text_with_the_arguments_and_the_user(self):
        self.assertEqual(self.send(delivery("echo", {"text": "hi", "n": 2, "loud": True, "colour": "red"}))[1], {"text": "HIHI in red for usr_pseudo1"})

    def test_a_dict_or_a_list_is_json_and_content_blocks_are_content(self):
        d = delivery("as_json")
        status, body, _ = self.send(d, webhook_id="msg_ctx")
        self.assertEqual(status, 200)
        self.assertEqual(body, {"json": {"userId": "usr_pseudo1", "callId": d["call"]["id"], "attempt": 1, "app": {"name": "Claude", "clientId": "cli_1"}, "webhookId": "msg_ctx", "deadline": d["call"]["deadline"], "left": True, "session": None}})
        in_session = delivery("as_json")
        in_session["call"]["session"] = "ses_abc"
        self.assertEqual(self.send(in_session)[1]["json"]["session"], "ses_abc")
        self.assertEqual(self.send(delivery("as_list"))[1], {"json": [1, "two", None]})
        self.assertEqual(self.send(delivery("as_number"))[1], {"json": 4.5})
        self.assertEqual(self.send(delivery("as_content"))[1], {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]})

    def test_files_ride_the_answer_as_base64_artifacts(self):
        self.assertEqual(
            self.send(delivery("with_files"))[1],
            {
                "text": "The report.",
                "artifacts": [
                    {"name": "report.csv", "mediaType": "text/csv", "data": "YSxiCjEsMgo="},
                    {"name": "dot.bin", "mediaType": "application/octet-stream", "data": "AAE="},
                ],
            },
        )
        self.assertEqual(
            self.send(delivery("json_with_file"))[1],
            {"json": {"rows": 1}, "artifacts": [{"name": "r.json", "mediaType": "application/json", "data": "eyJhIjogMX0="}]},
        )

    def test_add_on_error_is_its_sentence_and_anything_else_is_logged_and_hidden(self):
        self.assertEqual(self.send(delivery("refuse"))[1], {"error": "No, and here is why."})
        self.assertEqual(self.errors.errors, [])
        status, body, raw = self.send(delivery("crash", call_id="call_crash"))
        self.assertEqual((status, body), (200, {"error": GENERIC_FAILURE, "failed": True}))
        self.assertNotIn(b"hunter2", raw)
        (err, where), = self.errors.errors
        self.assertIsInstance(err, RuntimeError)
        self.assertIn("hunter2", str(err))
        self.assertEqual((where.tool, where.call_id), ("crash", "call_crash"))

    def test_a_result_json_cannot_hold_is_a_logged_generic_failure(self):
        for tool, kind in (("not_json", TypeError), ("not_finite", ValueError), ("nothing", TypeError)):
            with self.subTest(tool):
                before = len(self.errors.errors)
                self.assertEqual(self.send(delivery(tool))[1], {"error": GENERIC_FAILURE, "failed": True})
                self.assertEqual(len(self.errors.errors), before + 1)
                self.assertIsInstance(self.errors.errors[-1][0], kind)

    def test_a_result_over_64_kb_is_logged_and_still_sent(self):
        status, body, _ = self.send(delivery("huge"))
        self.assertEqual((status, len(body["text"])), (200, 70_000))
        self.assertRegex(str(self.errors.errors[-1][0]), r"the result is \d+ bytes; Toolport refuses results over 64 KB")

    def test_an_unknown_tool_and_arguments_the_code_does_not_accept_get_a_sentence(self):
        self.assertEqual(self.send(delivery("nope"))[1], {"error": 'This add-on has no tool named "nope".'})
        self.assertEqual(self.send(delivery("x" * 100))[1]["error"], f'This add-on has no tool named "{"x" * 64}".')
        error = self.send(delivery("echo", {"text": "x" * 21, "n": 9, "extra": 1}))[1]["error"]
        self.assertEqual(error, '"extra" is not an argument of this tool. "text" must be at most 20 characters. "n" must be at most 5.')
        self.assertEqual(self.send(delivery("echo", {}))[1], {"error": '"text" is required.'})
        self.assertEqual(self.runs, [])


class Confirms(HandlerTest):
    def test_dispatches_tool_confirm_to_the_confirm_handler(self):
        self.assertEqual(self.send(delivery("remove", {"id": "a1"}, "tool.confirm"))[1], {"confirm": {"message": "Remove a1?", "info": [{"name": "Id", "value": "a1"}], "style": "destructive", "image": "https://pictures.example/a1.png"}})
        self.assertEqual(self.send(delivery("remove", {"id": "dict"}, "tool.confirm"))[1], {"confirm": {"message": "As a dict.", "style": "default"}})
        self.assertEqual(self.send(delivery("remove", {"id": "none"}, "tool.confirm"))[1], {"confirm": None})

    def test_a_tool_without_a_handler_keeps_the_approval(self):
        body = self.send(delivery("no_confirm", {}, "tool.confirm"))[1]
        self.assertEqual(body, {"confirm": {"message": "Run “Plain”?", "style": "destructive"}})

    def test_a_confirm_handler_that_refuses_or_fails(self):
        self.assertEqual(self.send(delivery("remove", {"id": "refuse"}, "tool.confirm"))[1], {"error": "Cannot describe that."})
        self.assertEqual(self.send(delivery("remove", {"id": "crash"}, "tool.confirm"))[1], {"error": GENERIC_FAILURE, "failed": True})
        self.assertIsInstance(self.errors.errors[-1][0], KeyError)


class Retries(HandlerTest):
    def test_a_retried_call_runs_once_and_gets_the_remembered_answer(self):
        d = delivery("echo", {"text": "once"})
        first = self.send(d, webhook_id="msg_same")
        retry = self.send({**d, "call": {**d["call"], "attempt": 2}}, webhook_id="msg_same")
        self.assertEqual(retry[2], first[2])
        self.assertEqual(len(self.runs), 1)
        self.send(d, webhook_id="msg_other")
        self.assertEqual(len(self.runs), 2, "another webhook-id runs")

    def test_remembers_at_most_remember_at_most_answers_the_oldest_forgotten_first(self):
        ran = []
        addon = AddOn(id="counted", name="c", description="c", webhook="https://c")
        addon.tool(name="count", title="Count", summary="Counts its runs.")(lambda args, ctx: ran.append(1) or str(len(ran)))
        h = addon.handler(secrets=[SECRET_A], remember_at_most=3)
        call = lambda wid: self.send(delivery("count", call_id=f"call_{wid}"), webhook_id=wid, handler=h)[1]["text"]  # noqa: E731
        self.assertEqual([call("a"), call("b"), call("c"), call("d")], ["1", "2", "3", "4"])
        self.assertEqual(call("d"), "4", "the newest is remembered")
        self.assertEqual(call("b"), "2", "so is the one before")
        self.assertEqual(call("a"), "5", "the oldest was forgotten to make room, so it runs again")
        self.assertEqual(len(ran), 5)

    def test_without_dedupe_a_retry_runs_again(self):
        h = self.addon.handler(secrets=[SECRET_A], dedupe=False)
        d = delivery("echo", {"text": "twice"})
        self.send(d, webhook_id="msg_twice", handler=h)
        self.send(d, webhook_id="msg_twice", handler=h)
        self.assertEqual(len(self.runs), 2)


class Receipts(HandlerTest):
    def test_require_approval_refuses_a_call_without_a_matching_receipt(self):
        self.assertEqual(self.send(delivery("wipe", {"x": 1}))[1], {"error": NOT_APPROVED})
        wrong = delivery("wipe", {"x": 1}, approval=receipt_for('{"x":2}'))
        self.assertEqual(self.send(wrong)[1], {"error": NOT_APPROVED}, "a receipt for other arguments (a replay)")
        ok = delivery("wipe", {"x": 1}, approval=receipt_for('{"x":1}'))
        self.assertEqual(self.send(ok)[1], {"json": {"approval": "apr_1", "channel": "dashboard", "x": 1}})

    def test_the_receipt_hash_is_over_javascripts_text_of_the_arguments(self):
        # The body carries the arguments' text byte for byte, as Toolport writes it (JSON.stringify).
        for args_text in ('{"x":1e-7}', '{"x":1e+21}', '{"x":0.30000000000000004,"t":"é 😀 \\u0000 \\ud800"}', '{"x":100}'):
            with self.subTest(args_text):
                d = delivery("receipt", None, approval=receipt_for(args_text))
                raw = encode(d).replace(b'"arguments":{}', b'"arguments":' + args_text.encode())
                self.assertEqual(self.send(raw)[1], {"json": {"approved": True}})

    def test_a_malformed_receipt_is_no_receipt(self):
        for approval in ({**receipt_for('{"x":1}'), "decidedAt": "yesterday"}, {**receipt_for('{"x":1}'), "id": 7}, "apr_1", [1]):
            with self.subTest(approval=approval):
                self.assertEqual(self.send(delivery("receipt", {"x": 1}, approval=approval))[1], {"json": {"approved": False}})


class Deadline(HandlerTest):
    def test_a_tool_past_the_deadline_gets_the_generic_failure_and_the_handler_keeps_serving(self):
        release, finished = threading.Event(), threading.Event()
        addon = AddOn(id="slow", name="s", description="s", webhook="https://s")

        @addon.tool(title="Slow", summary="Waits to be released and returns when.")
        def slow(args, ctx):
            release.wait(60)
            finished.set()
            return "released"

        @addon.tool(title="Deadline", summary="Returns the deadline it was given.")
        def deadline(args, ctx):
            return {"deadline": support.iso(ctx.deadline), "left": ctx.seconds_left()}

        h = addon.handler(secrets=[SECRET_A], on_error=self.errors)
        d = delivery("slow", deadline_in=0.2, call_id="call_slow")
        status, body, _ = self.send(d, webhook_id="msg_slow", handler=h)
        self.assertEqual((status, body), (200, {"error": GENERIC_FAILURE, "failed": True}))
        self.assertFalse(finished.is_set(), "the answer came while the tool was still running")
        err, where = self.errors.errors[-1]
        self.assertIsInstance(err, TimeoutError)
        self.assertEqual((where.tool, where.call_id), ("slow", "call_slow"))
        given = self.send(delivery("deadline", deadline_in=20), handler=h)[1]["json"]
        self.assertGreater(given["left"], 0, "other calls are served meanwhile, each with its deadline")
        release.set()
        finished.wait(10)
        retry = self.send({**d, "call": {**d["call"], "deadline": support.iso(support.datetime.now(support.timezone.utc) + support.timedelta(seconds=20))}}, webhook_id="msg_slow", handler=h)
        self.assertEqual(retry[1], {"text": "released"}, "the answer it finished with is remembered for a retry")

    def test_an_invalid_deadline_counts_as_30_seconds(self):
        d = delivery("as_json")
        d["call"]["deadline"] = "soon"
        left = self.send(d)[1]["json"]
        self.assertTrue(left["left"])



class AnswerLater(HandlerTest):
    """A task's call (a tool whose timeout_seconds is over 30): taken at once, answered at its URL."""

    def test_takes_the_call_then_sends_progress_and_the_answer_signed_and_runs_it_once(self):
        import http.server

        received = []
        got_answer = threading.Event()

        class Toolport(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                expected = sign(SECRET_A, self.headers["webhook-id"], int(self.headers["webhook-timestamp"]), body)
                named = self.headers["webhook-id"].startswith("call_long.")
                received.append((json.loads(body), self.headers["webhook-signature"] == expected and named))
                self.send_response(204)
                self.end_headers()
                if "progress" not in received[-1][0]:
                    got_answer.set()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Toolport)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        release = threading.Event()
        runs = []
        addon = AddOn(id="long", name="Long", description="Takes minutes.", webhook="https://long.example.com/hook")

        @addon.tool(title="Export", summary="Exports everything.", timeout_seconds=600)
        def export(args, ctx):
            runs.append(ctx.call_id)
            ctx.progress("Half way.")
            release.wait(10)
            return "Exported 42 notes."

        h = addon.handler(secrets=[SECRET_A], on_error=self.errors)
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/api/answers/call_long"
            d = delivery("export", call_id="call_long", deadline_in=600)
            d["call"]["answerUrl"] = url
            status, body, _ = self.send(d, handler=h, webhook_id="call_long")
            self.assertEqual((status, body), (202, {"accepted": True}))
            again = self.send(d, handler=h, webhook_id="call_long")
            self.assertEqual(again[0], 202, "a retried delivery is taken again")
            release.set()
            self.assertTrue(got_answer.wait(10), "the answer was sent")
            self.assertEqual(received, [({"progress": "Half way."}, True), ({"text": "Exported 42 notes."}, True)])
            self.assertEqual(runs, ["call_long"], "the tool ran once")
            self.assertEqual(self.errors.errors, [])
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()
