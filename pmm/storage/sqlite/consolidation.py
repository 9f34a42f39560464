"""Consolidation on SQLite: edges between events, session summaries appended at most once,
and supersession markers (the SQL behind :mod:`pmm.dream.consolidation`). Mixed into
:class:`pmm.storage.sqlite.EventStore`::

    store.add_edges([(summary.id, turn.id, "summarizes")])
    store.edge_targets([summary.id], "summarizes")     # {summary.id: [turn.id, ...]}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pmm.records import Event, NewEvent
from pmm.storage.shared import EdgeSide
from pmm.storage.sqlite.log import EventLogData
from pmm.storage.sqlite.rows import COLUMNS
from pmm.storage.summaries import covering_summary, summary_edges


class ConsolidationData(EventLogData):
    """Edges, session summaries and supersession (appends through :class:`EventLogData`)."""

    # -- derived data: edges ---------------------------------------------------------

    def add_edges(self, edges: Iterable[tuple[int, int, str]]) -> None:
        """Record ``(src, dst, kind)`` links, e.g. a session summary SUMMARIZES a turn."""
        with self._lock, self._write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO edges(src, dst, kind) VALUES (?,?,?)", list(edges)
            )

    # -- consolidation: session summaries, supersession (pmm/dream/consolidation.py) -----------

    def summary_candidates(self, *, kinds: Iterable[str]) -> list[tuple[str, int, int]]:
        """``(session_id, digested turns, newest digested turn id)`` per session, counting
        the turns of ``kinds`` after the session's last ``clear`` marker that hold text and
        a digest: what a session summary would cover."""
        kind_list = list(kinds)
        sql = (
            "SELECT e.session_id, count(*), max(e.id) FROM events e"
            f" WHERE e.kind IN ({','.join('?' * len(kind_list))})"
            " AND e.session_id IS NOT NULL AND e.content IS NOT NULL"
            " AND e.summary IS NOT NULL AND e.digest_method IS NOT NULL"
            " AND e.digest_method != 'redacted'"
            " AND e.id > coalesce((SELECT max(c.id) FROM events c"
            "   WHERE c.session_id = e.session_id AND c.kind = 'clear'), 0)"
            " GROUP BY e.session_id ORDER BY e.session_id"
        )
        return [(r[0], int(r[1]), int(r[2])) for r in self._read(sql, kind_list)]

    def summary_turns(self, session_id: str, *, kinds: Iterable[str], upto: int) -> list[Event]:
        """The digested turns a session summary covers: ``kinds`` after the session's last
        ``clear`` marker, up to id ``upto``, oldest first."""
        kind_list = list(kinds)
        sql = (
            f"SELECT {COLUMNS} FROM events WHERE session_id = ?"
            f" AND kind IN ({','.join('?' * len(kind_list))})"
            " AND content IS NOT NULL AND summary IS NOT NULL AND digest_method IS NOT NULL"
            " AND digest_method != 'redacted' AND id <= ?"
            " AND id > coalesce((SELECT max(id) FROM events"
            "   WHERE session_id = ? AND kind = 'clear'), 0) ORDER BY id"
        )
        return [
            self._text.event(r) for r in self._read(sql, [session_id, *kind_list, upto, session_id])
        ]

    def append_summary(
        self,
        summary: NewEvent,
        audit: Callable[[Event], NewEvent],
        *,
        key: str,
        covers_upto: int,
        covered_ids: Sequence[int],
        summarizes: str,
        supersedes: str,
    ) -> tuple[Event, bool]:
        """Append a session summary and its audit event, atomically and at most once.

        Inside one write transaction: if a summary of this session already has
        ``meta["key"] == key``, or the newest one already covers turns up to
        ``covers_upto`` or beyond, that one is returned with ``False``. Otherwise
        ``summary`` is appended, then ``audit(summary_event)``, with ``summarizes`` edges
        to ``covered_ids`` and a ``supersedes`` edge to the summary it replaces, and
        ``(summary_event, True)`` is returned. Two processes racing write one summary."""
        session = summary.session_id
        checked = self._check(summary)
        with self._lock, self._write() as conn:
            row = conn.execute(
                f"SELECT {COLUMNS} FROM events WHERE session_id = ? AND kind = ?"
                " ORDER BY id DESC LIMIT 1",
                (session, summary.kind),
            ).fetchone()
            newest = self._text.event(row) if row else None
            if (kept := covering_summary(newest, covers_upto)) is not None:
                return kept, False
            same = conn.execute(
                f"SELECT {COLUMNS} FROM events WHERE session_id = ? AND kind = ?"
                " AND json_extract(meta, '$.key') = ? LIMIT 1",
                (session, summary.kind, key),
            ).fetchone()
            if same is not None:
                return self._text.event(same), False
            [event] = self._append_locked(conn, [checked])
            self._append_locked(conn, [self._check(audit(event))])
            edges = summary_edges(event.id, covered_ids, newest, summarizes, supersedes)
            conn.executemany("INSERT OR IGNORE INTO edges(src, dst, kind) VALUES (?,?,?)", edges)
            return event, True

    def _edge_pairs(
        self, side: EdgeSide, ids: Sequence[int], kinds: Sequence[str]
    ) -> list[tuple[int, int]]:
        other = "dst" if side == "src" else "src"
        found: list[tuple[int, int]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found += self._read(
                f"SELECT src, dst FROM edges WHERE {side} IN ({','.join('?' * len(chunk))})"
                f" AND kind IN ({','.join('?' * len(kinds))}) ORDER BY {side}, {other}",
                [*chunk, *kinds],
            )
        return found

    def max_edge_src(self, kind: str) -> int:
        """The largest source id of a ``kind`` edge (0 when there is none): e.g. how far a
        scan that marks each event it finished has come."""
        row = self._read("SELECT max(src) FROM edges WHERE kind = ?", (kind,))[0]
        return int(row[0] or 0)

    def append_supersession(
        self, marker: NewEvent, *, newer: int, older: int, kind: str
    ) -> Event | None:
        """Record that ``newer`` supersedes ``older``: a ``kind`` edge and the chained
        ``marker`` event, atomically; None (and nothing written) when that edge exists."""
        checked = self._check(marker)
        with self._lock, self._write() as conn:
            exists = conn.execute(
                "SELECT 1 FROM edges WHERE src = ? AND dst = ? AND kind = ?", (newer, older, kind)
            ).fetchone()
            if exists:
                return None
            conn.execute("INSERT INTO edges(src, dst, kind) VALUES (?,?,?)", (newer, older, kind))
            return self._append_locked(conn, [checked])[0]
