"""Derived data of the SQLite log: digests and embedding vectors (and the data version
vector caches watch). Nothing here touches the chain. Mixed into
:class:`pmm.storage.sqlite.EventStore`::

    store.set_digests([(ev.id, "moved to Lisbon", ["lisbon"], "rules")])
    store.put_embeddings("all-MiniLM-L6-v2", 384, [(ev.id, vector.tobytes())])
    store.embeddings("all-MiniLM-L6-v2")        # [(ev.id, b"...")]
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from pmm.storage.sqlite.connection import SqliteBase, translate

_FTS_DELETE = (
    "INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)"
    " SELECT 'delete', id, summary, keywords, content, tags FROM events_fts_source WHERE id = ?"
)
_FTS_INSERT = (
    "INSERT INTO events_fts(rowid, summary, keywords, content, tags)"
    " SELECT id, summary, keywords, content, tags FROM events_fts_source WHERE id = ?"
)


class DerivedData(SqliteBase):
    """Digests and vectors over the ``events`` table."""

    # -- derived data: digests -----------------------------------------------------

    def set_digests(self, digests: Iterable[tuple[int, str, Sequence[str], str]]) -> int:
        """Store ``(event_id, summary, keywords, method)`` for each event; the raw text and
        the chain are untouched. Returns how many rows were updated."""
        rows = [
            (summary, json.dumps(list(keywords), ensure_ascii=False), method, event_id)
            for event_id, summary, keywords, method in digests
        ]
        if not rows:
            return 0
        with self._lock, self._write() as conn:
            # The full-text triggers skip compressed rows (they cannot decode, see
            # migrations/0009): re-index those here, through the decoding view.
            packed = [
                (r[3],)
                for r in rows
                if conn.execute(
                    "SELECT 1 FROM events WHERE id = ? AND typeof(content) = 'blob'"
                    " AND id <= (SELECT indexed_upto FROM fts_state)",
                    (r[3],),
                ).fetchone()
            ]
            conn.executemany(_FTS_DELETE, packed)
            # A row redacted after its text was read for digesting keeps no digest of it.
            done = conn.executemany(
                "UPDATE events SET summary = ?, keywords = ?, digest_method = ?"
                " WHERE id = ? AND content IS NOT NULL",
                rows,
            ).rowcount
            conn.executemany(_FTS_INSERT, packed)
            return done

    # -- derived data: embeddings ----------------------------------------------------

    def put_embeddings(self, model: str, dim: int, vectors: Iterable[tuple[int, bytes]]) -> int:
        """Store float32 vectors (as bytes) of ``model`` for events, replacing old ones.

        Events whose text was redacted meanwhile get no vector (the vector would keep what
        the redaction erased). Returns how many vectors were stored.
        """
        rows = [(event_id, model, dim, blob, event_id) for event_id, blob in vectors]
        with self._lock, self._write() as conn:
            before = conn.total_changes
            conn.executemany(
                "INSERT INTO embeddings(event_id, model, dim, vector)"
                " SELECT ?, ?, ?, ? WHERE EXISTS"
                " (SELECT 1 FROM events WHERE id = ? AND content IS NOT NULL)"
                " ON CONFLICT(event_id, model) DO UPDATE"
                " SET dim = excluded.dim, vector = excluded.vector",
                rows,
            )
            # total_changes also counts the embedding_stats rows the triggers touch.
            return (conn.total_changes - before) // 2

    def _vectors(
        self, model: str, *, after_id: int = 0, ids: Sequence[int] | None = None
    ) -> list[tuple[int, bytes]]:
        if ids is None:
            rows = self._read(
                "SELECT event_id, vector FROM embeddings WHERE model = ? AND event_id > ?"
                " ORDER BY event_id",
                (model, after_id),
            )
            return [(r[0], r[1]) for r in rows]
        found: list[tuple[int, bytes]] = []
        for start in range(0, len(ids), 500):  # SQLite's bound-parameter limit
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found += [
                (r[0], r[1])
                for r in self._read(
                    f"SELECT event_id, vector FROM embeddings WHERE model = ?"
                    f" AND event_id IN ({marks}) ORDER BY event_id",
                    (model, *chunk),
                )
            ]
        return found

    def embedding_models(self) -> dict[str, int]:
        """How many vectors each model has stored."""
        return {
            r[0]: r[1]
            for r in self._read(
                "SELECT model, count(*) FROM embeddings GROUP BY model ORDER BY model"
            )
        }

    def delete_embeddings(self, model: str) -> int:
        """Drop every vector of ``model``; returns how many."""
        with self._lock, self._write() as conn:
            return conn.execute("DELETE FROM embeddings WHERE model = ?", (model,)).rowcount

    def embedding_stats(self, model: str) -> tuple[int, int, int]:
        """``(count, sum of event ids, vectors replaced in place)`` of ``model``'s vectors,
        kept by triggers (constant time): a fingerprint that tells a vector cache when
        vectors were deleted, added out of id order or overwritten."""
        row = self._read(
            "SELECT vectors, id_sum, replaced FROM embedding_stats WHERE model = ?", (model,)
        )
        return (int(row[0][0]), int(row[0][1]), int(row[0][2])) if row else (0, 0, 0)

    def data_version(self) -> tuple[int, int]:
        """A value that changes whenever the file is written, by this store or by another
        connection (``PRAGMA data_version`` and ``total_changes``): caches compare it to
        know, for a few microseconds, whether to look again."""
        with self._lock:
            try:
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
            return int(version), self._conn.total_changes
