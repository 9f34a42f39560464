"""Derived data of the PostgreSQL log: digests, vectors, edges and keyword search.

Nothing here touches the chain: these columns and tables are an index over the raw text,
recomputable at any time. Mixed into :class:`pmm.storage.postgres.PostgresEventStore`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.errors import InvalidInputError
from pmm.records import Event, event_from_row
from pmm.storage.postgres.connection import Database
from pmm.storage.postgres.rows import BUMP, COLUMNS, DATA_VERSION, filters
from pmm.storage.postgres.vectors import PGVECTOR, ensure_index, search_candidates, vector_literal
from pmm.storage.postgres.windows import window_weights
from pmm.storage.terms import COMMON_TERM_MIN_DOCS, checked_words, pick_terms
from pmm.text.words import search_terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

SEARCH_KEYS = ("turn", "content", "digest", "window")
"""The keys search_text knows (as on SQLite)."""
KEY_WEIGHTS = {"content": "B", "digest": "A"}
"""The weight of the turn tsvector that the content-only and digest-only keys search."""


class DerivedData:
    """Digests, vectors, edges and search over the ``events`` table (needs ``self._db``)."""

    _db: Database
    _lexemes: tuple[int, dict[str, float] | None]
    vector_backend: str

    # -- derived data ----------------------------------------------------------------

    def undigested(
        self, *, kinds: Iterable[str], limit: int | None = None, after_id: int = 0
    ) -> list[Event]:
        """Events of these kinds that have text but no digest yet, oldest first."""
        sql = (
            f"SELECT {COLUMNS} FROM events WHERE digest_method IS NULL AND content IS NOT NULL"
            " AND id > %s AND kind = ANY(%s) ORDER BY id"
        )
        params: list[Any] = [after_id, list(kinds)]
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        return [event_from_row(r) for r in self._db.read(sql, params)]

    def count_undigested(self, *, kinds: Iterable[str]) -> int:
        sql = (
            "SELECT count(*) FROM events WHERE digest_method IS NULL AND content IS NOT NULL"
            " AND kind = ANY(%s)"
        )
        return int(self._db.read(sql, (list(kinds),))[0][0])

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

    def count_compacted(self) -> int:
        """Rows whose raw text was compacted away (they keep a summary)."""
        sql = "SELECT count(*) FROM events WHERE content IS NULL AND summary IS NOT NULL"
        return int(self._db.read(sql)[0][0])

    def embeddings(self, model: str, *, after_id: int = 0) -> list[tuple[int, bytes]]:
        """``(event_id, vector bytes)`` of ``model`` for events with ids above ``after_id``."""
        rows = self._db.read(
            "SELECT event_id, vector FROM embeddings WHERE model = %s AND event_id > %s"
            " ORDER BY event_id",
            (model, after_id),
        )
        return [(int(r[0]), bytes(r[1])) for r in rows]

    def embeddings_of(self, model: str, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """``(event_id, vector bytes)`` of ``model`` for the events ``ids`` that have one,
        by id (a few sessions' vectors, without loading every vector of the model)."""
        if not ids:
            return []
        rows = self._db.read(
            "SELECT event_id, vector FROM embeddings WHERE model = %s AND event_id = ANY(%s)"
            " ORDER BY event_id",
            (model, list(ids)),
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

    def edges_from(self, src: int, kind: str) -> list[int]:
        rows = self._db.read(
            "SELECT dst FROM edges WHERE src = %s AND kind = %s ORDER BY dst", (src, kind)
        )
        return [int(r[0]) for r in rows]

    # -- search, statistics, verification ----------------------------------------------

    def search_text(
        self,
        query: str,
        *,
        limit: int = 10,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        sync: bool = True,
        key: str = "turn",
        date_weight: float = 1.0,
        user_id: str | None = None,
    ) -> list[tuple[int, float]]:
        """``(event_id, score)`` by full-text rank (``ts_rank_cd``), best first, over one key:
        ``key="turn"``: the event's summary, keywords and content (``"content"`` or
        ``"digest"``: the content, or the summary and keywords, alone); ``key="window"``: the turn
        with its neighbouring turns and its date in words (turns only; ``date_weight``
        scales the date against the text, see :mod:`pmm.storage.postgres.windows`). The
        query is taken as plain words, any of which may match, never as syntax; very common
        words are dropped as on SQLite (see :mod:`pmm.storage.terms`). ``sync`` is accepted
        for parity: PostgreSQL indexes each row in the transaction that writes it.
        ``user_id`` keeps to that user's events (all her sessions), read first through
        ``events_by_user``."""
        if key not in SEARCH_KEYS:
            raise InvalidInputError(f"key must be one of {', '.join(SEARCH_KEYS)}, got {key!r}")
        words = search_terms(query)
        if not words:
            return []
        indexed = self.search_index_upto()
        frequencies = self._document_frequencies(words, indexed)
        terms = pick_terms(words, indexed, frequencies.__getitem__)
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
        where, params = filters(session_id, kinds, None, None, user_id)
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
            rank = f"ts_rank_cd('{window_weights(date_weight)}', search, q, 1)"
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
            rows = self._db.read(sql, [*params, *terms.words, int(limit)])
        else:
            rows = self._db.read(sql, [*terms.words, *params, int(limit)])
        return [(int(r[0]), float(r[1])) for r in rows]

    def search_symbols(
        self,
        needles: Sequence[str],
        *,
        limit: int = 10,
        session_id: str | None = None,
        kinds: Iterable[str] | None = None,
        user_id: str | None = None,
    ) -> list[tuple[int, float]]:
        """``(event_id, needles found)`` of the events whose content or summary holds one
        of ``needles`` (symbols the full-text index drops), most first, then newest, as on
        SQLite: a scan of the filtered rows, for queries without a word."""
        needles = [n for n in dict.fromkeys(needles) if n][:8]
        if not needles:
            return []
        kind_list = None if kinds is None else list(kinds)
        where, params = filters(session_id, kind_list, None, None, user_id)
        found = " + ".join(
            "(strpos(coalesce(content, ''), %s) > 0 OR strpos(coalesce(summary, ''), %s) > 0)::int"
            for _ in needles
        )
        sql = (
            f"SELECT id, n FROM (SELECT id, {found} AS n FROM events{where}) AS m"
            " WHERE n > 0 ORDER BY n DESC, id DESC LIMIT %s"
        )
        pairs = [n for needle in needles for n in (needle, needle)]
        rows = self._db.read(sql, [*pairs, *params, int(limit)])
        return [(int(r[0]), float(r[1])) for r in rows]

    def _document_frequencies(self, words: list[str], indexed: int) -> dict[str, int]:
        """What :func:`pick_terms` needs: every word counts as rare (0) below
        :data:`COMMON_TERM_MIN_DOCS` indexed events, where all words are used anyway."""
        if indexed < COMMON_TERM_MIN_DOCS:
            return dict.fromkeys(words, 0)  # every word is used: no need to count
        return self._estimates(words, indexed)

    def document_frequencies(self, words: Iterable[str]) -> dict[str, int]:
        """About how many events hold each of ``words`` (see :meth:`_estimates`: from
        ``pg_stats``, 0 for a word not among the most common lexemes)."""
        wanted = checked_words(words)
        indexed = self.search_index_upto()
        if not wanted or not indexed:
            return dict.fromkeys(wanted, 0)
        return self._estimates(wanted, indexed)

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

    def unembedded(
        self, model: str, *, kinds: Iterable[str], limit: int | None = None
    ) -> list[Event]:
        """Events of these kinds with text and no vector of ``model`` yet, oldest first."""
        sql = (
            f"SELECT {COLUMNS} FROM events e WHERE content IS NOT NULL AND kind = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM embeddings m WHERE m.event_id = e.id"
            " AND m.model = %s) ORDER BY id"
        )
        params: list[Any] = [list(kinds), model]
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        return [event_from_row(r) for r in self._db.read(sql, params)]

    def count_unembedded(self, model: str, *, kinds: Iterable[str]) -> int:
        """How many events :meth:`unembedded` would return."""
        sql = (
            "SELECT count(*) FROM events e WHERE content IS NOT NULL AND kind = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM embeddings m WHERE m.event_id = e.id"
            " AND m.model = %s)"
        )
        return int(self._db.read(sql, (list(kinds), model))[0][0])

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
