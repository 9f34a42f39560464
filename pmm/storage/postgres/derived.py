"""Derived data of the PostgreSQL log: digests, vectors, edges and keyword search.

Nothing here touches the chain: these columns and tables are an index over the raw text,
recomputable at any time. Mixed into :class:`pmm.storage.postgres.PostgresEventStore`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.storage.postgres.connection import PostgresBase
from pmm.storage.postgres.rows import BUMP, DATA_VERSION, filters
from pmm.storage.postgres.vectors import PGVECTOR, ensure_index, search_candidates, vector_literal
from pmm.storage.postgres.windows import window_weights
from pmm.storage.shared import TextSearch
from pmm.storage.terms import QueryTerms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

KEY_WEIGHTS = {"content": "B", "digest": "A"}
"""The weight of the turn tsvector that the content-only and digest-only keys search."""


class DerivedData(PostgresBase):
    """Digests, vectors, edges and search over the ``events`` table."""

    _lexemes: tuple[int, dict[str, float] | None]
    vector_backend: str

    # -- derived data ----------------------------------------------------------------

    def set_digests(self, digests: Iterable[tuple[int, str, Sequence[str], str]]) -> int:
        """Store ``(event_id, summary, keywords, method)`` per event; the text and the
        chain are untouched. A row redacted meanwhile gets no digest. Returns the count."""
        rows = [
            (summary, json.dumps(list(keywords), ensure_ascii=False), method, event_id)
            for event_id, summary, keywords, method in digests
        ]
        if not rows:
            return 0
        updated = 0
        with self._db.write() as conn, conn.cursor() as cur:
            for row in rows:
                cur.execute(
                    "UPDATE events SET summary = %s, keywords = %s, digest_method = %s"
                    " WHERE id = %s AND content IS NOT NULL",
                    row,
                )
                updated += cur.rowcount
            cur.execute(BUMP)
        return updated

    def put_embeddings(self, model: str, dim: int, vectors: Iterable[tuple[int, bytes]]) -> int:
        """Store float32 vectors (as bytes) of ``model``, replacing old ones; events whose
        text was redacted meanwhile get none. Returns how many were stored."""
        pgvector = self.vector_backend == PGVECTOR
        column, value, update = (
            (", vec", ", %s::vector", ", vec = excluded.vec") if pgvector else ("", "", "")
        )
        sql = (
            f"INSERT INTO embeddings(event_id, model, dim, vector{column}, shard)"
            f" SELECT %s, %s, %s, %s{value}, shard FROM events"
            " WHERE id = %s AND content IS NOT NULL"  # its event's partition (migrations/0009)
            " ON CONFLICT (event_id, model, shard) DO UPDATE"
            f" SET dim = excluded.dim, vector = excluded.vector{update}"
        )
        stored = 0
        with self._db.write() as conn, conn.cursor() as cur:
            if pgvector:
                ensure_index(conn, model, dim)
            for event_id, blob in vectors:
                extra = (vector_literal(blob),) if pgvector else ()
                cur.execute(sql, (event_id, model, dim, blob, *extra, event_id))
                stored += cur.rowcount
            cur.execute(BUMP)
        return stored

    def search_vectors(
        self,
        model: str,
        query: npt.NDArray[np.float32],
        k: int,
        *,
        session_id: str | None = None,
        kinds: Sequence[str] | None = None,
        exclude_ids: Iterable[int] = (),
        user_id: str | None = None,
    ) -> list[tuple[int, float]] | None:
        """The ``k`` events whose ``model`` vectors are nearest ``query`` by pgvector's HNSW
        index, re-scored exactly: ``(event_id, cosine)`` best first; None without pgvector
        (the caller searches :meth:`embeddings` itself then)."""
        if self.vector_backend != PGVECTOR:
            return None
        return search_candidates(
            self._db, model, query, k, session_id=session_id, kinds=kinds,
            exclude_ids=exclude_ids, user_id=user_id,
        )  # fmt: skip

    def _vectors(
        self, model: str, *, after_id: int = 0, ids: Sequence[int] | None = None
    ) -> list[tuple[int, bytes]]:
        if ids is None:
            sql = "event_id > %s"
            where: Any = after_id
        else:
            sql, where = "event_id = ANY(%s)", list(ids)
        rows = self._db.read(
            f"SELECT event_id, vector FROM embeddings WHERE model = %s AND {sql} ORDER BY event_id",
            (model, where),
        )
        return [(int(r[0]), bytes(r[1])) for r in rows]

    def embedding_models(self) -> dict[str, int]:
        """How many vectors each model has stored."""
        rows = self._db.read("SELECT model, count(*) FROM embeddings GROUP BY model ORDER BY 1")
        return {r[0]: int(r[1]) for r in rows}

    def data_version(self) -> tuple[int, int]:
        """A value that changes whenever the log is written, by any connection: the
        counter every update and delete bumps, and the newest id (appends)."""
        row = self._db.read(f"SELECT {DATA_VERSION}, (SELECT coalesce(max(id), 0) FROM events)")[0]
        return int(row[0]), int(row[1])

    def add_edges(self, edges: Iterable[tuple[int, int, str]]) -> None:
        """Record ``(src, dst, kind)`` links, e.g. a session summary SUMMARIZES a turn."""
        with self._db.write() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO edges(src, dst, kind) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                list(edges),
            )

    # -- search, statistics, verification ----------------------------------------------

    def _ranked(self, terms: QueryTerms, search: TextSearch) -> list[tuple[int, float]]:
        """Full-text rank (``ts_rank_cd``) over the key's tsvector (the turn's, or the window
        key's of :mod:`pmm.storage.postgres.windows`); PostgreSQL indexes each row in the
        transaction that writes it. A session's (or a user's) rows are read first through
        its index."""
        key, session_id, user_id = search.key, search.session_id, search.user_id
        one = "plainto_tsquery('english', %s)"
        if key in KEY_WEIGHTS:
            # The word's lexemes, each restricted to the key's weight ('lisbon':A): the turn
            # tsvector holds summary and keywords as A, content as B.
            one = (
                f"(SELECT coalesce(string_agg(quote_literal(l) || ':{KEY_WEIGHTS[key]}', ' | '),"
                " '')::tsquery FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS l"
                " WHERE strpos(l, E'\\\\') = 0)"
            )
        tsquery = " || ".join([one] * len(terms.words))
        where, params = filters(session_id, search.kinds, None, None, user_id)
        table, rank = "events", "ts_rank_cd(search, q)"
        if key == "window":
            table = "(SELECT event_id AS id, session_id, kind, search FROM event_windows)"
            if user_id is not None:
                table = (
                    "(SELECT w.event_id AS id, w.session_id, w.kind, w.search, e.user_id"
                    " FROM event_windows w JOIN events e ON e.id = w.event_id)"
                )
            # Normalised by length (| 1: divided by 1 + log(length)), as BM25 does: a turn's
            # window that holds more turns must not outrank the turn itself.
            rank = f"ts_rank_cd('{window_weights(search.date_weight)}', search, q, 1)"
        order = "score DESC, id DESC"
        if terms.common:
            rank, order = "0.0", "id DESC"
        # A session's (or a user's) rows are read first through its index (a few hundred,
        # typically): the planner would otherwise walk the words' posting lists over every
        # session.
        scoped = session_id is not None or user_id is not None
        source = f"(SELECT id, search FROM {table} AS base{where})" if scoped else table
        where = "" if scoped else where.replace(" WHERE ", " AND ")
        sql = (
            f"WITH t(q) AS (SELECT {tsquery}) SELECT id, {rank} AS score"
            f" FROM {source} AS e, t WHERE search @@ q{where} ORDER BY {order} LIMIT %s"
        )
        if scoped:
            sql = sql.replace(f" FROM {source} AS e", " FROM scoped AS e")
            sql = f"WITH scoped AS MATERIALIZED {source}, " + sql.removeprefix("WITH ")
            rows = self._db.read(sql, [*params, *terms.words, int(search.limit)])
        else:
            rows = self._db.read(sql, [*terms.words, *params, int(search.limit)])
        return [(int(r[0]), float(r[1])) for r in rows]

    def _symbol_hits(self, needles: list[str], search: TextSearch) -> list[tuple[int, float]]:
        """A scan of the filtered rows (``strpos`` over the content and the summary)."""
        where, params = filters(search.session_id, search.kinds, None, None, search.user_id)
        found = " + ".join(
            "(strpos(coalesce(content, ''), %s) > 0 OR strpos(coalesce(summary, ''), %s) > 0)::int"
            for _ in needles
        )
        sql = (
            f"SELECT id, n FROM (SELECT id, {found} AS n FROM events{where}) AS m"
            " WHERE n > 0 ORDER BY n DESC, id DESC LIMIT %s"
        )
        pairs = [n for needle in needles for n in (needle, needle)]
        rows = self._db.read(sql, [*pairs, *params, int(search.limit)])
        return [(int(r[0]), float(r[1])) for r in rows]

    def _term_counts(self, words: list[str], indexed: int) -> dict[str, int]:
        """Estimates (see :meth:`_estimates`: from ``pg_stats``, 0 for a word not among the
        most common lexemes)."""
        return self._estimates(words, indexed)

    def _estimates(self, words: list[str], indexed: int) -> dict[str, int]:
        """About how many of the ``indexed`` events hold each word, from the lexeme
        statistics PostgreSQL keeps for the ``search`` column (``pg_stats.most_common_elems``,
        refreshed by autoanalyze): a word's most common lexeme's share of the events; a word
        whose lexemes are not among the most common counts as rare (0)."""
        shares = self._lexeme_shares(indexed)
        rows = self._db.read(
            "SELECT w, coalesce(array(SELECT unnest(tsvector_to_array(to_tsvector('english', w)))),"
            " '{}') FROM unnest(%s::text[]) AS w",
            (words,),
        )
        return {
            word: int(max((shares.get(x, 0.0) for x in lexemes), default=0.0) * indexed)
            for word, lexemes in rows
        }

    def _lexeme_shares(self, indexed: int) -> dict[str, float]:
        """Share of events holding each of the most common lexemes (cached until the log
        grows by 10%). A table never analysed is analysed first (once)."""
        analysed_at, cached = self._lexemes
        if cached is not None and indexed <= analysed_at * 1.1:
            return cached
        query = (
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
            " WHERE schemaname = current_schema() AND tablename = 'events'"
            " AND attname = 'search'"
        )
        rows = self._db.read(query)
        if not rows:  # not analysed yet (a bulk load outran autoanalyze): do it once now
            self._db.run("ANALYZE events")
            rows = self._db.read(query)
        shares: dict[str, float] = {}
        if rows and rows[0][0]:
            shares.update(zip(rows[0][0], rows[0][1], strict=False))
        self._lexemes = (indexed, shares)
        return shares

    def delete_embeddings(self, model: str) -> int:
        """Drop every vector of ``model``; returns how many."""
        with self._db.write() as conn:
            deleted = conn.execute("DELETE FROM embeddings WHERE model = %s", (model,)).rowcount
            conn.execute(BUMP)
        return deleted

    def embedding_stats(self, model: str) -> tuple[int, int, int]:
        """``(count, sum of event ids, data version)`` of ``model``'s vectors: a
        fingerprint that tells a vector cache when to reload (see the SQLite store)."""
        row = self._db.read(
            "SELECT count(*), coalesce(sum(event_id), 0),"
            f" {DATA_VERSION} FROM embeddings WHERE model = %s",
            (model,),
        )[0]
        return int(row[0]), int(row[1]), int(row[2])

    def sync_search_index(self) -> int:
        """Nothing to do: PostgreSQL indexes each row as it is written. Returns 0."""
        return 0

    def search_index_upto(self) -> int:
        """The newest event id the full-text index holds: every event, at once."""
        return int(self._db.read("SELECT coalesce(max(id), 0) FROM events")[0][0])
