"""The window/date key index of the PostgreSQL store (its SQL; see :mod:`pmm.text.window_keys`).

    with db.write() as conn:                     # the transaction that changed the turns
        ...                                      # append, redact, erase or compact
        sync_windows(conn, [(session, id), ...], radius=2)

``event_windows`` (migrations/0003) holds one tsvector per turn: its window body (the turn
and up to ``radius`` turns before and after it in its session, never across a ``clear``
marker, each turn's first :data:`~pmm.text.window_keys.WINDOW_TURN_CHARS` characters, as
:func:`~pmm.text.window_keys.window_bodies` caps them on SQLite too: each term at most twice,
no stopwords) with weight A and its date in words with weight B, so that a search can weigh the
date (``ts_rank_cd`` weights). It is written in the same transaction as the change that
calls for it: an appended turn gets its row and the ``radius`` turns before it get theirs
rewritten (their windows now reach it); a turn whose text changed (redaction, erasure,
compaction) has its neighbours rewritten and loses its own row when it has no text left.
A store opened with another radius or body format (migrations/0007) than the index was
built with rebuilds it. The capped bodies bound the work of an append: a 3.6 MB tool result
made each of the next appends of its session run ``to_tsvector`` over megabytes (seconds a
step, bench/agent_soak.py); now its neighbours read and index its first characters only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pmm.text.window_keys import (
    BOUNDARY_KIND,
    WINDOW_BODY_FORMAT,
    WINDOW_KINDS,
    WINDOW_TURN_CHARS,
    WindowRow,
    date_words,
    reached_turns,
    window_bodies,
)

if TYPE_CHECKING:
    import psycopg

TAIL_KINDS = [*WINDOW_KINDS, BOUNDARY_KIND]
"""The kinds a window reads: turns, and the clear markers it never crosses."""
# only the characters a window holds travel from the server (a part of a split message is 1 MB)
_ROW = f"id, kind, ts, left(coalesce(content, summary), {WINDOW_TURN_CHARS})"
_NEIGHBOURHOOD = (
    "SELECT s.sid, r.* FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS s(sid, low, high)"
    " CROSS JOIN LATERAL ("
    f"(SELECT {_ROW} FROM events WHERE {{match}} AND kind = ANY(%s) AND id < s.low"
    " ORDER BY id DESC LIMIT %s)"
    f" UNION ALL (SELECT {_ROW} FROM events WHERE {{match}} AND kind = ANY(%s)"
    " AND id BETWEEN s.low AND s.high)"
    f" UNION ALL (SELECT {_ROW} FROM events WHERE {{match}} AND kind = ANY(%s) AND id > s.high"
    " ORDER BY id LIMIT %s)) AS r"
)
_UPSERT = (
    "INSERT INTO event_windows(event_id, session_id, kind, search, shard)"
    " SELECT t.id, t.sid, t.kind, setweight(to_tsvector('english', t.body), 'A')"
    " || setweight(to_tsvector('english', t.dates), 'B'), e.shard"
    " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[])"
    " AS t(id, sid, kind, body, dates) JOIN events e ON e.id = t.id"
    " ON CONFLICT (event_id, shard) DO UPDATE SET search = excluded.search"
)
"""A window row goes to its event's partition (migrations/0009)."""
_BATCH = 5000
_Window = tuple[int, str | None, str, str, str]
"""One row to write: event id, session, kind, window text, date words."""


def window_weights(date_weight: float) -> str:
    """``ts_rank_cd``'s weights array ``{D, C, B, A}`` for a date weight: the window text is
    A, the date B; PostgreSQL takes weights up to 1, so the larger of the two is 1."""
    weight = max(0.0, float(date_weight))
    text, date = (1.0, weight) if weight <= 1.0 else (1.0 / weight, 1.0)
    return f"{{0, 0, {round(date, 6)!r}, {round(text, 6)!r}}}"


def sync_windows(
    conn: psycopg.Connection[Any], marked: Iterable[tuple[str | None, int]], radius: int
) -> int:
    """Rewrite the window rows that the events ``(session_id, id)`` call for (they were
    appended, or their text changed); returns how many rows were written or deleted."""
    by_session: dict[str | None, set[int]] = defaultdict(set)
    for session, event_id in marked:
        by_session[session].add(int(event_id))
    rows: dict[str | None, list[tuple[Any, ...]]] = defaultdict(list)
    named: list[str | None] = [s for s in by_session if s is not None]
    groups = [(named, "session_id = s.sid")] if named else []
    if None in by_session:
        groups.append(([None], "session_id IS NULL"))
    for sessions, match in groups:
        lows = [min(by_session[s]) for s in sessions]
        highs = [max(by_session[s]) for s in sessions]
        sql = _NEIGHBOURHOOD.replace("{match}", match)
        params = [sessions, lows, highs, TAIL_KINDS, 2 * radius, TAIL_KINDS, TAIL_KINDS, 2 * radius]
        for session, *row in conn.execute(sql, params):
            rows[session].append(tuple(row))
    upserts, deletes = _plan(by_session, rows, radius)
    changed = 0
    if deletes:
        changed += conn.execute(
            "DELETE FROM event_windows WHERE event_id = ANY(%s)", (deletes,)
        ).rowcount
    changed += _upsert(conn, upserts)
    return changed


def appended_windows(
    tails: Iterable[Sequence[Any]],
    appended: Sequence[tuple[int, str, str | None, str, str | None]],
    radius: int,
    counted: dict[int, dict[str, tuple[str, int]]] | None = None,
) -> list[tuple[int, str | None, str, str, str]]:
    """The window rows ``(id, session, kind, text, date words)`` that appended events
    ``(id, kind, session, ts, content)`` call for, given the newest ``2 * radius`` rows of
    :data:`TAIL_KINDS` of their sessions before them, ``(session, id, kind, ts, text)``
    (the text's first :data:`~pmm.text.window_keys.WINDOW_TURN_CHARS` characters).
    ``counted``: the rows' terms by id, read and filled as
    :func:`~pmm.text.window_keys.window_bodies` does."""
    rows: dict[str | None, list[tuple[Any, ...]]] = defaultdict(list)
    for session, *row in tails:
        rows[session].append(tuple(row))
    marked: dict[str | None, set[int]] = defaultdict(set)
    for event_id, kind, session, ts, content in appended:
        if kind in TAIL_KINDS:
            rows[session].append((event_id, kind, ts, content))
        if kind in WINDOW_KINDS:
            marked[session].add(event_id)
    upserts, _ = _plan(marked, rows, radius, counted)  # new turns only add text: no deletes
    return upserts


def _plan(
    marked: dict[str | None, set[int]],
    rows: dict[str | None, list[tuple[Any, ...]]],
    radius: int,
    counted: dict[int, dict[str, tuple[str, int]]] | None = None,
) -> tuple[list[_Window], list[int]]:
    """The rows to write and the ids whose rows to delete (turns left without text)."""
    upserts: list[_Window] = []
    deletes: list[int] = []
    for session, marked_ids in marked.items():
        session_rows = sorted(rows[session])
        window_rows = [WindowRow(int(r[0]), r[1], r[3]) for r in session_rows]
        targets = reached_turns(window_rows, radius, marked_ids)
        texts = window_bodies(window_rows, radius, targets, counted)
        ts_kind = {r[0]: (r[2], r[1]) for r in session_rows}
        upserts += [
            (i, session, ts_kind[i][1], text, date_words(ts_kind[i][0]))
            for i, text in texts.items()
        ]
        deletes += sorted(targets - texts.keys())
    return upserts, deletes


def _upsert(conn: psycopg.Connection[Any], rows: list[_Window]) -> int:
    for start in range(0, len(rows), _BATCH):
        chunk = rows[start : start + _BATCH]
        conn.execute(_UPSERT, [list(column) for column in zip(*chunk, strict=True)])
    return len(rows)


WINDOW_STATE = "SELECT radius, body_format FROM window_state"
"""How the window index was built: read it and ask :func:`windows_current`."""


def windows_current(state: Sequence[Any] | None, radius: int) -> bool:
    """Whether a :data:`WINDOW_STATE` row says the index was built with ``radius`` and with
    the bodies this code makes (:data:`~pmm.text.window_keys.WINDOW_BODY_FORMAT`)."""
    return state is not None and tuple(state) == (radius, WINDOW_BODY_FORMAT)


def built_radius(conn: psycopg.Connection[Any]) -> int:
    """The radius the window index was built with (-1: never built, or built with
    another body format than this code's)."""
    row = conn.execute(WINDOW_STATE).fetchone()
    return int(row[0]) if row and row[1] == WINDOW_BODY_FORMAT else -1


def rebuild_windows(conn: psycopg.Connection[Any], radius: int) -> int:
    """Rebuild every window row with ``radius`` (the caller holds the append lock);
    returns how many rows were written."""
    conn.execute("DELETE FROM event_windows")
    written = 0
    for session, session_rows in _sessions(conn):
        every = {r[0] for r in session_rows}
        texts = window_bodies([WindowRow(r[0], r[1], r[3]) for r in session_rows], radius, every)
        ts_kind = {r[0]: (r[2], r[1]) for r in session_rows}
        written += _upsert(
            conn,
            [
                (i, session, ts_kind[i][1], text, date_words(ts_kind[i][0]))
                for i, text in texts.items()
            ],
        )
    conn.execute(
        "UPDATE window_state SET radius = %s, body_format = %s", (radius, WINDOW_BODY_FORMAT)
    )
    return written


def _sessions(
    conn: psycopg.Connection[Any],
) -> Iterator[tuple[str | None, list[tuple[Any, ...]]]]:
    """Every session's turns and clear markers, in id order, one session at a time."""
    current: list[tuple[Any, ...]] = []
    session: str | None = None
    with conn.cursor(name="pmm_windows") as cur:
        cur.itersize = 5000
        cur.execute(
            f"SELECT session_id, {_ROW} FROM events WHERE kind = ANY(%s)"
            " ORDER BY session_id NULLS FIRST, id",
            (TAIL_KINDS,),
        )
        first = True
        for sid, *row in cur:
            if not first and sid != session:
                yield session, current
                current = []
            session, first = sid, False
            current.append(tuple(row))
    if current:
        yield session, current
