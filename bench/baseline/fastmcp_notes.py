# The nearest like-for-like peer: a FastMCP server (Python) whose one tool, search_notes, POSTs a
# signed tool.call to the Notes webhook, as Toolport delivers it, and returns the answer as text.
# Streamable HTTP, stateless, JSON answers: the same shape of answer Toolport gives a plain call.
# argv[1]: the port. Env: NOTES_WEBHOOK, NOTES_SECRET (whsec_...). Exits when stdin closes, so it
# never outlives the bench's wrapper (bench/baseline/peer.ts).
import base64
import hashlib
import hmac
import itertools
import json
import os
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Annotated

import httpx
from fastmcp import FastMCP
from pydantic import Field

WEBHOOK = os.environ["NOTES_WEBHOOK"]
KEY = base64.b64decode(os.environ["NOTES_SECRET"].removeprefix("whsec_"))
# Keep-alive with room for the bench's top concurrency: a new connection per call would be the
# peer's loss, not its design.
client = httpx.AsyncClient(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64), timeout=30)
seq = itertools.count(1)

mcp = FastMCP("notes")


@mcp.tool
async def search_notes(query: Annotated[str | None, Field(max_length=200)] = None) -> str:
    """Finds notes containing every word of the query, newest first, and returns each note's id, title and preview."""
    # A fresh id per call: the add-on answers a repeated webhook-id from memory without running the tool.
    call_id = f"call_fastmcp{os.getpid()}_{next(seq)}"
    deadline = (datetime.now(timezone.utc) + timedelta(seconds=30)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    body = json.dumps(
        {
            "type": "tool.call",
            "addon": "notes",
            "tool": "search_notes",
            "arguments": {} if query is None else {"query": query},
            "call": {"id": call_id, "deadline": deadline, "attempt": 1},
            "user": {"id": "usr_benchpseudonym"},
            "app": {"name": "Bench", "clientId": "cli_bench"},
        },
        separators=(",", ":"),
    )
    ts = str(int(time.time()))
    sig = base64.b64encode(hmac.new(KEY, f"{call_id}.{ts}.{body}".encode(), hashlib.sha256).digest()).decode()
    res = await client.post(
        WEBHOOK,
        content=body,
        headers={
            "content-type": "application/json",
            "webhook-id": call_id,
            "webhook-timestamp": ts,
            "webhook-signature": f"v1,{sig}",
        },
    )
    if res.status_code != 200:
        raise RuntimeError(f"the add-on answered {res.status_code}: {res.text[:200]}")
    return res.text


def exit_when_stdin_closes():
    sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    mcp.run(
        transport="http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        path="/mcp",
        stateless_http=True,
        json_response=True,
        show_banner=False,
        # No line per request on stdout: the other servers under test log nothing per call either.
        log_level="WARNING",
        uvicorn_config={"access_log": False},
    )
