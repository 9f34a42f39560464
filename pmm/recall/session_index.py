"""BM25 over one session's turns, in memory: the session-scoped keyword search of recall
without a full-text index query.

    from pmm.recall.session_index import SessionRanker

    ranker = SessionRanker(store)
    ranker.search("when is the pottery class?", session_id="alice", key="window")
    # -> [(event_id, bm25 score), ...] best first, like store.search_text(...)

Why: a session holds hundreds of turns, not 100,000, yet an FTS5 search restricted to one
session still reads the whole log's postings of every query word (about 2-3 ms each for
the turn and the window key at 100,000 events). Here each session's turns are tokenized
once (the same tokens FTS5 indexes, :mod:`pmm.text.stemmer`) and ranked with FTS5's BM25
formula (k1 1.2, b 0.75, the same column weights; :mod:`pmm.recall.session_bm25`), over the same
two keys, as the full-text index holds them:

- ``turn``: summary (weight 2), keywords (3) and content (1) of the turn;
- ``window``: the terms of the turn with its neighbours as the window index holds them
  (:func:`pmm.text.window_keys.window_terms`: each at most twice, no one-word stopwords;
  queries as :func:`pmm.text.window_keys.window_query_terms` reads them) and its date in words
  (weight ``date_weight``).

One difference, by design: document frequencies and lengths are the session's, not the
whole log's (an FTS5 search within a session uses the whole table's), and the query words
are the session's rarest. ``tests/recall/test_session_index.py`` checks that the top ten agree
with the FTS5 path on real chats.

It reads the log only through :class:`~pmm.storage.base.EventLog` (no SQL) and keeps in
step with it: on a new ``data_version`` a cached session reads the turns appended since
(and rewrites the windows they reach), at the next search or, for this process's own
writes, when the writer calls :meth:`SessionRanker.appended` (:class:`pmm.Mind` does after
each append: index upkeep is a cost of the write, as FTS5's is, and a read finds the
index current; the appended events are taken as given when nothing else was appended in
between). Any ``redaction`` or ``compaction`` event (redact, forget, compact) drops every
cached session, so erased words leave at once. Digests written after a turn was read
reach its ``turn`` key when its session is rebuilt (after ``max_age_s`` seconds, a
redaction or an eviction). At most ``max_sessions`` sessions are held (least recently
searched out first).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

from pmm.recall.session_bm25 import (
    TURN_WEIGHTS,
    WINDOW_WEIGHTS,
    Column,
    Key,
    turn_query,
    window_query,
)
from pmm.records import Event
from pmm.storage.watch import LogNow, LogWatch
from pmm.text.stemmer import fts_tokens, stems_and_counts
from pmm.text.window_keys import (
    BOUNDARY_KIND,
    DEFAULT_WINDOW_RADIUS,
    WINDOW_KINDS,
    WINDOW_SKIP,
    WindowRow,
    date_words,
    reached_turns,
    window_members,
    window_terms,
)

if TYPE_CHECKING:
    from pmm.storage.base import EventLog


@lru_cache(maxsize=4096)
def _date_column(day: str) -> Column:
    """The date column of a day's windows (shared by them, never modified)."""
    return Column.of(fts_tokens(date_words(day)))


@dataclass
class IndexedSession:
    """What is held of one session: its rows, and its turns in the ``turns`` and ``windows``
    keys (a user's threads share hers: :mod:`pmm.recall.user_index`)."""

    rows: list[WindowRow]
    ts: dict[int, str]
    terms: dict[int, dict[str, tuple[str, int]]]
    """a turn's terms as a window holds them (:func:`~pmm.text.window_keys.window_terms` of its
    content's, its summary's when erased)"""
    members: dict[int, tuple[int, ...]]  # the ids of the turns each window holds
    turns: Key
    windows: Key
    max_id: int
    token: tuple[int, int]
    built: float = field(default_factory=time.monotonic)


class SessionRanker:
    """In-memory BM25 of sessions' turns (see the module docstring). Thread-safe."""

    def __init__(
        self,
        store: EventLog,
        *,
        radius: int | None = None,
        max_sessions: int = 64,
        max_age_s: float = 60.0,
    ) -> None:
        self.store = store
        self.radius = (
            radius if radius is not None else getattr(store, "window_radius", DEFAULT_WINDOW_RADIUS)
        )
        self.max_sessions = max_sessions
        self.max_age_s = max_age_s
        self.builds = 0
        """Sessions read in full so far (for tests and benchmarks)."""
        self._sessions: OrderedDict[str, IndexedSession] = OrderedDict()
        self._lock = threading.Lock()
        self._watch = LogWatch(store)

    def serves(self, key: str, kinds: Iterable[str] | None) -> bool:
        """Whether :meth:`search` can answer this (turn or window key, turn kinds)."""
        if key not in ("turn", "window"):
            return False
        return kinds is not None and set(kinds) <= set(WINDOW_KINDS)

    def search(
        self,
        query: str,
        *,
        session_id: str,
        key: str = "turn",
        kinds: Iterable[str] = WINDOW_KINDS,
        limit: int = 10,
        date_weight: float = 1.0,
    ) -> list[tuple[int, float]]:
        """``(event_id, score)`` by BM25 within one session, best first (the shape of
        :meth:`EventLog.search_text`)."""
        weights: tuple[float, ...]
        if key == "turn":
            parsed, weights = turn_query(query), TURN_WEIGHTS
        else:
            parsed, weights = window_query(query), (1.0, float(date_weight))
        if limit <= 0 or not parsed.words:
            return []
        with self._lock:
            session = self._session(session_id)
            index = session.turns if key == "turn" else session.windows
            return index.rank(parsed, kinds, weights, limit)

    # -- keeping in step with the log ---------------------------------------------------

    def appended(self, events: Sequence[Event], now: LogNow | None = None) -> None:
        """This process just appended ``events`` (one transaction): index them now in the
        held sessions they belong to, so that the next search finds them current (index
        upkeep is a cost of the write, as FTS5's is). Sessions not held are left to be
        read when first searched.

        When nothing else was appended since the ranker last looked
        (:meth:`pmm.storage.watch.LogWatch.follows`) they are indexed as given, without
        reading them back; otherwise the held sessions read the log as at a search.
        ``now``: the store's state shared by the readers told about this append."""
        if not events:
            return
        with self._lock:
            mine = {s for e in events if (s := e.session_id) is not None and s in self._sessions}
            if not mine:
                return
            before = self._watch.token
            token = self._watch.follows(events, now)
            if token is None:
                for session_id in mine:
                    self._session(session_id)
                return
            kinds = (*WINDOW_KINDS, BOUNDARY_KIND)
            clock = time.monotonic()
            for session_id, session in self._sessions.items():
                if session.token != before or clock - session.built > self.max_age_s:
                    continue  # not current before this append: read at its next search
                if session_id in mine:
                    # a search between the commit and this notice may have read them already
                    new = [
                        e
                        for e in events
                        if e.session_id == session_id and e.kind in kinds and e.id > session.max_id
                    ]
                    self._add(session, new)
                session.token = token  # the new rows are these events
            self._watch.advance(events, token)

    def _session(self, session_id: str) -> IndexedSession:
        token, rewritten = self._watch.look()
        if rewritten:
            self._sessions.clear()
        session = self._sessions.get(session_id)
        if session is not None and time.monotonic() - session.built > self.max_age_s:
            session = None
        if session is None:
            session = self._build(session_id, token)
        elif session.token != token:
            self._extend(session, session_id, token)
        self._sessions[session_id] = session
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return session

    def _read(self, session_id: str, after_id: int) -> list[Event]:
        return self.store.events(
            session_id=session_id, kinds=(*WINDOW_KINDS, BOUNDARY_KIND), after_id=after_id
        )

    def _build(self, session_id: str, token: tuple[int, int]) -> IndexedSession:
        self.builds += 1
        session = IndexedSession([], {}, {}, {}, Key(TURN_WEIGHTS), Key(WINDOW_WEIGHTS), 0, token)
        self._add(session, self._read(session_id, 0))
        return session

    def _extend(self, session: IndexedSession, session_id: str, token: tuple[int, int]) -> None:
        self._add(session, self._read(session_id, session.max_id))
        session.token = token

    def _add(self, session: IndexedSession, events: list[Event]) -> None:
        index_events(session, events, self.radius)


def index_events(session: IndexedSession, events: list[Event], radius: int) -> None:
    """Index ``events`` of one session (ids above every id ``session`` holds) and rewrite
    the windows they reach (``radius`` turns either side). Used by
    :mod:`pmm.recall.user_index` too, whose threads share their user's keys."""
    if not events:
        return
    first = len(session.rows)
    for event in events:
        text = event.content if event.content is not None else event.summary
        session.rows.append(WindowRow(event.id, event.kind, text))
        session.max_id = max(session.max_id, event.id)
        if event.kind in WINDOW_KINDS:
            session.ts[event.id] = event.ts
            # the text its window holds (content, or the summary of a compacted turn)
            # is tokenized once for its column and for the window's counts
            summary: list[str] = []
            content: list[str] = []
            if event.content is not None:
                content, counts = stems_and_counts(event.content, WINDOW_SKIP)
                summary = fts_tokens(event.summary) if event.summary else []
            else:
                summary, counts = stems_and_counts(event.summary or "", WINDOW_SKIP)
            keywords = fts_tokens(" ".join(event.keywords)) if event.keywords else []
            columns = (Column.of(summary), Column.of(keywords), Column.of(content))
            session.turns.put(event.id, event.kind, columns)
            # what its neighbours' windows hold of it, worked out once: stopwords out
            # (by word, before stemming), capped (capping again in a window sums to the
            # same: the cap saturates)
            session.terms[event.id] = window_terms([{t: (t, c) for t, c in counts.items()}])
    # the windows the new turns reach (up to `radius` turns either side); each of those
    # reaches `radius` turns further back: read from 2 * radius turns before the new
    # rows, not the whole session
    start, seen = first, 0
    while start > 0 and seen < 2 * radius:
        start -= 1
        seen += session.rows[start].kind in WINDOW_KINDS
    rows = session.rows[start:]
    targets = reached_turns(rows, radius, {r.id for r in session.rows[first:]})
    windows = window_members(rows, radius, targets)
    terms = session.terms
    for event_id in targets:
        members = windows.get(event_id)
        if members is None:
            session.windows.drop(event_id)
            session.members.pop(event_id, None)
            continue
        ids = tuple(row.id for row in members)
        before = session.members.get(event_id)
        session.members[event_id] = ids
        # a turn's terms never change while its session is held (redactions and
        # compactions drop the session): only the turns that joined or left the
        # window change its counts
        touched = None
        if before is not None:
            moved = set(ids).symmetric_difference(before)
            touched = set(chain.from_iterable(terms[i] for i in moved))
        # what the full-text index holds of the window (migrations/0011)
        body = {t: c for t, (_, c) in window_terms(terms[i] for i in ids).items()}
        dates = _date_column(session.ts[event_id][:10])
        kind = session.turns.docs[event_id].kind
        session.windows.put(event_id, kind, (Column.counted(body), dates), touched)
