"""Notes, in Python, on toolport_addon_kit: the Python twin of examples/notes.

Notes are scoped by ``ctx.user_id`` (the pseudonymous ``user.id`` of the delivery); no argument
names a person. The two destructive tools check the person's approval receipt themselves, because
their confirm handler answers None (nothing to approve) when the call would delete nothing.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

from store import NoteStore, NotesFull, preview_of

from toolport_addon_kit import NOT_APPROVED, AddOn, AddOnError, Confirm, Json, Provider, boolean, choice, number, setting, text

DEFAULT_PORT = 8788
# Where `python3 examples/notes-python/main.py` listens by default; addon.json carries this URL.
DEFAULT_WEBHOOK = f"http://localhost:{DEFAULT_PORT}/webhook"
SEARCH_LIMIT = 20

# Notes Cloud, the service whose account export_notes acts on (manifest "accounts"). The URLs are
# placeholders: replace them with your provider's (README.md, "Connected account").
NOTES_CLOUD = Provider(
    "notes_cloud",
    title="Notes Cloud",
    authorization_url="https://notes-cloud.example.com/oauth/authorize",
    token_url="https://notes-cloud.example.com/oauth/token",
    revocation_url="https://notes-cloud.example.com/oauth/revoke",
    scopes=["openid", "profile", "notes"],
)
# The provider's OpenID Connect userinfo endpoint (a placeholder too), which export_notes asks who the account is.
NOTES_CLOUD_USERINFO = "https://notes-cloud.example.com/oauth/userinfo"
EXPORT_MAX_BYTES = 48 * 1024  # the exported document's most bytes: the answer stays under Toolport's 64 KB
USERINFO_MAX_BYTES = 64 * 1024  # a userinfo answer longer than this is not one


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # urllib would send the Authorization header on to wherever a redirect leads: follow none.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirects())


def cloud_account_name(userinfo_url: str, access_token: str, timeout: float) -> str:
    """Who the connected Notes Cloud account is: its name, else its sub, from the provider's userinfo.

    A token the provider refuses is a sentence for the person (reconnect); anything else unexpected
    is the add-on failing (logged, and the app hears the kit's generic sentence).
    """
    req = urllib.request.Request(userinfo_url, headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"})
    try:
        with _opener.open(req, timeout=max(timeout, 0.1)) as res:
            raw = res.read(USERINFO_MAX_BYTES + 1)
    except urllib.error.HTTPError as err:
        err.close()
        if err.code in (401, 403):
            raise AddOnError("Notes Cloud no longer accepts the connected account: reconnect Notes Cloud on the add-on's page in Toolport, then try again.") from None
        raise RuntimeError(f"Notes Cloud's userinfo answered {err.code}") from None
    if len(raw) > USERINFO_MAX_BYTES:
        raise RuntimeError("Notes Cloud's userinfo answer is too long")
    info = json.loads(raw)
    given = next((v for v in (info.get("name"), info.get("sub")) if isinstance(v, str) and v.strip()), None) if isinstance(info, dict) else None
    if given is None:
        raise RuntimeError("Notes Cloud's userinfo names no account (no name, no sub)")
    # One line of at most 100 characters: it heads the document.
    return re.sub(r"\s+", " ", given).strip()[:100]


def _when(iso: str) -> str:
    return iso[:16].replace("T", " ") + " UTC"


def _days(days: float) -> str:
    return "1 day" if days == 1 else f"{days:g} days"


def _require_approval(ctx) -> None:
    # ctx.approval is set only when the signed body carries a receipt for exactly these arguments.
    if ctx.approval is None:
        raise AddOnError(NOT_APPROVED)


def create_notes_addon(store: NoteStore | None = None, webhook: str = DEFAULT_WEBHOOK, userinfo_url: str = NOTES_CLOUD_USERINFO) -> AddOn:
    store = store if store is not None else NoteStore()
    notes = AddOn(
        id="notes-py",
        name="Notes (Python)",
        description="Your notes, searchable.",
        webhook=webhook,
        # The person's settings for their install, in each delivery as ctx.settings.
        settings={"signature": setting.text(title="Signature", summary="Added at the end of each note you add, for example your initials.")},
        # The provider whose account the person connects; only export_notes lists it.
        accounts=[NOTES_CLOUD],
    )

    @notes.tool(
        title="Search notes",
        summary=f"Finds notes containing every word of the query, pinned first, and returns each note's id, title and preview (at most {SEARCH_LIMIT}).",
        read_only=True,
        arguments={
            "query": text(max_length=200, summary="Words to look for; leave it out to list the newest notes.", required=False),
            "order": choice(["newest", "oldest"], summary="Newest first (the default) or oldest first.", required=False),
        },
    )
    def search_notes(args, ctx):
        found = store.search(ctx.user_id, args.get("query", ""), args.get("order", "newest"))
        listed = [{"id": n.id, "title": n.title, "preview": preview_of(n.text), "createdAt": n.created_at, "pinned": n.pinned} for n in found[:SEARCH_LIMIT]]
        return {"notes": listed, "total": len(found)}

    @notes.tool(
        title="Add a note",
        summary="Saves a new note; its first line is the title. Returns the new note's id and title.",
        # The note limit is checked, then the note written: one person's adds must not overlap.
        exclusive=True,
        arguments={
            "text": text(max_length=5000, summary="The note, in Markdown; the first line becomes its title."),
            "pinned": boolean(summary="Keep it at the top of searches.", required=False),
        },
    )
    def add_note(args, ctx):
        if not args["text"].strip():
            raise AddOnError("The note is empty; give it some text.")
        signature = ctx.settings.get("signature", "").strip()
        body = f"{args['text']}\n\n{signature}" if signature else args["text"]
        try:
            note = store.add(ctx.user_id, body, ctx.call_id, pinned=args.get("pinned", False))
        except NotesFull:
            raise AddOnError("You have 1000 notes, the most kept; delete some first.") from None
        return {"id": note.id, "title": note.title}

    @notes.tool(
        title="Delete a note",
        summary="Deletes one note by id (search_notes gives ids) and returns the deleted note's title.",
        destructive=True,
        arguments={"id": text(max_length=64, summary="The note's id, as search_notes returns it.")},
    )
    def delete_note(args, ctx):
        note = store.get(ctx.user_id, args["id"])
        if note is None:
            raise AddOnError(f'There is no note with id "{args["id"]}"; search_notes lists your notes and their ids.')
        _require_approval(ctx)
        store.delete(ctx.user_id, note.id)
        return f"Deleted the note “{note.title}”."

    @delete_note.confirm
    def describe_delete(args, ctx):
        # An unknown id (or another person's) deletes nothing: no approval to ask for.
        note = store.get(ctx.user_id, args["id"])
        if note is None:
            return None
        return Confirm(message=f"Delete the note “{note.title}”?", info=[("Note", note.title), ("Created", _when(note.created_at))], style="destructive")

    @notes.tool(
        title="Forget old notes",
        summary="Deletes every note older than a number of days (pinned ones too) and returns how many were deleted and their titles.",
        destructive=True,
        arguments={"older_than_days": number(min=0, max=36500, summary="Notes created more than this many days ago are deleted; fractions allowed.")},
    )
    def forget_old_notes(args, ctx):
        cutoff = datetime.now(timezone.utc) - timedelta(days=args["older_than_days"])
        if not store.older_than(ctx.user_id, cutoff):
            return f"No note is older than {_days(args['older_than_days'])}; nothing was deleted."
        _require_approval(ctx)
        gone = store.delete_older_than(ctx.user_id, cutoff)
        return Json({"deleted": len(gone), "titles": [n.title for n in gone]})

    @forget_old_notes.confirm
    def describe_forget(args, ctx):
        old = store.older_than(ctx.user_id, datetime.now(timezone.utc) - timedelta(days=args["older_than_days"]))
        if not old:
            return None
        shown = [("Note", n.title) for n in old[:5]]
        if len(old) > 5:
            shown.append(("And", f"{len(old) - 5} more"))
        count = "1 note" if len(old) == 1 else f"{len(old)} notes"
        return Confirm(message=f"Delete {count} older than {_days(args['older_than_days'])}?", info=shown, style="destructive")

    # The one tool that needs the person's Notes Cloud account: Toolport sends its token in this
    # tool's deliveries only, and asks the person to connect it when they have not.
    @notes.tool(
        title="Export notes",
        summary=f"Exports your newest notes (at most {SEARCH_LIMIT} and 48 KB, or those matching a query) as one Markdown document for your Notes Cloud account, and returns the document, the account's name and how many notes it holds.",
        read_only=True,
        accounts=["notes_cloud"],
        arguments={"query": text(max_length=200, summary="Words the exported notes must contain; leave it out to export the newest.", required=False)},
    )
    def export_notes(args, ctx):
        account = cloud_account_name(userinfo_url, ctx.accounts["notes_cloud"].access_token, ctx.seconds_left())
        found = store.search(ctx.user_id, args.get("query", ""))
        # Newest first (pinned ones first), as many as fit in one answer.
        markdown, exported = f"# Notes of {account}", 0
        size = len(markdown.encode("utf-8"))
        for n in found[:SEARCH_LIMIT]:
            part = f"\n\n## {n.title}\n\n{n.text}"
            part_size = len(part.encode("utf-8"))
            if size + part_size > EXPORT_MAX_BYTES:
                break
            markdown += part
            size += part_size
            exported += 1
        return {"account": account, "exported": exported, "total": len(found), "markdown": markdown}

    return notes
