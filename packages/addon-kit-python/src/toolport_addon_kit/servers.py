"""Three thin adapters over Handler: http.server (threads), WSGI and ASGI, all by hand on the stdlib."""

from __future__ import annotations

import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO, Callable

from .handler import TOO_LARGE, UNAUTHORIZED, Answer, BodyTooLarge, Handler

_CHUNK = 64 * 1024


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _read_exactly(stream: BinaryIO, length: int, limit: int) -> bytes:
    if length > limit:
        raise BodyTooLarge()
    chunks, left = [], length
    while left > 0:
        chunk = stream.read(min(left, _CHUNK))
        if not chunk:
            raise ConnectionError("the body ended before its declared length")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_to_end(stream: BinaryIO, limit: int) -> bytes:
    chunks, size = [], 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        chunks.append(chunk)


def _read_chunked(stream: BinaryIO, limit: int) -> bytes:
    chunks, size = [], 0
    while True:
        line = stream.readline(1024)
        if not line.endswith(b"\n"):
            raise ConnectionError("a malformed chunk size line")
        n = int(line.split(b";", 1)[0].strip() or b"x", 16)
        if n == 0:
            while stream.readline(1024).strip():  # trailers
                pass
            return b"".join(chunks)
        size += n
        if size > limit:
            raise BodyTooLarge()
        chunks.append(_read_exactly(stream, n, limit))
        stream.readline(1024)  # the CRLF after the chunk


# -- http.server --------------------------------------------------------------------------------


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "toolport-addon-kit"
    sys_version = ""
    # A connection that sends nothing for this long is closed, so idle ones cannot hold threads forever.
    timeout = 75
    server: AddOnServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # no access log: the delivery log in Toolport has every attempt

    def __getattr__(self, name: str) -> Any:
        # Every method reaches the handler, which answers anything but POST with a bare 401.
        if name.startswith("do_"):
            return self._deliver
        raise AttributeError(name)

    def _deliver(self) -> None:
        h = self.server.handler
        header: dict[str, str] = {}
        for k, v in self.headers.items():
            k = k.lower()
            header[k] = f"{header[k]}, {v}" if k in header else v
        early = h.precheck(self.command, header)
        if early is not None:
            # The body is left unread: end the connection rather than drain it.
            return self._send(early, close=True)
        try:
            if "chunked" in header.get("transfer-encoding", "").lower():
                body = _read_chunked(self.rfile, h.max_body_bytes)
            else:
                body = _read_exactly(self.rfile, int(header.get("content-length") or 0), h.max_body_bytes)
        except BodyTooLarge:
            return self._send(TOO_LARGE, close=True)
        except (OSError, ValueError):
            return self._send(UNAUTHORIZED, close=True)
        self._send(h.respond(self.command, header, body))

    def _send(self, answer: Answer, close: bool = False) -> None:
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)
        except (BrokenPipeError, ConnectionResetError):
            # Toolport hung up (the deadline passed, or the app cancelled): nobody to answer.
            self.close_connection = True


class AddOnServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that answers every path with ``handler``; one thread per connection."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handler: Handler, port: int = 8787, host: str | None = None) -> None:
        self.handler = handler
        self._thread: threading.Thread | None = None
        super().__init__((host or "", port), _RequestHandler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def start(self) -> AddOnServer:
        """Serves in a background thread; returns at once."""
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, name="toolport-addon-server", daemon=True)
            self._thread.start()
        return self

    def wait(self) -> None:
        """Blocks until close() is called, or Ctrl-C (which closes the server)."""
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            self.close()

    def close(self) -> None:
        """Stops serving and closes the listening socket; calls in flight finish on their own threads."""
        if self._thread is not None:
            self.shutdown()
            self._thread = None
        self.server_close()


def serve(handler: Handler, port: int = 8787, host: str | None = None) -> AddOnServer:
    """Serves ``handler`` with http.server on ``port`` (0 picks a free one; ``server.port`` says which).

    Listens on every interface unless ``host`` is given, and serves in a background thread: call
    ``server.wait()`` to block, ``server.close()`` to stop.
    """
    return AddOnServer(handler, port, host).start()


# -- WSGI ---------------------------------------------------------------------------------------


def wsgi_app(h: Handler, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    method = environ.get("REQUEST_METHOD", "GET")
    header: dict[str, str] = {}
    for k, v in environ.items():
        if k.startswith("HTTP_"):
            header[k[5:].replace("_", "-").lower()] = v
    declared = environ.get("CONTENT_LENGTH") or ""
    if declared:
        header["content-length"] = declared

    def answer(a: Answer) -> list[bytes]:
        start_response(f"{a.status} {_phrase(a.status)}", [("Content-Type", a.content_type), ("Content-Length", str(len(a.body)))])
        return [] if method == "HEAD" else [a.body]

    early = h.precheck(method, header)
    if early is not None:
        return answer(early)
    stream = environ.get("wsgi.input")
    try:
        if stream is None:
            body = b""
        elif declared:
            body = _read_exactly(stream, int(declared), h.max_body_bytes)
        elif environ.get("wsgi.input_terminated"):
            body = _read_to_end(stream, h.max_body_bytes)
        else:
            body = b""  # PEP 3333: without a length and no terminated input, there is no body to read
    except BodyTooLarge:
        return answer(TOO_LARGE)
    except (OSError, ValueError):
        return answer(UNAUTHORIZED)
    return answer(h.respond(method, header, body))


# -- ASGI ---------------------------------------------------------------------------------------


async def asgi_app(h: Handler, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
        return
    method = scope.get("method", "GET")
    header: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        k, v = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        header[k] = f"{header[k]}, {v}" if k in header else v

    async def answer(a: Answer) -> None:
        await send({
            "type": "http.response.start",
            "status": a.status,
            "headers": [(b"content-type", a.content_type.encode("latin-1")), (b"content-length", str(len(a.body)).encode("ascii"))],
        })
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else a.body})

    early = h.precheck(method, header)
    if early is not None:
        return await answer(early)
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return  # the client left before sending the whole body: nothing to answer
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > h.max_body_bytes:
            return await answer(TOO_LARGE)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    await answer(await h.respond_async(method, header, b"".join(chunks)))
