"""Notes per person, in memory, and in a JSON file too when one is given."""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import threading
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

MAX_NOTES_PER_USER = 1000
TITLE_MAX = 80
PREVIEW_MAX = 140


@dataclass(frozen=True)
class Note:
    id: str
    title: str
    text: str
    created_at: str  # ISO 8601, UTC, milliseconds, as JavaScript's toISOString writes it
    pinned: bool
    # The call that created it: a retried add_note returns this note, even after a restart.
    call_id: str


def _cut(s: str, limit: int) -> str:
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def title_of(text: str) -> str:
    """The first non-empty line, without Markdown heading marks."""
    for line in text.split("\n"):
        line = re.sub(r"^\s*#+\s*", "", line).strip()
        if line:
            return _cut(line, TITLE_MAX)
    return "Untitled"


def preview_of(text: str) -> str:
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    return _cut(re.sub(r"\s+", " ", " ".join(lines[first + 1 :])).strip(), PREVIEW_MAX)


def _iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class NotesFull(Exception):
    pass


class NoteStore:
    """Every method takes the person's id: nothing crosses from one person to another.

    A change is written to ``file`` (when given) before it is kept in memory, so a write that fails
    changes nothing: the error goes up to the kit, which logs it and answers the generic failure.
    """

    def __init__(self, file: str | None = None) -> None:
        self.file = file
        self._lock = threading.Lock()  # the kit runs calls on several threads at once
        self._by_user: dict[str, list[Note]] = {}
        if file and os.path.exists(file):
            with open(file, encoding="utf-8") as f:
                saved = json.load(f)
            self._by_user = {user: [Note(**n) for n in notes] for user, notes in saved.items()}

    def _commit(self, user_id: str, notes: list[Note]) -> None:
        if self.file:
            state = {**self._by_user, user_id: notes}
            folder = os.path.dirname(os.path.abspath(self.file))
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".notes-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({u: [asdict(n) for n in ns] for u, ns in state.items()}, f, ensure_ascii=False)
                os.replace(tmp, self.file)
            except BaseException:
                os.unlink(tmp)
                raise
        self._by_user[user_id] = notes

    def search(self, user_id: str, query: str = "", order: str = "newest") -> list[Note]:
        """Every word of ``query`` must appear in the title or the text (case-insensitive); pinned notes first."""
        words = query.casefold().split()
        with self._lock:
            notes = list(self._by_user.get(user_id, []))
        found = [n for n in notes if all(w in f"{n.title}\n{n.text}".casefold() for w in words)]
        if order != "oldest":
            found.reverse()
        return sorted(found, key=lambda n: not n.pinned)  # stable: keeps the order within each group

    def get(self, user_id: str, note_id: str) -> Note | None:
        with self._lock:
            return next((n for n in self._by_user.get(user_id, []) if n.id == note_id), None)

    def add(self, user_id: str, text: str, call_id: str, pinned: bool = False, now: datetime | None = None) -> Note:
        """Adds a note, or returns the one this call already added."""
        with self._lock:
            notes = self._by_user.get(user_id, [])
            earlier = next((n for n in notes if n.call_id == call_id), None)
            if earlier:
                return earlier
            if len(notes) >= MAX_NOTES_PER_USER:
                raise NotesFull()
            note = Note(
                id=f"note_{secrets.token_urlsafe(9)}",
                title=title_of(text),
                text=text,
                created_at=_iso(now or datetime.now(timezone.utc)),
                pinned=pinned,
                call_id=call_id,
            )
            self._commit(user_id, [*notes, note])
            return note

    def delete(self, user_id: str, note_id: str) -> Note | None:
        with self._lock:
            notes = self._by_user.get(user_id, [])
            gone = next((n for n in notes if n.id == note_id), None)
            if gone:
                self._commit(user_id, [n for n in notes if n is not gone])
            return gone

    def older_than(self, user_id: str, cutoff: datetime) -> list[Note]:
        with self._lock:
            return [n for n in self._by_user.get(user_id, []) if n.created_at < _iso(cutoff)]

    def delete_older_than(self, user_id: str, cutoff: datetime) -> list[Note]:
        with self._lock:
            notes = self._by_user.get(user_id, [])
            gone = [n for n in notes if n.created_at < _iso(cutoff)]
            if gone:
                self._commit(user_id, [n for n in notes if n not in gone])
            return gone
