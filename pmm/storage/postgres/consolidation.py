"""Consolidation data on PostgreSQL: session summaries, their edges and supersession.

The same calls and guarantees as the SQLite store's consolidation section (see
:mod:`pmm.dream.consolidation`): a summary and its audit event are appended at most once per key,
under the log's append lock, so two servers dreaming at once write one summary. Mixed into
:class:`pmm.storage.postgres.PostgresEventStore`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.events.chain import CheckedEvent, check_new_event
from pmm.records import Event, NewEvent, event_from_row
from pmm.storage.postgres.chains import lock_sessions
from pmm.storage.postgres.connection import PostgresBase
from pmm.storage.postgres.rows import COLUMNS
from pmm.storage.shared import EdgeSide
from pmm.storage.summaries import covering_summary, summary_edges

if TYPE_CHECKING:
    import psycopg

_LIVE_DIGESTED = (
    " AND content IS NOT NULL AND summary IS NOT NULL AND digest_method IS NOT NULL"
    " AND digest_method != 'redacted'"
)


class ConsolidationData(PostgresBase):
    """Summary nodes, edges between events, and supersession."""

    if TYPE_CHECKING:  # provided by PostgresEventStore

        def _append_locked(
            self, conn: psycopg.Connection[Any], checked: list[CheckedEvent]
        ) -> list[Event]: ...

    def summary_candidates(self, *, kinds: Iterable[str]) -> list[tuple[str, int, int]]:
        """``(session_id, digested turns, newest digested turn id)`` per session, counting
        the live digested turns of ``kinds`` after the session's last ``clear`` marker."""
        sql = (
            "SELECT e.session_id, count(*), max(e.id) FROM events e"
            " WHERE e.kind = ANY(%s) AND e.session_id IS NOT NULL"
            + _LIVE_DIGESTED.replace(" content", " e.content")
            .replace(" summary", " e.summary")
            .replace(" digest_method", " e.digest_method")
            + " AND e.id > coalesce((SELECT max(c.id) FROM events c"
            "   WHERE c.session_id = e.session_id AND c.kind = 'clear'), 0)"
            " GROUP BY e.session_id ORDER BY e.session_id"
        )
        return [(r[0], int(r[1]), int(r[2])) for r in self._db.read(sql, (list(kinds),))]

    def summary_turns(self, session_id: str, *, kinds: Iterable[str], upto: int) -> list[Event]:
        """The digested turns a session summary covers, oldest first."""
        sql = (
            f"SELECT {COLUMNS} FROM events WHERE session_id = %s AND kind = ANY(%s)"
            + _LIVE_DIGESTED
            + " AND id <= %s AND id > coalesce((SELECT max(id) FROM events"
            "   WHERE session_id = %s AND kind = 'clear'), 0) ORDER BY id"
        )
        rows = self._db.read(sql, (session_id, list(kinds), upto, session_id))
        return [event_from_row(r) for r in rows]

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
        """Append a session summary and its audit event, atomically and at most once (see
        :meth:`pmm.storage.sqlite.EventStore.append_summary`)."""
        checked = check_new_event(summary, self.max_content_bytes)
        with self._db.write() as conn:
            lock_sessions(conn, [summary.session_id])  # at most once per session
            row = conn.execute(
                f"SELECT {COLUMNS} FROM events WHERE session_id = %s AND kind = %s"
                " ORDER BY id DESC LIMIT 1",
                (summary.session_id, summary.kind),
            ).fetchone()
            newest = event_from_row(row) if row else None
            if (kept := covering_summary(newest, covers_upto)) is not None:
                return kept, False
            same = conn.execute(
                f"SELECT {COLUMNS} FROM events WHERE session_id = %s AND kind = %s"
                " AND meta::jsonb ->> 'key' = %s LIMIT 1",
                (summary.session_id, summary.kind, key),
            ).fetchone()
            if same is not None:
                return event_from_row(same), False
            [event] = self._append_locked(conn, [checked])
            self._append_locked(conn, [check_new_event(audit(event), self.max_content_bytes)])
            edges = summary_edges(event.id, covered_ids, newest, summarizes, supersedes)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO edges(src, dst, kind) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    edges,
                )
            return event, True

    def _edge_pairs(
        self, side: EdgeSide, ids: Sequence[int], kinds: Sequence[str]
    ) -> list[tuple[int, int]]:
        other = "dst" if side == "src" else "src"
        rows = self._db.read(
            f"SELECT src, dst FROM edges WHERE {side} = ANY(%s) AND kind = ANY(%s)"
            f" ORDER BY {side}, {other}",
            (list(ids), list(kinds)),
        )
        return [(int(src), int(dst)) for src, dst in rows]

    def max_edge_src(self, kind: str) -> int:
        """The largest source id of a ``kind`` edge (0 when there is none)."""
        row = self._db.read("SELECT max(src) FROM edges WHERE kind = %s", (kind,))[0]
        return int(row[0] or 0)

    def append_supersession(
        self, marker: NewEvent, *, newer: int, older: int, kind: str
    ) -> Event | None:
        """Record that ``newer`` supersedes ``older``: a ``kind`` edge and the chained
        ``marker`` event, atomically; None (and nothing written) when that edge exists."""
        checked = check_new_event(marker, self.max_content_bytes)
        with self._db.write() as conn:
            # The edge's primary key makes it at most once; the marker's append takes
            # its own session's and user's locks.
            inserted = conn.execute(
                "INSERT INTO edges(src, dst, kind) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (newer, older, kind),
            ).rowcount
            if not inserted:
                return None
            return self._append_locked(conn, [checked])[0]
