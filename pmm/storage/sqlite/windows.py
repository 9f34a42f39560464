"""The window/date key index of the SQLite event log (its SQL; store layer).

    sync_windows(conn, radius=2)   # inside the store's write transaction

Keeps ``events_window_fts`` (migrations/0007, contentless since 0010, each term at most
twice since 0011) in step with the log: new turns get a row, and the turns
before them whose windows now reach the new turns get theirs rewritten. The index stores
no text: a row is removed with FTS5's ``delete`` command and the exact text it was indexed
with, recomputed here from the log as it was (the events up to ``indexed_upto``). A turn
whose text changed (redaction, compaction; listed by the ``window_dirty`` trigger) or a new
radius rebuilds the whole index, since the old text is gone. The pure window logic is in
:mod:`pmm.text.window_keys`.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable

from pmm.storage.sqlite.stored_text import TEXT_SQL
from pmm.text.window_keys import (
    BOUNDARY_KIND,
    WINDOW_BODY_FORMAT,
    WINDOW_KINDS,
    WindowRow,
    date_words,
    reached_turns,
    window_bodies,
)

_KINDS = (*WINDOW_KINDS, BOUNDARY_KIND)
_KIND_MARKS = ",".join("?" * len(_KINDS))
_TURN_MARKS = ",".join("?" * len(WINDOW_KINDS))


def session_tag(session_id: str | None) -> str:
    """The token a ``tags`` column holds for a session (see migrations/0003)."""
    return "s" + (session_id or "").encode("utf-8").hex() + "0"


def user_tag(user_id: str) -> str:
    """The token a ``tags`` column holds for a user (see migrations/0013)."""
    return "u" + user_id.encode("utf-8").hex() + "0"


def tags_of(session_id: str | None, user_id: str | None) -> str:
    """A row's ``tags``: its session's token, and its user's when it has one."""
    tag = session_tag(session_id)
    return tag if user_id is None else tag + " " + user_tag(user_id)


def windows_pending(conn: sqlite3.Connection, radius: int) -> bool:
    """Whether :func:`sync_windows` has anything to do (cheap: three indexed reads)."""
    upto, built, body_format, newest, dirty = conn.execute(
        "SELECT indexed_upto, radius, body_format, (SELECT max(id) FROM events),"
        " EXISTS(SELECT 1 FROM window_dirty) FROM window_state"
    ).fetchone()
    stale = built != radius or body_format != WINDOW_BODY_FORMAT
    return bool(dirty) or stale or (newest or 0) > upto


def sync_windows(conn: sqlite3.Connection, radius: int, *, rebuild: bool = False) -> int:
    """Write the window rows that new or changed events call for (every row with
    ``rebuild``); returns how many."""
    upto, built, body_format = conn.execute(
        "SELECT indexed_upto, radius, body_format FROM window_state"
    ).fetchone()
    dirty = conn.execute("SELECT EXISTS(SELECT 1 FROM window_dirty)").fetchone()[0]
    # another body format (migrations/0012): the bodies this code makes are not the ones
    # indexed, so no row can be deleted by its body; 'delete-all' needs none
    if built != radius or body_format != WINDOW_BODY_FORMAT or dirty or rebuild:
        conn.execute("INSERT INTO events_window_fts(events_window_fts) VALUES ('delete-all')")
        conn.execute("DELETE FROM window_dirty")
        upto = 0
    newest = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0
    marked: dict[str | None, set[int]] = defaultdict(set)
    for session, event_id in conn.execute(
        "SELECT session_id, id FROM events WHERE id > ?", (upto,)
    ):
        marked[session].add(event_id)
    written = 0
    for session, ids in marked.items():
        written += _sync_session(conn, session, ids, radius, upto)
    conn.execute(
        "UPDATE window_state SET indexed_upto = ?, radius = ?, body_format = ?",
        (newest, radius, WINDOW_BODY_FORMAT),
    )
    return written


def _sync_session(
    conn: sqlite3.Connection, session: str | None, marked: set[int], radius: int, upto: int
) -> int:
    low = min(marked)
    # From the 2*radius-th turn before the first new one: every turn whose window may
    # change then has its own radius turns before it in ``rows``.
    start = conn.execute(
        f"SELECT min(id) FROM (SELECT id FROM events WHERE session_id IS ? AND id < ?"
        f" AND kind IN ({_TURN_MARKS}) ORDER BY id DESC LIMIT ?)",
        (session, low, *WINDOW_KINDS, 2 * radius),
    ).fetchone()[0]
    found = conn.execute(
        f"SELECT id, kind, ts, coalesce({TEXT_SQL}, summary) FROM events"
        f" WHERE session_id IS ? AND id >= ? AND kind IN ({_KIND_MARKS}) ORDER BY id",
        (session, low if start is None else start, *_KINDS),
    ).fetchall()
    rows = [WindowRow(r[0], r[1], r[3]) for r in found]
    ts_of = {r[0]: r[2] for r in found}
    targets = reached_turns(rows, radius, marked)
    # indexed as window_body holds them (migrations/0011); compared as such too, so that a
    # window that only gained words it already held is not rewritten
    counted: dict[int, dict[str, tuple[str, int]]] = {}
    texts = window_bodies(rows, radius, targets, counted)
    before = window_bodies([r for r in rows if r.id <= upto], radius, targets, counted)
    # A session belongs to one user (a session's user changes only by assign_user, which
    # marks its turns dirty, so the index is rebuilt with the new tags).
    owner = None
    if session is not None:
        row = conn.execute(
            "SELECT user_id FROM events WHERE session_id = ? ORDER BY id DESC LIMIT 1", (session,)
        ).fetchone()
        owner = row[0] if row else None
    tag = tags_of(session, owner)
    changed = sorted(i for i in targets if texts.get(i) != before.get(i))
    conn.executemany(  # contentless: a row goes with the very text it was indexed with
        "INSERT INTO events_window_fts(events_window_fts, rowid, body, dates, tags)"
        " VALUES ('delete', ?, ?, ?, ?)",
        [(i, before[i], date_words(ts_of[i]), tag) for i in changed if i in before],
    )
    conn.executemany(
        "INSERT INTO events_window_fts(rowid, body, dates, tags) VALUES (?, ?, ?, ?)",
        [(i, texts[i], date_words(ts_of[i]), tag) for i in changed if i in texts],
    )
    return sum(1 for i in changed if i in texts)


def session_windows(
    conn: sqlite3.Connection, sessions: Iterable[str | None], radius: int
) -> dict[str | None, dict[int, tuple[str, str, str]]]:
    """``{session: {turn id: (body, date words, tags)}}``: every window row the index holds for
    these sessions once it is in step with the log (:func:`sync_windows` ran in the same
    transaction), computed from the log as it is now. An erasure takes it before and after
    erasing, and :func:`replace_windows` rewrites only the rows that differ."""
    found: dict[str | None, dict[int, tuple[str, str, str]]] = {}
    for session in sessions:
        fetched = conn.execute(
            f"SELECT id, kind, ts, coalesce({TEXT_SQL}, summary), user_id FROM events"
            f" WHERE session_id IS ? AND kind IN ({_KIND_MARKS}) ORDER BY id",
            (session, *_KINDS),
        ).fetchall()
        rows = [WindowRow(r[0], r[1], r[3]) for r in fetched]
        ts_of = {r[0]: r[2] for r in fetched}
        tags = {r[0]: tags_of(session, r[4]) for r in fetched}  # as the index holds them
        bodies = window_bodies(rows, radius, [r.id for r in rows if r.kind in WINDOW_KINDS])
        found[session] = {i: (body, date_words(ts_of[i]), tags[i]) for i, body in bodies.items()}
    return found


def replace_windows(
    conn: sqlite3.Connection,
    before: dict[str | None, dict[int, tuple[str, str, str]]],
    after: dict[str | None, dict[int, tuple[str, str, str]]],
) -> int:
    """Delete the window rows of ``before`` that ``after`` changes or drops and insert the
    new ones (both from :func:`session_windows`), then forget the turns the update trigger
    marked dirty: they are rewritten here, so no later sync rebuilds the whole index.
    Returns how many rows were written."""
    written = 0
    for session, old in before.items():
        new = after.get(session, {})
        conn.executemany(  # contentless: a row goes with the very text it was indexed with
            "INSERT INTO events_window_fts(events_window_fts, rowid, body, dates, tags)"
            " VALUES ('delete', ?, ?, ?, ?)",
            [(i, *row) for i, row in old.items() if new.get(i) != row],
        )
        added = [(i, *row) for i, row in new.items() if old.get(i) != row]
        conn.executemany(
            "INSERT INTO events_window_fts(rowid, body, dates, tags) VALUES (?, ?, ?, ?)", added
        )
        written += len(added)
    conn.execute("DELETE FROM window_dirty")
    return written
