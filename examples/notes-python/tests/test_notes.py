import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent
KIT_SRC = EXAMPLE.parents[1] / "packages" / "addon-kit-python" / "src"
for p in (str(EXAMPLE), str(KIT_SRC)):
    if p not in sys.path:
        sys.path.insert(0, p)

from notes_addon import create_notes_addon  # noqa: E402
from store import NoteStore  # noqa: E402

from toolport_addon_kit import GENERIC_FAILURE, NOT_APPROVED  # noqa: E402

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()


def iso(at):
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Deliverer:
    """Signed deliveries to the Notes handler, as Toolport sends them."""

    def __init__(self, store=None, errors=None):
        self.errors = errors if errors is not None else []
        self.h = create_notes_addon(store or NoteStore()).handler(secrets=[SECRET], on_error=lambda e, w: self.errors.append(e))

    def __call__(self, type, tool, args, user, call_id=None, approve=False, settings=None, accounts=None):
        call_id = call_id or f"call_{uuid.uuid4().hex}"
        args_text = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
        body = {
            "type": type, "addon": "notes-py", "tool": tool, "arguments": args,
            "call": {"id": call_id, "deadline": iso(datetime.now(timezone.utc) + timedelta(seconds=30)), "attempt": 1},
            "user": {"id": user}, "app": {"name": "Test", "clientId": "c"},
        }
        if settings is not None:
            body["settings"] = settings
        if accounts is not None:
            body["accounts"] = accounts
        if approve:
            body["approval"] = {"id": "apr_t", "decidedAt": iso(datetime.now(timezone.utc)), "channel": "dashboard", "argumentsHash": "sha256:" + hashlib.sha256(args_text.encode()).hexdigest()}
        raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        wid, ts = f"msg_{uuid.uuid4().hex}", int(time.time())
        key = base64.b64decode(SECRET[6:])
        sig = "v1," + base64.b64encode(hmac.new(key, f"{wid}.{ts}.".encode() + raw, hashlib.sha256).digest()).decode()
        answer = self.h.handle("POST", {"webhook-id": wid, "webhook-timestamp": str(ts), "webhook-signature": sig}, raw)
        assert answer.status == 200, answer
        return json.loads(answer.body)


class Signature(unittest.TestCase):
    def test_a_note_ends_with_the_persons_signature_setting(self):
        send = Deliverer()
        send("tool.call", "add_note", {"text": "Groceries\nOat milk"}, "usr_s", settings={"signature": "-- Ana"})
        send("tool.call", "add_note", {"text": "Plain\nNo signature"}, "usr_s")
        found = {n["title"]: n["preview"] for n in send("tool.call", "search_notes", {}, "usr_s")["json"]["notes"]}
        self.assertIn("-- Ana", found["Groceries"])
        self.assertNotIn("--", found["Plain"])


class ExportNotes(unittest.TestCase):
    def test_only_export_notes_needs_the_notes_cloud_account(self):
        m = create_notes_addon().manifest()
        self.assertEqual([p["provider"] for p in m["accounts"]], ["notes_cloud"])
        self.assertEqual({t["name"]: t.get("accounts") for t in m["tools"]}, {
            "search_notes": None, "add_note": None, "delete_note": None, "forget_old_notes": None, "export_notes": ["notes_cloud"],
        })

    def test_without_the_account_in_the_delivery_it_fails_plainly_and_asks_nobody(self):
        send = Deliverer()
        answer = send("tool.call", "export_notes", {}, "usr_x", accounts={"github": {"accessToken": "gho_other"}})
        self.assertIs(answer["failed"], True)
        self.assertIn('needs the person\'s Notes Cloud account ("notes_cloud") and the call carries none', answer["error"])
        self.assertEqual(len(send.errors), 1, "the developer hears of it through on_error")
        # The other tools need no account.
        self.assertEqual(send("tool.call", "search_notes", {}, "usr_x")["json"]["total"], 0)


class Manifest(unittest.TestCase):
    def test_the_committed_addon_json_is_the_generated_one(self):
        committed = (EXAMPLE / "addon.json").read_text(encoding="utf-8")
        self.assertEqual(committed, create_notes_addon().manifest_json(), "regenerate with: python3 examples/notes-python/main.py --manifest")
        tools = {t["name"]: t for t in json.loads(committed)["tools"]}
        self.assertEqual((tools["delete_note"]["destructive"], tools["delete_note"]["confirm"]), (True, True))
        self.assertEqual((tools["forget_old_notes"]["destructive"], tools["forget_old_notes"]["confirm"]), (True, True))

    def test_main_checks_it_too(self):
        env = {**os.environ, "PYTHONPATH": str(KIT_SRC)}
        run = subprocess.run([sys.executable, str(EXAMPLE / "main.py"), "--manifest", "--check"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("is up to date", run.stdout)


class Tools(unittest.TestCase):
    def test_adds_searches_and_keeps_each_person_to_their_own_notes(self):
        send = Deliverer()
        a1 = send("tool.call", "add_note", {"text": "# Shopping\nOat milk and bread"}, "usr_a")["json"]
        self.assertTrue(a1["id"].startswith("note_"))
        self.assertEqual(a1["title"], "Shopping")
        send("tool.call", "add_note", {"text": "Ideas\nBread recipes with oat flour"}, "usr_a")
        send("tool.call", "add_note", {"text": "Pinned\nbread", "pinned": True}, "usr_a")
        send("tool.call", "add_note", {"text": "Secret of B: oat bread"}, "usr_b")

        found = send("tool.call", "search_notes", {"query": "OAT bread"}, "usr_a")["json"]
        self.assertEqual([n["title"] for n in found["notes"]], ["Ideas", "Shopping"], "newest first, case-insensitive, every word")
        self.assertEqual(found["notes"][1]["preview"], "Oat milk and bread")
        everything = send("tool.call", "search_notes", {"order": "oldest"}, "usr_a")["json"]
        self.assertEqual([n["title"] for n in everything["notes"]], ["Pinned", "Shopping", "Ideas"], "pinned first, then oldest first")
        self.assertEqual(send("tool.call", "search_notes", {"query": "secret"}, "usr_a")["json"], {"notes": [], "total": 0})

        # Another person's note id is unknown here: nothing to approve, nothing deleted.
        b_note = send("tool.call", "search_notes", {}, "usr_b")["json"]["notes"][0]
        self.assertEqual(send("tool.confirm", "delete_note", {"id": b_note["id"]}, "usr_a"), {"confirm": None})
        self.assertIn("no note with id", send("tool.call", "delete_note", {"id": b_note["id"]}, "usr_a", approve=True)["error"])
        self.assertEqual(send("tool.call", "search_notes", {}, "usr_b")["json"]["total"], 1)

    def test_refuses_an_empty_note(self):
        self.assertEqual(Deliverer()("tool.call", "add_note", {"text": "  \n "}, "usr_c"), {"error": "The note is empty; give it some text."})

    def test_describes_a_deletion_deletes_it_only_with_the_approval_then_says_it_is_gone(self):
        send = Deliverer()
        note = send("tool.call", "add_note", {"text": "Trip plan\nTrain at 9"}, "usr_c")["json"]
        confirm = send("tool.confirm", "delete_note", {"id": note["id"]}, "usr_c")["confirm"]
        self.assertEqual(confirm["message"], "Delete the note “Trip plan”?")
        self.assertEqual(confirm["style"], "destructive")
        self.assertEqual(confirm["info"][0], {"name": "Note", "value": "Trip plan"})
        self.assertEqual(confirm["info"][1]["name"], "Created")
        self.assertEqual(send("tool.call", "delete_note", {"id": note["id"]}, "usr_c"), {"error": NOT_APPROVED}, "no receipt: nothing deleted")
        self.assertEqual(send("tool.call", "delete_note", {"id": note["id"]}, "usr_c", approve=True), {"text": "Deleted the note “Trip plan”."})
        self.assertIn("no note with id", send("tool.call", "delete_note", {"id": note["id"]}, "usr_c", approve=True)["error"])

    def test_forgets_notes_older_than_a_number_of_days(self):
        store = NoteStore()
        send = Deliverer(store)
        store.add("usr_d", "Old one", "call_old", now=datetime.now(timezone.utc) - timedelta(days=10))
        send("tool.call", "add_note", {"text": "New one"}, "usr_d")
        self.assertEqual(send("tool.confirm", "forget_old_notes", {"older_than_days": 30}, "usr_d"), {"confirm": None})
        self.assertEqual(send("tool.call", "forget_old_notes", {"older_than_days": 30}, "usr_d"), {"text": "No note is older than 30 days; nothing was deleted."})
        confirm = send("tool.confirm", "forget_old_notes", {"older_than_days": 1.5}, "usr_d")["confirm"]
        self.assertEqual(confirm["message"], "Delete 1 note older than 1.5 days?")
        self.assertEqual(send("tool.call", "forget_old_notes", {"older_than_days": 1.5}, "usr_d"), {"error": NOT_APPROVED})
        self.assertEqual(send("tool.call", "forget_old_notes", {"older_than_days": 1.5}, "usr_d", approve=True), {"json": {"deleted": 1, "titles": ["Old one"]}})
        self.assertEqual([n["title"] for n in send("tool.call", "search_notes", {}, "usr_d")["json"]["notes"]], ["New one"])


class Keeping(unittest.TestCase):
    def test_one_note_per_call_id_kept_in_notes_file_across_restarts(self):
        with tempfile.TemporaryDirectory() as d:
            file = os.path.join(d, "notes.json")
            send = Deliverer(NoteStore(file))
            first = send("tool.call", "add_note", {"text": "Once"}, "usr_e", call_id="call_same")
            self.assertEqual(send("tool.call", "add_note", {"text": "Once"}, "usr_e", call_id="call_same"), first, "another webhook-id, the same call")
            reopened = Deliverer(NoteStore(file))
            self.assertEqual([n["id"] for n in reopened("tool.call", "search_notes", {}, "usr_e")["json"]["notes"]], [first["json"]["id"]])

    def test_a_write_that_fails_changes_nothing_and_is_the_generic_failure(self):
        with tempfile.TemporaryDirectory() as d:
            file = os.path.join(d, "notes.json")
            errors = []
            send = Deliverer(NoteStore(file), errors)
            send("tool.call", "add_note", {"text": "Kept"}, "usr_f")
            os.remove(file)
            os.mkdir(file)  # the disk now refuses the write, whoever runs the test (root included)
            self.assertEqual(send("tool.call", "add_note", {"text": "Lost"}, "usr_f"), {"error": GENERIC_FAILURE, "failed": True})
            self.assertIsInstance(errors[-1], OSError)
            self.assertEqual([n["title"] for n in send("tool.call", "search_notes", {}, "usr_f")["json"]["notes"]], ["Kept"])
            self.assertEqual([f for f in os.listdir(d) if f.endswith(".tmp")], [], "no temporary file left behind")


if __name__ == "__main__":
    unittest.main()
