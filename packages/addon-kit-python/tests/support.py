"""Test helpers: the kit from this source tree, and deliveries signed independently of it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))


def new_secret() -> str:
    return "whsec_" + base64.b64encode(os.urandom(24)).decode("ascii")


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """One Standard Webhooks signature, computed here with hmac, not with the kit."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def delivery(tool: str, args: dict[str, Any] | None = None, type: str = "tool.call", call_id: str | None = None, deadline_in: float = 30, **extra: Any) -> dict[str, Any]:
    d = {
        "type": type,
        "addon": "kit-test",
        "tool": tool,
        "arguments": {} if args is None else args,
        "call": {"id": call_id or f"call_{uuid.uuid4().hex}", "deadline": iso(datetime.now(timezone.utc) + timedelta(seconds=deadline_in)), "attempt": 1},
        "user": {"id": "usr_pseudo1"},
        "app": {"name": "Claude", "clientId": "cli_1"},
    }
    d.update(extra)
    return d


def encode(body: Any) -> bytes:
    """What Toolport sends: JSON without spaces, non-ASCII as UTF-8."""
    if isinstance(body, bytes):
        return body
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def signed_headers(body: bytes, secrets: str | list[str], webhook_id: str | None = None, at: float | None = None) -> dict[str, str]:
    wid = webhook_id or f"msg_{uuid.uuid4().hex}"
    ts = int(time.time() if at is None else at)
    signers = [secrets] if isinstance(secrets, str) else secrets
    return {
        "content-type": "application/json",
        "webhook-id": wid,
        "webhook-timestamp": str(ts),
        "webhook-signature": " ".join(sign(s, wid, ts, body) for s in signers),
    }
