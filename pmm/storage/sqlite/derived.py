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
from typing import Any

from pmm.records import Event
from pmm.storage.sqlite.connection import SqliteBase, translate
from pmm.storage.sqlite.rows import COLUMNS

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

    def undigested(
        self, *, kinds: Iterable[str], limit: int | None = None, after_id: int = 0
    ) -> list[Event]:
        """Events of these kinds that have text but no digest yet, oldest first.

        Read through the partial index of undigested rows (migrations/0004), named: left to
        itself SQLite walks the kind index over every turn, digested ones included, so each
        batch of a dream cost more as the log grew (issue 22: 360 turns/s at 100,000)."""
        kind_list = list(kinds)
        sql = (
            f"SELECT {COLUMNS} FROM events INDEXED BY events_undigested"
            " WHERE digest_method IS NULL AND id > ?"
            f" AND content IS NOT NULL AND kind IN ({','.join('?' * len(kind_list))})"
            " ORDER BY id"
        )
        params: list[Any] = [after_id, *kind_list]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [self._text.event(r) for r in self._read(sql, params)]

    def count_undigested(self, *, kinds: Iterable[str]) -> int:
        """How many events of these kinds wait for a digest (a walk of the pending rows
        only, through the partial index, as :meth:`undigested`)."""
        kind_list = list(kinds)
        sql = (
            "SELECT count(*) FROM events INDEXED BY events_undigested"
            " WHERE digest_method IS NULL AND content IS NOT NULL"
            f" AND kind IN ({','.join('?' * len(kind_list))})"
        )
        return int(self._read(sql, kind_list)[0][0])

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

    def embeddings(self, model: str, *, after_id: int = 0) -> list[tuple[int, bytes]]:
        """``(event_id, vector bytes)`` of ``model`` for events with ids above ``after_id``."""
        return [
            (r[0], r[1])
            for r in self._read(
                "SELECT event_id, vector FROM embeddings WHERE model = ? AND event_id > ?"
                " ORDER BY event_id",
                (model, after_id),
            )
        ]

    def embeddings_of(self, model: str, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """``(event_id, vector bytes)`` of ``model`` for the events ``ids`` that have one,
        by id (a few sessions' vectors, without loading every vector of the model)."""
        found: list[tuple[int, bytes]] = []
        wanted = sorted(set(ids))
        for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
            chunk = wanted[start : start + 500]
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

    def unembedded(
        self, model: str, *, kinds: Iterable[str], limit: int | None = None
    ) -> list[Event]:
        """Events of these kinds with text and no vector of ``model`` yet, oldest first."""
        kind_list = list(kinds)
        sql = (
            f"SELECT {COLUMNS} FROM events e WHERE content IS NOT NULL"
            f" AND kind IN ({','.join('?' * len(kind_list))}) AND NOT EXISTS"
            " (SELECT 1 FROM embeddings m WHERE m.event_id = e.id AND m.model = ?) ORDER BY id"
        )
        params: list[Any] = [*kind_list, model]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [self._text.event(r) for r in self._read(sql, params)]

    def delete_embeddings(self, model: str) -> int:
        """Drop every vector of ``model``; returns how many."""
        with self._lock, self._write() as conn:
            return conn.execute("DELETE FROM embeddings WHERE model = ?", (model,)).rowcount

    def count_unembedded(self, model: str, *, kinds: Iterable[str]) -> int:
        """How many events :meth:`unembedded` would return."""
        kind_list = list(kinds)
        sql = (
            "SELECT count(*) FROM events e WHERE content IS NOT NULL"
            f" AND kind IN ({','.join('?' * len(kind_list))}) AND NOT EXISTS"
            " (SELECT 1 FROM embeddings m WHERE m.event_id = e.id AND m.model = ?)"
        )
        return int(self._read(sql, [*kind_list, model])[0][0])

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
