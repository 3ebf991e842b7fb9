import asyncio
import http.client
import io
import json
import socket
import threading
import time
import unittest
import wsgiref.simple_server
import wsgiref.util

import support
from support import delivery, encode, new_secret, signed_headers

from toolport_addon_kit import GENERIC_FAILURE, AddOn, AddOnError, serve, text

SECRET = new_secret()


def build():
    addon = AddOn(id="srv", name="Server test", description="s", webhook="https://s")
    state = {"async_runs": 0, "release": None, "started": None, "gate": None}

    @addon.tool(title="Echo", summary="Returns the text.", arguments={"text": text(max_length=20, summary="t")})
    def echo(args, ctx):
        return f"{args['text']} for {ctx.user_id}"

    @addon.tool(title="Async echo", summary="Returns the text, asynchronously.", arguments={"text": text(max_length=20, summary="t")})
    async def async_echo(args, ctx):
        state["async_runs"] += 1
        await asyncio.sleep(0)
        if args["text"] == "refuse":
            raise AddOnError("Not that one.")
        return {"echo": args["text"], "loop": True}

    @addon.tool(title="Slow", summary="Waits until released.")
    def slow(args, ctx):
        state["started"].set()
        state["gate"].wait(60)
        return "released"

    @addon.tool(title="Async slow", summary="Waits until released.")
    async def async_slow(args, ctx):
        state["started"].set()
        await state["release"].wait()
        return "released"

    @addon.tool(title="Async crash", summary="Crashes.")
    async def async_crash(args, ctx):
        raise ValueError("boom")

    return addon, state


def call_body(tool, args=None, **kw):
    return encode(delivery(tool, args, **kw))


class HttpServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addon, cls.state = build()
        cls.errors = []
        cls.server = serve(cls.addon.handler(secrets=[SECRET], max_body_bytes=2000, on_error=lambda e, w: cls.errors.append(e)), 0, "127.0.0.1")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=20)

    def test_answers_on_any_path_and_keeps_the_connection_alive(self):
        c = self.conn()
        for i, path in enumerate(["/webhook", "/", "/other?x=1"]):
            body = call_body("echo", {"text": f"n{i}"})
            c.request("POST", path, body=body, headers=signed_headers(body, SECRET))
            res = c.getresponse()
            self.assertEqual((res.status, res.getheader("content-type")), (200, "application/json"))
            self.assertEqual(json.loads(res.read()), {"text": f"n{i} for usr_pseudo1"})
        c.close()

    def test_any_other_method_is_a_bare_401(self):
        for method in ("GET", "PUT", "DELETE", "BREW"):
            with self.subTest(method):
                c = self.conn()
                c.request(method, "/webhook")
                res = c.getresponse()
                self.assertEqual((res.status, res.read()), (401, b"Unauthorized"))
                c.close()

    def test_runs_async_tools_too(self):
        body = call_body("async_echo", {"text": "hey"})
        c = self.conn()
        c.request("POST", "/", body=body, headers=signed_headers(body, SECRET))
        self.assertEqual(json.loads(c.getresponse().read()), {"json": {"echo": "hey", "loop": True}})
        c.close()

    def test_refuses_a_declared_length_over_the_limit_before_reading_it_and_closes(self):
        c = self.conn()
        headers = {"webhook-id": "a", "webhook-timestamp": str(int(time.time())), "webhook-signature": "v1,x", "content-length": "5000"}
        c.putrequest("POST", "/")
        for k, v in headers.items():
            c.putheader(k, v)
        c.endheaders()
        res = c.getresponse()
        self.assertEqual((res.status, res.getheader("connection")), (413, "close"))
        self.assertEqual(json.loads(res.read()), {"error": "The delivery is too large."})
        c.close()

    def test_refuses_a_chunked_body_that_grows_past_the_limit_and_closes(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=20) as s:
            head = f"POST / HTTP/1.1\r\nHost: x\r\nwebhook-id: a\r\nwebhook-timestamp: {int(time.time())}\r\nwebhook-signature: v1,x\r\nTransfer-Encoding: chunked\r\n\r\n"
            s.sendall(head.encode() + b"".join(b"3e8\r\n" + b"x" * 1000 + b"\r\n" for _ in range(3)))
            reply = b""
            while chunk := s.recv(4096):  # the server closes: recv returns b"" at the end
                reply += chunk
        status_line, _, rest = reply.partition(b"\r\n")
        self.assertEqual(status_line.split()[:2], [b"HTTP/1.1", b"413"])
        self.assertIn(b"Connection: close", rest)

    def test_reads_a_chunked_body_within_the_limit(self):
        body = call_body("echo", {"text": "chunks"})
        headers = signed_headers(body, SECRET)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=20) as s:
            head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            half = len(body) // 2
            chunks = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (body[:half], body[half:])) + b"0\r\n\r\n"
            s.sendall(head.encode() + chunks)
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 OK"), reply[:100])
        self.assertEqual(json.loads(reply.partition(b"\r\n\r\n")[2]), {"text": "chunks for usr_pseudo1"})

    def test_a_client_that_hangs_up_does_not_take_the_server_down(self):
        self.state["started"], self.state["gate"] = threading.Event(), threading.Event()
        body = call_body("slow", deadline_in=0.1)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=20) as s:
            head = "POST / HTTP/1.1\r\nHost: x\r\n" + "".join(f"{k}: {v}\r\n" for k, v in signed_headers(body, SECRET).items()) + f"Content-Length: {len(body)}\r\n\r\n"
            s.sendall(head.encode() + body)
            self.assertTrue(self.state["started"].wait(10))
        # Hung up mid-call, as Toolport does at the deadline; the next delivery is answered.
        body = call_body("echo", {"text": "after"})
        c = self.conn()
        c.request("POST", "/", body=body, headers=signed_headers(body, SECRET))
        self.assertEqual(json.loads(c.getresponse().read()), {"text": "after for usr_pseudo1"})
        c.close()
        self.state["gate"].set()


def wsgi_call(h, method="POST", body=b"", headers=None, content_length=True, terminated=False):
    """Calls handler.wsgi as a WSGI server would: (status line, content type, body)."""
    environ = {}
    wsgiref.util.setup_testing_defaults(environ)
    environ.update({"REQUEST_METHOD": method, "wsgi.input": io.BytesIO(body)})
    if content_length:
        environ["CONTENT_LENGTH"] = str(len(body))
    if terminated:
        environ["wsgi.input_terminated"] = True
    for k, v in (headers or {}).items():
        if k.lower() == "content-type":
            environ["CONTENT_TYPE"] = v
        else:
            environ["HTTP_" + k.upper().replace("-", "_")] = v
    started = {}
    out = b"".join(h.wsgi(environ, lambda status, hs: started.update(status=status, headers=dict(hs))))
    assert started["headers"]["Content-Length"] == str(len(out))
    return started["status"], started["headers"]["Content-Type"], out


async def asgi_exchange(h, body=b"", headers=None, method="POST", chunk=None, disconnect=False):
    """Calls handler.asgi as an ASGI server would; returns the messages it sent."""
    if disconnect:
        inbox = [{"type": "http.request", "body": body[:10], "more_body": True}, {"type": "http.disconnect"}]
    elif chunk:
        parts = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
        inbox = [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]
    else:
        inbox = [{"type": "http.request", "body": body, "more_body": False}]
    sent = []

    async def receive():
        return inbox.pop(0) if inbox else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": "/webhook", "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]}
    await h.asgi(scope, receive, send)
    return sent


class Wsgi(unittest.TestCase):
    def setUp(self):
        self.addon, _ = build()
        self.h = self.addon.handler(secrets=[SECRET], max_body_bytes=2000)

    def call(self, *args, **kw):
        return wsgi_call(self.h, *args, **kw)

    def test_answers_a_signed_delivery(self):
        body = call_body("echo", {"text": "wsgi"})
        self.assertEqual(self.call(body=body, headers=signed_headers(body, SECRET)), ("200 OK", "application/json", b'{"text":"wsgi for usr_pseudo1"}'))

    def test_runs_async_tools(self):
        body = call_body("async_echo", {"text": "refuse"})
        self.assertEqual(json.loads(self.call(body=body, headers=signed_headers(body, SECRET))[2]), {"error": "Not that one."})

    def test_refuses_what_it_must(self):
        body = call_body("echo", {"text": "wsgi"})
        self.assertEqual(self.call(body=body, headers=signed_headers(body, new_secret()))[:3:2], ("401 Unauthorized", b"Unauthorized"))
        self.assertEqual(self.call("GET")[0], "401 Unauthorized")
        stale = signed_headers(body, SECRET, at=time.time() - 400)
        self.assertEqual(self.call(body=body, headers=stale)[0], "401 Unauthorized")
        big = b"x" * 3000
        unsigned = {"webhook-id": "a", "webhook-timestamp": str(int(time.time())), "webhook-signature": "v1,x"}
        # The reason phrase changed with Python 3.13 (RFC 9110's "Content Too Large"): check the code.
        self.assertEqual(self.call(body=big, headers=unsigned)[0][:4], "413 ")
        self.assertEqual(self.call(body=big, headers=unsigned, content_length=False, terminated=True)[0][:4], "413 ")

    def test_reads_an_input_without_a_length_only_when_it_is_terminated(self):
        body = call_body("echo", {"text": "eof"})
        headers = signed_headers(body, SECRET)
        self.assertEqual(self.call(body=body, headers=headers, content_length=False, terminated=True)[2], b'{"text":"eof for usr_pseudo1"}')
        self.assertEqual(self.call(body=body, headers=headers, content_length=False)[0], "401 Unauthorized", "no body read, so the signature is over nothing")

    def test_serves_under_wsgiref(self):
        server = wsgiref.simple_server.make_server("127.0.0.1", 0, self.h.wsgi, handler_class=type("Quiet", (wsgiref.simple_server.WSGIRequestHandler,), {"log_message": lambda *a: None}))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            body = call_body("echo", {"text": "ref"})
            c = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=20)
            c.request("POST", "/hook", body=body, headers=signed_headers(body, SECRET))
            self.assertEqual(json.loads(c.getresponse().read()), {"text": "ref for usr_pseudo1"})
            c.close()
        finally:
            server.shutdown()
            server.server_close()


class Asgi(unittest.TestCase):
    def setUp(self):
        self.addon, self.state = build()
        self.errors = []
        self.h = self.addon.handler(secrets=[SECRET], max_body_bytes=2000, on_error=lambda e, w: self.errors.append(e))

    def exchange(self, *args, **kw):
        return asgi_exchange(self.h, *args, **kw)

    def run_exchange(self, *args, **kw):
        sent = asyncio.run(self.exchange(*args, **kw))
        if not sent:
            return None
        start, body = sent
        return start["status"], dict(start["headers"]), body["body"]

    def test_answers_a_signed_delivery_sent_in_pieces(self):
        body = call_body("echo", {"text": "asgi"})
        status, headers, out = self.run_exchange(body, signed_headers(body, SECRET), chunk=7)
        self.assertEqual((status, headers[b"content-type"], out), (200, b"application/json", b'{"text":"asgi for usr_pseudo1"}'))
        self.assertEqual(headers[b"content-length"], str(len(out)).encode())

    def test_runs_async_tools_on_the_servers_loop_and_reports_their_failures(self):
        body = call_body("async_echo", {"text": "loop"})
        self.assertEqual(json.loads(self.run_exchange(body, signed_headers(body, SECRET))[2]), {"json": {"echo": "loop", "loop": True}})
        body = call_body("async_crash")
        self.assertEqual(json.loads(self.run_exchange(body, signed_headers(body, SECRET))[2]), {"error": GENERIC_FAILURE, "failed": True})
        self.assertIsInstance(self.errors[-1], ValueError)

    def test_refuses_what_it_must(self):
        body = call_body("echo", {"text": "x"})
        self.assertEqual(self.run_exchange(body, signed_headers(body, new_secret()))[::2], (401, b"Unauthorized"))
        self.assertEqual(self.run_exchange(method="GET")[0], 401)
        unsigned = {"webhook-id": "a", "webhook-timestamp": str(int(time.time())), "webhook-signature": "v1,x"}
        self.assertEqual(self.run_exchange(b"x" * 3000, {**unsigned, "content-length": "3000"})[0], 413)
        self.assertEqual(self.run_exchange(b"x" * 3000, unsigned, chunk=500)[0], 413, "a body that grows past the limit")
        self.assertIsNone(self.run_exchange(body, signed_headers(body, SECRET), disconnect=True), "a client gone mid-body gets nothing")

    def test_an_async_tool_past_the_deadline_is_answered_and_left_to_finish(self):
        async def scenario():
            release, started = asyncio.Event(), threading.Event()
            self.state["release"], self.state["started"] = release, started
            body = call_body("async_slow", deadline_in=0.1, call_id="call_async_slow")
            headers = signed_headers(body, SECRET, webhook_id="msg_async_slow")
            late = await self.exchange(body, headers)
            self.assertTrue(started.is_set())
            echo = call_body("echo", {"text": "meanwhile"})
            meanwhile = await self.exchange(echo, signed_headers(echo, SECRET))
            release.set()
            await asyncio.sleep(0.05)
            retry_body = call_body("async_slow", deadline_in=20, call_id="call_async_slow")
            retry = await self.exchange(retry_body, signed_headers(retry_body, SECRET, webhook_id="msg_async_slow"))
            return late, meanwhile, retry

        late, meanwhile, retry = asyncio.run(scenario())
        self.assertEqual(json.loads(late[1]["body"]), {"error": GENERIC_FAILURE, "failed": True})
        self.assertIsInstance(self.errors[-1], TimeoutError)
        self.assertEqual(json.loads(meanwhile[1]["body"]), {"text": "meanwhile for usr_pseudo1"})
        self.assertEqual(json.loads(retry[1]["body"]), {"text": "released"}, "the retry gets the answer it finished with")

    def test_speaks_lifespan_and_closes_websockets(self):
        async def lifespan():
            inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
            sent = []

            async def receive():
                return inbox.pop(0)

            async def send(m):
                sent.append(m)

            await self.h.asgi({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
            ws = []

            async def ws_receive():
                return {"type": "websocket.connect"}

            async def ws_send(m):
                ws.append(m)

            await self.h.asgi({"type": "websocket", "headers": []}, ws_receive, ws_send)
            return sent, ws

        sent, ws = asyncio.run(lifespan())
        self.assertEqual([m["type"] for m in sent], ["lifespan.startup.complete", "lifespan.shutdown.complete"])
        self.assertEqual(ws[0]["type"], "websocket.close")


class SameEverywhere(unittest.TestCase):
    def test_handle_http_wsgi_and_asgi_answer_alike(self):
        addon, _ = build()
        h = addon.handler(secrets=[SECRET])
        server = serve(h, 0, "127.0.0.1")
        try:
            cases = [call_body("echo", {"text": "same"}), call_body("echo", {"text": 12}), call_body("nope")]
            for body in cases:
                for tamper in (False, True):
                    headers = signed_headers(body, SECRET)
                    sent = body.replace(b"usr_", b"usr-") if tamper else body
                    direct = h.handle("POST", headers, sent)
                    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
                    c.request("POST", "/", body=sent, headers=headers)
                    res = c.getresponse()
                    over_http = (res.status, res.getheader("content-type"), res.read())
                    c.close()
                    wsgi = wsgi_call(h, body=sent, headers=headers)
                    asgi_sent = asyncio.run(asgi_exchange(h, sent, headers))
                    with self.subTest(body=body, tamper=tamper):
                        self.assertEqual(over_http, tuple(direct))
                        self.assertEqual((int(wsgi[0].split()[0]), wsgi[1], wsgi[2]), tuple(direct))
                        self.assertEqual((asgi_sent[0]["status"], dict(asgi_sent[0]["headers"])[b"content-type"].decode(), asgi_sent[1]["body"]), tuple(direct))
        finally:
            server.close()


if __name__ == "__main__":
    unittest.main()
