"""The window/date key index of :class:`~pmm.storage.sqlite.EventStore` (its SQL; store layer).

    sync_windows(conn, radius=2)   # inside the store's write transaction

Keeps ``events_window_fts`` (migrations/0007) in step with the log: new turns get a row,
the ``radius`` turns before them get theirs rewritten (their windows now reach the new
turns), and so do the neighbours of turns whose text changed (redaction, compaction),
which the ``window_dirty`` trigger lists. A radius other than the one the index was built
with rebuilds it. The pure window logic is in :mod:`pmm.window_keys`.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict

from ...window_keys import BOUNDARY_KIND, WINDOW_KINDS, WindowRow, date_words, window_texts

_KINDS = (*WINDOW_KINDS, BOUNDARY_KIND)
_KIND_MARKS = ",".join("?" * len(_KINDS))


def session_tag(session_id: str | None) -> str:
    """The token a ``tags`` column holds for a session (see migrations/0003)."""
    return "s" + (session_id or "").encode("utf-8").hex() + "0"


def windows_pending(conn: sqlite3.Connection, radius: int) -> bool:
    """Whether :func:`sync_windows` has anything to do (cheap: three indexed reads)."""
    upto, built, newest, dirty = conn.execute(
        "SELECT indexed_upto, radius, (SELECT max(id) FROM events),"
        " EXISTS(SELECT 1 FROM window_dirty) FROM window_state"
    ).fetchone()
    return bool(dirty) or built != radius or (newest or 0) > upto


def sync_windows(conn: sqlite3.Connection, radius: int) -> int:
    """Write the window rows that new or changed events call for; returns how many."""
    upto, built = conn.execute("SELECT indexed_upto, radius FROM window_state").fetchone()
    if built != radius:
        conn.execute("DELETE FROM events_window_fts")
        conn.execute("DELETE FROM window_dirty")
        upto = 0
    newest = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0
    marked: dict[str | None, set[int]] = defaultdict(set)
    for session, event_id in conn.execute(
        "SELECT session_id, id FROM events WHERE id > ?"
        " UNION ALL SELECT e.session_id, e.id"
        " FROM window_dirty d JOIN events e ON e.id = d.event_id",
        (upto,),
    ):
        marked[session].add(event_id)
    written = 0
    for session, ids in marked.items():
        written += _sync_session(conn, session, ids, radius, upto)
    conn.execute("DELETE FROM window_dirty")
    conn.execute("UPDATE window_state SET indexed_upto = ?, radius = ?", (newest, radius))
    return written


def _sync_session(
    conn: sqlite3.Connection, session: str | None, marked: set[int], radius: int, upto: int
) -> int:
    low = min(marked)
    before = conn.execute(
        f"SELECT id, kind, ts, coalesce(content, summary) FROM events WHERE session_id IS ?"
        f" AND id < ? AND kind IN ({_KIND_MARKS}) ORDER BY id DESC LIMIT ?",
        (session, low, *_KINDS, 2 * radius),
    ).fetchall()
    after = conn.execute(
        f"SELECT id, kind, ts, coalesce(content, summary) FROM events WHERE session_id IS ?"
        f" AND id >= ? AND kind IN ({_KIND_MARKS}) ORDER BY id",
        (session, low, *_KINDS),
    ).fetchall()
    rows = before[::-1] + after
    turns = [r for r in rows if r[1] in WINDOW_KINDS]
    positions = [i for i, r in enumerate(turns) if r[0] in marked]
    targets: set[int] = set()
    for pos in positions:
        targets.update(r[0] for r in turns[max(0, pos - radius) : pos + radius + 1])
    texts = window_texts([WindowRow(r[0], r[1], r[3]) for r in rows], radius, targets)
    ts_of = {r[0]: r[2] for r in turns}
    tag = session_tag(session)
    conn.executemany(  # rows past ``upto`` were never indexed: nothing to delete
        "DELETE FROM events_window_fts WHERE rowid = ?",
        [(i,) for i in sorted(targets) if i <= upto],
    )
    conn.executemany(
        "INSERT INTO events_window_fts(rowid, body, dates, tags) VALUES (?, ?, ?, ?)",
        [(i, text, date_words(ts_of[i]), tag) for i, text in sorted(texts.items())],
    )
    return len(texts)
