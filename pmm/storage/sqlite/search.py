"""Keyword search on SQLite: the FTS5 indexes (turn/content/digest keys, and the window/date
key of :mod:`pmm.storage.sqlite.windows`), keeping them in step, and BM25 ranking. Mixed
into :class:`pmm.storage.sqlite.EventStore`::

    store.search_text("Lisbon", session_id="alice")            # [(event_id, score)]
    store.search_text("what did I do last May", key="window")
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable

from pmm.storage.shared import TextSearch
from pmm.storage.sqlite.connection import SqliteBase, translate
from pmm.storage.sqlite.rows import filters
from pmm.storage.sqlite.stored_text import TEXT_SQL
from pmm.storage.sqlite.windows import (
    replace_windows,
    session_windows,
    sync_windows,
    user_tag,
    windows_pending,
)
from pmm.storage.terms import QueryTerms
from pmm.text.stemmer import folded, query_tokens
from pmm.text.window_keys import WINDOW_KINDS, WINDOW_SKIP

log = logging.getLogger(__name__)

FTS_DELETE = (
    "INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)"
    " SELECT 'delete', id, summary, keywords, content, tags FROM events_fts_source WHERE id = ?"
)
"""Take one event (``(id,)``) out of the turn index, with the very values it was indexed with."""
FTS_INSERT = (
    "INSERT INTO events_fts(rowid, summary, keywords, content, tags)"
    " SELECT id, summary, keywords, content, tags FROM events_fts_source WHERE id = ?"
)
"""Index one event (``(id,)``) as the log holds it now."""

_SEARCH_KEYS = {
    "turn": ("events_fts", "{summary keywords content}", "bm25(events_fts, 2.0, 3.0, 1.0, 0.0)"),
    "content": ("events_fts", "{content}", "bm25(events_fts, 0.0, 0.0, 1.0, 0.0)"),
    "digest": ("events_fts", "{summary keywords}", "bm25(events_fts, 2.0, 3.0, 0.0, 0.0)"),
    "window": ("events_window_fts", "{body dates}", "bm25(events_window_fts, 1.0, 1.0, 0.0)"),
}
"""Search keys: (FTS table, columns searched, BM25 expression)."""


SHADOW_FTS = (
    "CREATE VIRTUAL TABLE temp.events_fts USING fts5(summary, keywords, content, tags,"
    " content = '', detail = column, tokenize = 'porter unicode61 remove_diacritics 2')"
)
"""The turn index as migrations/0011 defines it, contentless (only ``rowid`` and ``bm25``
are read from it), in the connection's temporary schema: see
:meth:`SearchIndex._shadow_index`."""


def _fts_phrase(text: str) -> str:
    """``text`` as an FTS5 string: searched as plain words, never as query syntax."""
    return '"' + text.replace('"', '""') + '"'


def _fts_word(word: str, skip: frozenset[str] = frozenset()) -> str:
    """A query word as FTS5 query text: one token as a string, a word FTS5 splits into
    several (``don't``, ``o'brien``) as the AND of them, less those whose terms are in
    ``skip`` (terms the index leaves out) unless that is all of them. Never a phrase of
    two or more tokens: the turn index keeps no positions (detail=column,
    migrations/0011), and FTS5 refuses phrase queries on it."""
    tokens = query_tokens(word)
    if skip and len(tokens) > 1:
        tokens = [t for t in tokens if folded(t) not in skip] or tokens
    if len(tokens) <= 1:  # no token at all: an empty string, which matches nothing
        return _fts_phrase(tokens[0] if tokens else "")
    return "(" + " AND ".join(_fts_phrase(t) for t in tokens) + ")"


def _session_tag(session_id: str) -> str:
    """The token the FTS ``tags`` column holds for a session (see migrations/0003)."""
    return "s" + session_id.encode("utf-8").hex() + "0"


class SearchIndex(SqliteBase):
    """The full-text indexes and :meth:`search_text`."""

    _doc_freq: dict[str, tuple[int, int]]  # term -> (docs, indexed rows then)
    _shadow: tuple[int, int] | None = None
    """(``data_version``, newest id indexed) of the in-memory turn index of a store that
    cannot write (:meth:`_shadow_index`), or None."""

    def rebuild_search_indexes(self, conn: sqlite3.Connection) -> None:
        """Rebuild every full-text index derived from event text, inside the caller's
        write transaction (``conn``), so that erased text leaves no term behind (FTS5 keeps
        deleted terms in its segments until they are merged). Used by erasure and
        compaction; every text-derived index belongs here."""
        conn.execute("INSERT INTO events_fts(events_fts) VALUES ('rebuild')")
        conn.execute(
            "UPDATE fts_state SET indexed_upto = (SELECT coalesce(max(id), 0) FROM events)"
        )
        # The window/date index stores no text (it is contentless): rebuild it from the
        # log as it is now ('delete-all' drops every segment), then merge its segments.
        sync_windows(conn, self.window_radius, rebuild=True)
        conn.execute("INSERT INTO events_window_fts(events_window_fts) VALUES ('optimize')")
        self._doc_freq.clear()

    # -- full-text search ------------------------------------------------------------

    def sync_search_index(self) -> int:
        """Index every event appended since the last call, and bring the window/date keys
        up to date (new turns, and the neighbours of turns appended, redacted or
        compacted since); returns how many events were newly indexed.

        A read-only store indexes nothing in the file: the turn index is then built in
        the connection's own temporary schema (:meth:`_shadow_index`), so keyword search
        still finds every event; the window/date key stays as the file holds it (said
        once, in a warning). A store refused after damage searches the file's index as it
        is, and says once how many events it lacks."""
        upto, newest = self._read(
            "SELECT (SELECT indexed_upto FROM fts_state), (SELECT max(id) FROM events)"
        )[0]
        if self.read_only_reason is not None:
            self._shadow_index(upto, newest or 0)
            return 0
        if self.refusal() is not None:  # searched as the file holds it: no more reads of it
            if newest and newest > upto:
                self._warn_unindexed(newest - upto)
            return 0
        if (not newest or newest <= upto) and not self._windows_pending():
            return 0
        with self._lock, self._write() as conn:
            return self._sync_locked(conn)

    def _shadow_index(self, upto: int, newest: int) -> None:
        """Give a store that cannot write a turn index holding every event: while the
        file's index lags (``upto < newest``), a copy of it, built from the log, lives in
        the connection's ``temp`` schema, where the unqualified name ``events_fts`` finds
        it first (nothing is written to the file). It is rebuilt when another connection
        commits (``PRAGMA data_version``), so a writer's redactions never linger in it,
        and dropped once the file's own index is complete again."""
        with self._lock:
            try:
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
                if newest <= upto:
                    if self._shadow is not None:
                        self._conn.execute("DROP TABLE temp.events_fts")
                        self._shadow = None
                        self._doc_freq.clear()
                    return
                if self._shadow is not None and self._shadow[0] == version:
                    return
                self._conn.execute("DROP TABLE IF EXISTS temp.events_fts")
                self._conn.execute(SHADOW_FTS)
                self._conn.execute(
                    "INSERT INTO temp.events_fts(rowid, summary, keywords, content, tags)"
                    " SELECT id, summary, keywords, content, tags FROM main.events_fts_source"
                    " WHERE id <= ?",
                    (newest,),
                )
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
            self._shadow = (version, newest)
            self._doc_freq.clear()
        log.info(
            "%s cannot be written: its full-text index lacks %d events, so it was built "
            "in memory for this connection",
            self.path,
            newest - upto,
        )

    def _sync_locked(self, conn: sqlite3.Connection) -> int:
        """:meth:`sync_search_index` inside the caller's write transaction."""
        upto = conn.execute("SELECT indexed_upto FROM fts_state").fetchone()[0]
        newest = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0
        if newest > upto:
            conn.execute(
                "INSERT INTO events_fts(rowid, summary, keywords, content, tags)"
                " SELECT id, summary, keywords, content, tags FROM events_fts_source"
                " WHERE id > ? AND id <= ?",
                (upto, newest),
            )
            conn.execute("UPDATE fts_state SET indexed_upto = ?", (newest,))
        if windows_pending(conn, self.window_radius):
            sync_windows(conn, self.window_radius)
        return int(max(0, newest - upto))

    def erase_search_terms(
        self,
        conn: sqlite3.Connection,
        placed: dict[str | None, list[int]],
        erase_text: Callable[[], object],
    ) -> None:
        """Run ``erase_text`` (which clears the text, summary and keywords of the events
        ``placed`` lists, ``{session: [ids]}``) inside the caller's write transaction and
        keep both full-text indexes exact, touching only those events: the turn index
        deletes their rows (the update trigger does it for plain text; compressed rows
        here, through the decoding view), the window index rewrites the windows of their
        sessions that change. Then both indexes merge their segments into one
        (``optimize``): FTS5 keeps a deleted term in its old segments until they are
        merged, and the merge drops it. With ``PRAGMA secure_delete`` on, the old segments'
        pages are zeroed as they are freed. Far cheaper than :meth:`rebuild_search_indexes`
        on a large file, which re-reads every text."""
        self._sync_locked(conn)  # every event indexed, windows in step: deletes are exact
        ids = sorted(i for found in placed.values() for i in found)
        packed: list[tuple[int]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            packed += conn.execute(
                "SELECT id FROM events WHERE typeof(content) = 'blob'"
                f" AND id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        before = session_windows(conn, placed, self.window_radius)
        conn.executemany(FTS_DELETE, packed)  # the trigger skips compressed rows
        erase_text()
        conn.executemany(FTS_INSERT, packed)
        replace_windows(conn, before, session_windows(conn, placed, self.window_radius))
        conn.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        conn.execute("INSERT INTO events_window_fts(events_window_fts) VALUES ('optimize')")
        self._doc_freq.clear()

    def _windows_pending(self) -> bool:
        with self._lock:
            try:
                return windows_pending(self._conn, self.window_radius)
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc

    def _warn_unindexed(self, count: int) -> None:
        if not getattr(self, "_warned_unindexed", False):
            self._warned_unindexed = True
            log.warning(
                "%s: writes are refused after damage; its %d newest events are not in the "
                "full-text index, so keyword search does not find them",
                self.path,
                count,
            )

    def _warn_windows_unindexed(self) -> None:
        """Say once that the window/date key of a store that cannot write lacks the turns
        appended after the file last indexed them (that key is not built in memory)."""
        if getattr(self, "_warned_windows", False):
            return
        upto, newest = self._read(
            "SELECT (SELECT indexed_upto FROM window_state), (SELECT max(id) FROM events)"
        )[0]
        if newest and newest > upto:
            self._warned_windows = True
            log.warning(
                "%s cannot be written: its %d newest events are not in the window/date "
                "index, so a window search does not find them (copy the file somewhere "
                "writable to index them)",
                self.path,
                newest - upto,
            )

    def search_index_upto(self) -> int:
        """The newest event id the full-text index holds (later ones are indexed by the
        next :meth:`sync_search_index`)."""
        if self._shadow is not None:
            return self._shadow[1]
        return int(self._read("SELECT indexed_upto FROM fts_state")[0][0])

    def _ranked(self, terms: QueryTerms, search: TextSearch) -> list[tuple[int, float]]:
        """BM25 over the FTS5 index of ``search.key``; a session's or a user's tag lets FTS
        read only their postings."""
        key, session_id, user_id = search.key, search.session_id, search.user_id
        if key == "window" and self.read_only_reason is not None:
            self._warn_windows_unindexed()
        table, columns, rank = _SEARCH_KEYS[key]
        if key == "window":
            rank = f"bm25(events_window_fts, 1.0, {float(search.date_weight)!r}, 0.0)"
        skip = WINDOW_SKIP if key == "window" else frozenset()
        match = columns + " : (" + " OR ".join(_fts_word(t, skip) for t in terms.words) + ")"
        # The session tag lets FTS read only this session's postings. Kinds are filtered
        # in SQL: as a tag they would match most rows, and BM25 would read them all.
        if session_id is not None:
            match += " AND tags : " + _fts_phrase(_session_tag(session_id))
        if user_id is not None:
            match += " AND tags : " + _fts_phrase(user_tag(user_id))
        kind_list = search.kinds
        if key == "window" and kind_list is not None and set(WINDOW_KINDS) <= set(kind_list):
            kind_list = None  # only these kinds have window rows: the filter would keep all
        where, params = filters(session_id, kind_list, None, None, user_id)
        where = where.replace(" WHERE ", " AND ")
        order = "rank"
        if terms.common:
            rank, order = "0.0", "e.id DESC"
        if where:
            sql = (
                f"SELECT e.id, {rank} AS rank FROM {table}"
                f" JOIN events e ON e.id = {table}.rowid"
                f" WHERE {table} MATCH ?{where} ORDER BY {order} LIMIT ?"
            )
        else:
            # Nothing to filter: an index row's rowid is its event's id and events are
            # never deleted, so the join would keep every row; without it the same rows
            # come in the same order (the same scan feeds the same sorter), 2-3 ms sooner
            # at 100,000 events (tests/storage/sqlite/test_search_unjoined.py compares them).
            order = "score" if order == "rank" else "rowid DESC"
            sql = (
                f"SELECT rowid, {rank} AS score FROM {table}"
                f" WHERE {table} MATCH ? ORDER BY {order} LIMIT ?"
            )
        return [(r[0], -r[1]) for r in self._read(sql, [match, *params, int(search.limit)])]

    def _symbol_hits(self, needles: list[str], search: TextSearch) -> list[tuple[int, float]]:
        """A scan of the filtered rows (``instr`` over the decoded text and the summary)."""
        where, params = filters(search.session_id, search.kinds, None, None, search.user_id)
        found = " + ".join(
            "(instr(coalesce(t, ''), ?) > 0 OR instr(coalesce(s, ''), ?) > 0)" for _ in needles
        )
        sql = (
            f"SELECT id, {found} AS n FROM (SELECT id, {TEXT_SQL} AS t, summary AS s FROM events"
            f"{where}) WHERE n > 0 ORDER BY n DESC, id DESC LIMIT ?"
        )
        pairs = [n for needle in needles for n in (needle, needle)]
        return [(r[0], float(r[1])) for r in self._read(sql, [*pairs, *params, int(search.limit)])]

    def _term_counts(self, words: list[str], indexed: int) -> dict[str, int]:
        """How many indexed events hold each word in the turn key (a count per word, cached
        until the index grows by 10%)."""
        return {w: self._document_frequency(w, indexed) if w.strip() else 0 for w in words}

    def _document_frequency(self, word: str, indexed: int) -> int:
        """How many indexed events hold ``word`` (cached until the index grows by 10%)."""
        cached = self._doc_freq.get(word)
        if cached is not None and indexed <= cached[1] * 1.1:
            return cached[0]
        docs = int(
            self._read(
                "SELECT count(*) FROM events_fts WHERE events_fts MATCH ?",
                ("{summary keywords content} : " + _fts_word(word),),
            )[0][0]
        )
        if len(self._doc_freq) > 50_000:
            self._doc_freq.clear()
        self._doc_freq[word] = (docs, indexed)
        return docs
