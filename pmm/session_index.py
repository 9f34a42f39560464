"""BM25 over one session's turns, in memory: the session-scoped keyword search of recall
without a full-text index query.

    from pmm.session_index import SessionRanker

    ranker = SessionRanker(store)
    ranker.search("when is the pottery class?", session_id="alice", key="window")
    # -> [(event_id, bm25 score), ...] best first, like store.search_text(...)

Why: a session holds hundreds of turns, not 100,000, yet an FTS5 search restricted to one
session still reads the whole log's postings of every query word (about 2-3 ms each for
the turn and the window key at 100,000 events). Here each session's turns are tokenized
once (the same tokens FTS5 indexes, :mod:`pmm.stemmer`) and ranked with FTS5's BM25
formula (k1 1.2, b 0.75, the same column weights), over the same two keys:

- ``turn``: summary (weight 2), keywords (3) and content (1) of the turn;
- ``window``: the turn with its neighbours (:func:`pmm.window_keys.window_texts`) and its
  date in words (weight ``date_weight``).

One difference, by design: document frequencies and lengths are the session's, not the
whole log's (an FTS5 search within a session uses the whole table's), and the query words
are the session's rarest. ``tests/test_session_index.py`` checks that the top ten agree
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

import heapq
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

from .log_watch import LogNow, LogWatch
from .records import Event
from .stemmer import fts_tokens
from .storage.terms import pick_terms
from .text import search_terms
from .window_keys import (
    BOUNDARY_KIND,
    DEFAULT_WINDOW_RADIUS,
    WINDOW_KINDS,
    WindowRow,
    date_words,
    window_members,
)

if TYPE_CHECKING:
    from .storage.base import EventLog

K1 = 1.2
B = 0.75
TURN_WEIGHTS = (2.0, 3.0, 1.0)
"""summary, keywords, content: the turn key's BM25 column weights (as in FTS5)."""
WINDOW_WEIGHTS = (1.0, 1.0)
"""body, dates: the window key's weights (the dates' is ``date_weight`` when given)."""


@lru_cache(maxsize=256)
def _phrases(query: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(word, its tokens)`` for the query's search words that have tokens (a query is
    searched once per key: analysed once)."""
    pairs = ((word, tuple(fts_tokens(word))) for word in search_terms(query))
    return tuple((word, phrase) for word, phrase in pairs if phrase)


@dataclass
class _Column:
    tokens: list[str]
    counts: Counter[str]

    @classmethod
    def of(cls, tokens: list[str]) -> _Column:
        """The column of ``tokens`` (columns are never modified: empty ones are shared)."""
        return cls(tokens, Counter(tokens)) if tokens else _EMPTY

    def hits(self, phrase: Sequence[str]) -> int:
        """How often ``phrase`` (consecutive tokens) occurs."""
        if len(phrase) == 1:
            return self.counts.get(phrase[0], 0)
        if any(t not in self.counts for t in phrase):
            return 0
        n = len(phrase)
        toks = self.tokens
        return sum(1 for i in range(len(toks) - n + 1) if toks[i : i + n] == list(phrase))


_EMPTY = _Column([], Counter())


@lru_cache(maxsize=4096)
def _date_column(day: str) -> _Column:
    """The date column of a day's windows (shared by them, never modified)."""
    return _Column.of(fts_tokens(date_words(day)))


@dataclass
class _Doc:
    id: int
    kind: str
    columns: tuple[_Column, ...]
    length: int  # tokens in every column, plus the one session-tag token FTS5 counts
    weighted: dict[str, float]  # token -> occurrences weighted by the key's usual weights

    def hits(self, phrase: Sequence[str], weights: Sequence[float], usual: bool) -> float:
        """The phrase's occurrences, each weighted by its column's weight (``usual``: the
        weights are the key's usual ones; callers score that single-word case from the
        postings themselves)."""
        total = 0.0
        if len(phrase) == 1:
            token = phrase[0]
            for weight, column in zip(weights, self.columns, strict=True):
                total += weight * column.counts.get(token, 0)
            return total
        for weight, column in zip(weights, self.columns, strict=True):
            total += weight * column.hits(phrase)
        return total


class _Key:
    """One key's documents in a session, with postings (token -> ids) and per-kind totals."""

    def __init__(self, weights: tuple[float, ...]) -> None:
        self.weights = weights
        self.docs: dict[int, _Doc] = {}
        self.postings: dict[str, dict[int, float]] = {}
        """token -> {event id: the token's occurrences weighted by the usual weights}"""
        self.lengths: dict[int, int] = {}
        self.count: Counter[str] = Counter()
        self.length: Counter[str] = Counter()

    def put(
        self,
        event_id: int,
        kind: str,
        columns: tuple[_Column, ...],
        touched: Collection[str] | None = None,
    ) -> None:
        """Index (or re-index) a document; ``touched``: when it is re-indexed, the only
        tokens whose counts may have changed (None: any of them)."""
        weighted: dict[str, float] = {}
        for weight, column in zip(self.weights, columns, strict=True):
            if weight == 1.0 and not weighted:
                # the counts as they are (whole numbers: the same sums in any order)
                weighted = dict(column.counts)
                continue
            for token, count in column.counts.items():
                weighted[token] = weighted.get(token, 0.0) + weight * count
        length = 1 + sum(len(c.tokens) for c in columns)
        doc = _Doc(event_id, kind, columns, length, weighted)
        old = self.docs.get(event_id)
        # a rewritten window shares most of its words with the old one: touch only the
        # postings of the words that came, went or changed count
        postings = self.postings
        changed: Iterable[tuple[str, float]] = weighted.items()
        if old is not None:
            before = old.weighted
            if touched is None:
                gone: Iterable[str] = before.keys() - weighted.keys()
                changed = [(t, v) for t, v in weighted.items() if before.get(t) != v]
            else:
                gone = [t for t in touched if t in before and t not in weighted]
                changed = [
                    (t, weighted[t])
                    for t in touched
                    if t in weighted and before.get(t) != weighted[t]
                ]
            for token in gone:
                ids = postings[token]
                del ids[event_id]
                if not ids:
                    del postings[token]
        for token, value in changed:
            posting = postings.get(token)
            if posting is None:
                postings[token] = {event_id: value}
            else:
                posting[event_id] = value
        self.lengths[event_id] = length
        if old is not None:
            self.count[old.kind] -= 1
            self.length[old.kind] -= old.length
        self.docs[event_id] = doc
        self.count[kind] += 1
        self.length[kind] += doc.length

    def drop(self, event_id: int) -> None:
        doc = self.docs.pop(event_id, None)
        if doc is None:
            return
        del self.lengths[event_id]
        for token in doc.weighted:
            ids = self.postings.get(token)
            if ids is not None:
                ids.pop(event_id, None)
                if not ids:
                    del self.postings[token]
        self.count[doc.kind] -= 1
        self.length[doc.kind] -= doc.length

    def holds_other_kinds(self, kinds: set[str]) -> bool:
        """Whether any document is of a kind outside ``kinds``."""
        return any(self.count[k] for k in self.count if k not in kinds)

    def matching(
        self, phrase: Sequence[str], kinds: set[str], other_kinds: bool
    ) -> Collection[int]:
        """Ids of the documents of ``kinds`` that hold ``phrase`` (do not modify);
        ``other_kinds``: :meth:`holds_other_kinds` (the caller works it out once)."""
        found = self.postings.get(phrase[0])
        if not found:
            return ()
        ids: Collection[int] = found
        if len(phrase) > 1:
            for token in phrase[1:]:
                ids = set(ids) & self.postings.get(token, {}).keys()
            docs = self.docs
            ids = [i for i in ids if any(c.hits(phrase) for c in docs[i].columns)]
        if other_kinds:
            docs = self.docs
            ids = [i for i in ids if docs[i].kind in kinds]
        return ids


@dataclass
class _Session:
    rows: list[WindowRow]
    ts: dict[int, str]
    text_tokens: dict[int, list[str]]  # a turn's content (or summary when erased) as tokens
    members: dict[int, tuple[int, ...]]  # the ids of the turns each window holds
    turns: _Key
    windows: _Key
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
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
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
        if limit <= 0 or not _phrases(query):
            return []
        wanted = set(kinds)
        weights = TURN_WEIGHTS if key == "turn" else (1.0, float(date_weight))
        usual = weights == (TURN_WEIGHTS if key == "turn" else WINDOW_WEIGHTS)
        with self._lock:
            session = self._session(session_id)
            index = session.turns if key == "turn" else session.windows
            n = sum(index.count[k] for k in wanted)
            if not n:
                return []
            avgdl = sum(index.length[k] for k in wanted) / n
            found: dict[str, Collection[int]] = {}
            phrases = dict(_phrases(query))
            postings = index.postings
            other_kinds = index.holds_other_kinds(wanted)
            for word, phrase in phrases.items():
                if len(phrase) == 1 and not other_kinds:  # the usual case, inline
                    found[word] = postings.get(phrase[0], ())
                else:
                    found[word] = index.matching(phrase, wanted, other_kinds)
            df = {w: len(ids) for w, ids in found.items()}
            present = sorted(found, key=lambda w: (df[w] == 0, df[w]))
            terms = pick_terms(present, n, df.__getitem__)
            used = [w for w in terms.words if df[w]]
            if not used:
                return []
            if terms.common:
                return [(i, 0.0) for i in sorted(found[used[0]], reverse=True)[:limit]]
            # A word in half the session or more has an idf FTS5 clamps to 1e-6: it could
            # only break ties, and scoring it would read most of the session.
            informative = [w for w in used if 2 * df[w] < n]
            scores: dict[int, float] = {}
            lean = K1 * B / avgdl
            base = K1 * (1 - B)
            lengths = index.lengths
            k1_1 = K1 + 1
            get = scores.get
            for word in informative or used:
                value = math.log((n - df[word] + 0.5) / (df[word] + 0.5))
                idf = value if value > 0 else 1e-6
                phrase = phrases[word]
                ids = found[word]
                if usual and len(phrase) == 1:
                    # the word's postings hold its weighted counts: one pass, no _Doc
                    posting = index.postings[phrase[0]]
                    pairs: Iterable[tuple[int, float]] = (
                        posting.items() if ids is posting else ((i, posting[i]) for i in ids)
                    )
                else:
                    docs = index.docs
                    pairs = ((i, docs[i].hits(phrase, weights, usual)) for i in ids)
                if not scores:  # nothing to add to: one comprehension (0.0 + gain is gain)
                    scores = {
                        i: idf * f * k1_1 / (f + (base + lean * lengths[i])) for i, f in pairs if f
                    }
                    get = scores.get
                    continue
                for event_id, freq in pairs:
                    if freq:
                        gain = idf * freq * k1_1 / (freq + (base + lean * lengths[event_id]))
                        scores[event_id] = get(event_id, 0.0) + gain
        # best first by (score, id), compared as plain tuples (no key function per item);
        # a full sort in C beats a heap unless few of many are wanted
        pairs_by_score = zip(scores.values(), scores.keys(), strict=True)
        if len(scores) <= 8 * limit:
            ranked = sorted(pairs_by_score, reverse=True)[:limit]
        else:
            ranked = heapq.nlargest(limit, pairs_by_score)
        return [(i, score) for score, i in ranked]

    # -- keeping in step with the log ---------------------------------------------------

    def appended(self, events: Sequence[Event], now: LogNow | None = None) -> None:
        """This process just appended ``events`` (one transaction): index them now in the
        held sessions they belong to, so that the next search finds them current (index
        upkeep is a cost of the write, as FTS5's is). Sessions not held are left to be
        read when first searched.

        When nothing else was appended since the ranker last looked
        (:meth:`pmm.log_watch.LogWatch.follows`) they are indexed as given, without
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
                    new = [e for e in events if e.session_id == session_id and e.kind in kinds]
                    self._add(session, new)
                session.token = token  # the new rows are these events
            self._watch.advance(events, token)

    def _session(self, session_id: str) -> _Session:
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

    def _build(self, session_id: str, token: tuple[int, int]) -> _Session:
        self.builds += 1
        session = _Session([], {}, {}, {}, _Key(TURN_WEIGHTS), _Key(WINDOW_WEIGHTS), 0, token)
        self._add(session, self._read(session_id, 0))
        return session

    def _extend(self, session: _Session, session_id: str, token: tuple[int, int]) -> None:
        self._add(session, self._read(session_id, session.max_id))
        session.token = token

    def _add(self, session: _Session, events: list[Event]) -> None:
        """Index new events (ids above every id held) and rewrite the windows they reach."""
        if not events:
            return
        first = len(session.rows)
        for event in events:
            text = event.content if event.content is not None else event.summary
            session.rows.append(WindowRow(event.id, event.kind, text))
            session.max_id = max(session.max_id, event.id)
            if event.kind in WINDOW_KINDS:
                session.ts[event.id] = event.ts
                summary = fts_tokens(event.summary) if event.summary else []
                content = fts_tokens(event.content) if event.content else []
                keywords = fts_tokens(" ".join(event.keywords)) if event.keywords else []
                session.text_tokens[event.id] = content if event.content is not None else summary
                columns = (_Column.of(summary), _Column.of(keywords), _Column.of(content))
                session.turns.put(event.id, event.kind, columns)
        # windows of the new turns and of the `radius` turns before them
        # (each of those reaches `radius` turns further back: read from 2 * radius turns
        # before the new rows, not the whole session)
        targets = {r.id for r in session.rows[first:] if r.kind in WINDOW_KINDS}
        start, seen = first, 0
        while start > 0 and seen < 2 * self.radius:
            start -= 1
            if session.rows[start].kind in WINDOW_KINDS:
                if seen < self.radius:
                    targets.add(session.rows[start].id)
                seen += 1
        windows = window_members(session.rows[start:], self.radius, targets)
        held = session.text_tokens
        for event_id in targets:
            members = windows.get(event_id)
            if members is None:
                session.windows.drop(event_id)
                session.members.pop(event_id, None)
                continue
            ids = tuple(row.id for row in members)
            before = session.members.get(event_id)
            session.members[event_id] = ids
            # a turn's tokens never change while its session is held (redactions and
            # compactions drop the session): only the turns that joined or left the
            # window change its counts
            touched = None
            if before is not None:
                moved = set(ids).symmetric_difference(before)
                touched = set(chain.from_iterable(held[i] for i in moved))
            body = list(chain.from_iterable(held[i] for i in ids))
            dates = _date_column(session.ts[event_id][:10])
            kind = session.turns.docs[event_id].kind
            session.windows.put(event_id, kind, (_Column.of(body), dates), touched)
