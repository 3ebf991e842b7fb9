"""The Python Notes add-on on http://localhost:$NOTES_PORT/webhook, or its addon.json.

    python3 examples/notes-python/main.py               serve
    python3 examples/notes-python/main.py --manifest    write addon.json from the code
    python3 examples/notes-python/main.py --manifest --check   exit 1 when addon.json is out of date

Settings: NOTES_PORT (8788), NOTES_HOST (every interface), NOTES_SECRET (the whsec_ secret Toolport
printed; several, comma-separated, during a rotation), NOTES_FILE (a JSON file to keep notes in),
NOTES_CLOUD_USERINFO_URL (the Notes Cloud provider's userinfo endpoint; default: the placeholder in
notes_addon.py).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST_PATH = HERE / "addon.json"

try:
    import toolport_addon_kit  # noqa: F401
except ModuleNotFoundError:
    sys.exit("toolport_addon_kit is not installed: pip install ./packages/addon-kit-python, or set PYTHONPATH=packages/addon-kit-python/src.")

from notes_addon import DEFAULT_PORT, DEFAULT_WEBHOOK, NOTES_CLOUD_USERINFO, create_notes_addon  # noqa: E402
from store import NoteStore  # noqa: E402

from toolport_addon_kit import serve  # noqa: E402


def manifest(check: bool) -> int:
    rendered = create_notes_addon().manifest_json()
    if not check:
        MANIFEST_PATH.write_text(rendered, encoding="utf-8")
        print(f"Wrote {MANIFEST_PATH}")
        return 0
    current = MANIFEST_PATH.read_text(encoding="utf-8") if MANIFEST_PATH.exists() else ""
    if current != rendered:
        print(f"{MANIFEST_PATH} is out of date; run: python3 {Path(__file__).name} --manifest", file=sys.stderr)
        return 1
    print(f"{MANIFEST_PATH} is up to date.")
    return 0


def main() -> int:
    if "--manifest" in sys.argv[1:]:
        return manifest("--check" in sys.argv[1:])
    raw_port = os.environ.get("NOTES_PORT", str(DEFAULT_PORT))
    if not raw_port.isdigit() or int(raw_port) > 65535:
        print(f'NOTES_PORT must be a port number, got "{raw_port}".', file=sys.stderr)
        return 2
    secrets = [s.strip() for s in os.environ.get("NOTES_SECRET", "").split(",") if s.strip()]
    try:
        store = NoteStore(os.environ.get("NOTES_FILE") or None)
        userinfo_url = os.environ.get("NOTES_CLOUD_USERINFO_URL") or NOTES_CLOUD_USERINFO
        handler = create_notes_addon(store, userinfo_url=userinfo_url).handler(secrets=secrets)
    except ValueError as err:  # a malformed secret or NOTES_FILE; the sentence names no secret
        print(f"NOTES_SECRET or NOTES_FILE is not usable: {err}", file=sys.stderr)
        return 2
    server = serve(handler, int(raw_port), os.environ.get("NOTES_HOST") or None)
    webhook = f"http://localhost:{server.port}/webhook"
    print(f"Notes (Python) add-on listening.\n  webhook URL: {webhook}\n  manifest:    {MANIFEST_PATH}", flush=True)
    if webhook != DEFAULT_WEBHOOK:
        print(f"  (addon.json says {DEFAULT_WEBHOOK}; push with --webhook {webhook})", flush=True)
    if not secrets:
        print(
            "  NOTES_SECRET is not set: only the registration ping is answered. Register with\n"
            f"    npm run -s toolport -- addon push {MANIFEST_PATH}\n"
            "  then restart with NOTES_SECRET=<the whsec_ secret it prints>.",
            flush=True,
        )
    signal.signal(signal.SIGTERM, lambda *_: server.close())
    server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
