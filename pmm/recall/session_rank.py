"""Sessions ranked for a query, by their whole text and by their mean turn vector: the
first stage of two-stage recall, read by the learned fusion as features of each
candidate turn (:mod:`pmm.recall.rerank`: ``session_stemmed_*``, ``session_dense_*``).

    from pmm.recall.session_rank import SessionRanks

    ranks = SessionRanks(store)
    ranks.ranks("when did Ann adopt a dog?", ["s1", "s2", "s3"], rankers=("stemmed",))
    # -> {'stemmed': {'s2': 1, 's1': 2}}   (s3 holds none of the query's words: unranked)

Why: LoCoMo's answers cluster in the session that talks about the question's subject,
and a session's whole text names it more often than any one turn does
(``docs/benchmarks/locomo.md``, the session features, measured held out by conversation).

- ``stemmed``: BM25 (k1 1.2, b 0.75, idf ``log(1 + (N - df + .5) / (df + .5))``) over each
  session's distinct words (:func:`session_words`) as PMM's index stems them, the query as
  :func:`pmm.recall.rerank.query_terms` reads it, document frequencies and lengths over the
  sessions ranked; a session holding none of its terms is unranked;
- ``dense``: the cosine of the query vector to each session's mean turn vector (the
  in-memory vector index's rows; where the store serves vector search itself, PostgreSQL
  with pgvector, and holds no index in memory, the sessions' stored vectors read by id,
  :meth:`~pmm.storage.base.EventLog.embeddings_of`, so that both backends rank alike;
  sessions with no vector unranked).

The sessions ranked are those of the recall's candidate turns, which every ranker has
already kept to the recall's user or session: no other user's session is ever read.
The functions that rank (:func:`stemmed_order`, :func:`vector_order`,
:class:`SessionTerms`) are pure; ``bench/locomo.py --cv`` computes the features with them,
so that the coefficients fitted there hold here.

:class:`SessionRanks` caches each session's terms, read through the store's
:class:`~pmm.storage.base.EventLog` interface (SQLite and PostgreSQL alike), and keeps them
in step with the log as :class:`~pmm.recall.session_index.SessionRanker` does
(:class:`~pmm.storage.watch.LogWatch`): on a new ``data_version`` the turns appended
since are added to the sessions held; a redaction or compaction anywhere (redact, forget,
compact) or a restored file drops every session, so erased words leave at once.
"""

from __future__ import annotations

import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from pmm.recall.query_features import query_terms
from pmm.recall.rerank import SESSION_RANKED, TurnTerms, turn_terms
from pmm.storage.watch import LogWatch
from pmm.text.stemmer import fts_tokens
from pmm.text.window_keys import WINDOW_KINDS
from pmm.text.words import STOPWORDS, search_terms, words

if TYPE_CHECKING:
    from concurrent.futures import Future

    from pmm.embed.index import VectorIndex
    from pmm.records import TurnRow
    from pmm.storage.base import EventLog

SessionView = Callable[
    [list[str], Mapping[int, str]], tuple[dict[str, dict[str, int]], dict[int, TurnTerms]]
]
"""What :meth:`SessionRanks.bind` returns: the candidates' sessions (first seen first) and
each candidate's session -> the sessions' ranks and the candidates' cached turn terms."""

SESSION_RANKERS = SESSION_RANKED
"""How sessions are ranked (see the module docstring); ``stemmed`` needs no vectors."""
SERVED_VECTORS = "pgvector"
"""The ``vector_backend`` of a store that searches vectors itself (PostgreSQL with pgvector):
the dense session rank reads its vectors by id rather than loading the in-memory index."""

K1, B = 1.2, 0.75


def session_words(text: str) -> list[str]:
    """The distinct content words of one turn as a search reads them (lower-cased, a
    possessive ``'s`` dropped; stopwords out).

    >>> session_words("Ann's dog and the dog's bowl")
    ['ann', 'dog', 'bowl']
    """
    return [w for w in search_terms(text, limit=sys.maxsize) if w not in STOPWORDS]


@lru_cache(maxsize=65536)
def _entry(raw: str) -> tuple[str, tuple[str, ...]] | None:
    """A lower-cased word as :func:`session_words` reads it, and its stems (None: a
    stopword): ``search_terms``' steps, once per distinct word."""
    word = raw.replace("’", "'")
    if word.endswith("'s") and len(word) > 2:
        word = word[:-2]
    if word in STOPWORDS:
        return None
    return sys.intern(word), tuple(fts_tokens(word))


class SessionTerms:
    """One session's distinct words, their stems' counts and its length in stems (each
    distinct word counts once, however often the session says it).

    >>> terms = SessionTerms.of(["I adopted a dog.", "Dogs are great; my dog is Bolt."])
    >>> terms.counts["dog"], terms.length   # "dog" and "dogs": two words, one stem
    (2, 5)
    """

    __slots__ = ("counts", "length", "words")

    def __init__(self) -> None:
        self.words: set[str] = set()
        self.counts: dict[str, int] = {}
        self.length = 0

    @classmethod
    def of(cls, texts: Iterable[str]) -> SessionTerms:
        """The terms of a session whose turns say ``texts``."""
        terms = cls()
        for text in texts:
            terms.add(text)
        return terms

    def add(self, text: str) -> None:
        """Add one turn's words (those the session already holds count no more)."""
        held, counts = self.words, self.counts
        for raw in set(words(text.lower())):
            entry = _entry(raw)
            if entry is None or entry[0] in held:
                continue
            held.add(entry[0])
            for stem in entry[1]:
                counts[stem] = counts.get(stem, 0) + 1
            self.length += len(entry[1])


def stemmed_order(sessions: Mapping[str, SessionTerms], terms: Iterable[str]) -> list[str]:
    """The sessions holding any of ``terms`` (stems, :func:`pmm.recall.rerank.query_terms`),
    best first by BM25 over ``sessions`` (:func:`stemmed_scores`; ties: the order given).

    >>> s = {"a": SessionTerms.of(["a cat"]), "b": SessionTerms.of(["a dog", "a cat"])}
    >>> stemmed_order(s, {"dog"}), stemmed_order(s, {"cat"}), stemmed_order(s, {"owl"})
    (['b'], ['a', 'b'], [])
    """
    score = stemmed_scores(sessions, terms)
    names = list(sessions)
    order = sorted(range(len(names)), key=lambda j: -score[names[j]])
    return [names[j] for j in order if score[names[j]] > 0]


def stemmed_scores(sessions: Mapping[str, SessionTerms], terms: Iterable[str]) -> dict[str, float]:
    """Each session's BM25 score for ``terms``: document frequencies, lengths and their
    mean over ``sessions`` (0 for a session holding none of them). The terms are summed in
    sorted order: over a set, the order (and so the last bit of a sum) would follow
    ``PYTHONHASHSEED``, and two processes could order tied sessions differently."""
    names = list(sessions)
    if not names:
        return {}
    lengths = [sessions[n].length for n in names]
    avg = (sum(lengths) / len(lengths)) or 1.0
    score = [0.0] * len(names)
    for term in sorted(set(terms)):
        tfs = [sessions[n].counts.get(term, 0) for n in names]
        df = sum(1 for tf in tfs if tf)
        if not df:
            continue
        idf = math.log(1 + (len(names) - df + 0.5) / (df + 0.5))
        for j, tf in enumerate(tfs):
            if tf:
                score[j] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[j] / avg))
    return dict(zip(names, score, strict=True))


def vector_order(
    sums: Mapping[str, npt.NDArray[np.float32]], query: npt.NDArray[np.float32]
) -> list[str]:
    """The sessions best first by the cosine of ``query`` to each one's mean turn vector
    (``sums``: the sum of its turns' vectors; a zero sum, no vector, is unranked; ties:
    the order given).

    >>> v = {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 3.0]), "c": np.zeros(2)}
    >>> vector_order(v, np.array([0.0, 2.0]))
    ['b', 'a']
    """
    names = list(sums)
    if not names:
        return []
    matrix = np.array([sums[n] for n in names], dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    kept = np.flatnonzero(norms > 0)  # one pass over the matrix, not a test per session
    q = np.asarray(query, dtype=np.float64) / (np.linalg.norm(query) or 1.0)
    cos = (matrix[kept] @ q) / norms[kept]
    return [names[j] for j in kept[np.argsort(-cos, kind="stable")]]


def ranks_of(order: Sequence[str]) -> dict[str, int]:
    """``order`` (best first) as session -> rank, from 1."""
    return {s: n for n, s in enumerate(order, start=1)}


def session_rankers(coefficients: Iterable[str]) -> tuple[str, ...]:
    """The session rankers the learned fusion's ``coefficients`` read.

    >>> session_rankers(["turn_rr5", "session_stemmed_rr5", "session_share"])
    ('stemmed',)
    """
    names = set(coefficients)
    return tuple(r for r in SESSION_RANKERS if any(n.startswith(f"session_{r}_") for n in names))


class _Held:
    __slots__ = ("max_id", "terms", "turns", "vector", "vector_of")

    def __init__(self) -> None:
        self.terms = SessionTerms()
        self.turns: dict[int, TurnTerms] = {}
        """Each turn's :func:`~pmm.recall.rerank.turn_terms` (what the term share and length
        features read), by event id."""
        self.max_id = 0
        self.vector: npt.NDArray[np.float32] | None = None
        """The sum of its turns' vectors, as of the index version and turn count in
        ``vector_of``."""
        self.vector_of: tuple[object, int] | None = None

    def add(self, row: TurnRow) -> None:
        text = (row.content if row.content is not None else row.summary) or ""
        self.terms.add(text)
        self.turns[row.id] = turn_terms(text)
        self.max_id = max(self.max_id, row.id)


class SessionRanks:
    """Ranks sessions for a query, each session's terms cached and kept in step with the
    log (see the module docstring). At most ``max_turns`` turns are held (least recently
    ranked sessions out first; a session being ranked is always held; about 1.35 KB a turn,
    measured at 100,000 events). Thread-safe."""

    def __init__(self, store: EventLog, *, max_turns: int = 100_000) -> None:
        self.store = store
        self.max_turns = max_turns
        self.reads = 0
        """Sessions read in full so far (for tests and benchmarks)."""
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._turns = 0
        self._lock = threading.Lock()
        self._watch = LogWatch(store)

    @property
    def held(self) -> dict[str, SessionTerms]:
        """The sessions held now and their terms (a copy of the mapping; for tests)."""
        with self._lock:
            return {s: entry.terms for s, entry in self._held.items()}

    def hold(self, sessions: Iterable[str]) -> None:
        """Read the terms of those of ``sessions`` not held yet (and bring the held ones in
        step with the log), as :meth:`ranks` would: recall calls it while the query is
        still being encoded, so that the first read of a session is not on its path.

        >>> ranks.hold(["s1", "s2"]); sorted(ranks.held)  # doctest: +SKIP
        ['s1', 's2']
        """
        wanted = list(dict.fromkeys(s for s in sessions if s))
        if wanted:
            with self._lock:
                self._sessions(wanted)

    def bind(
        self,
        query: str,
        coefficients: Iterable[str],
        vector: Future[npt.NDArray[np.float32]] | None,
        index: VectorIndex | None,
    ) -> SessionView:
        """:meth:`ranks` of ``query`` by the session rankers ``coefficients`` weigh, and the
        candidates' cached :meth:`turns`, for :func:`pmm.recall.sources.learned_order` to
        call with the candidates' sessions (first seen first) and each candidate's session
        (``vector``: the query's embedding, awaited only then)."""
        rankers = session_rankers(coefficients)

        def ranked(
            sessions: list[str], where: Mapping[int, str]
        ) -> tuple[dict[str, dict[str, int]], dict[int, TurnTerms]]:
            found = None if vector is None or "dense" not in rankers else vector.result()
            ranks = self.ranks(query, sessions, rankers=rankers, vector=found, index=index)
            return ranks, self.turns(where)

        return ranked

    def turns(self, where: Mapping[int, str]) -> dict[int, TurnTerms]:
        """The cached :func:`~pmm.recall.rerank.turn_terms` of the turns ``where`` names
        (event id -> its session) that a held session holds."""
        out: dict[int, TurnTerms] = {}
        with self._lock:
            for event_id, session_id in where.items():
                entry = self._held.get(session_id)
                found = None if entry is None else entry.turns.get(event_id)
                if found is not None:
                    out[event_id] = found
        return out

    def ranks(
        self,
        query: str,
        sessions: Sequence[str],
        *,
        rankers: Collection[str] = SESSION_RANKERS,
        vector: npt.NDArray[np.float32] | None = None,
        index: VectorIndex | None = None,
    ) -> dict[str, dict[str, int]]:
        """Ranker -> session -> rank (from 1) among ``sessions`` for ``query``; a session
        a ranker leaves unranked is absent. ``dense`` needs the query's ``vector`` and the
        in-memory vector ``index`` (without them it is left out)."""
        wanted = list(dict.fromkeys(s for s in sessions if s))
        out: dict[str, dict[str, int]] = {}
        if not wanted or not rankers:
            return out
        with self._lock:
            held = self._sessions(wanted)
            if "stemmed" in rankers:
                terms = {s: held[s].terms for s in wanted}
                out["stemmed"] = ranks_of(stemmed_order(terms, query_terms(query)))
            if "dense" in rankers and vector is not None and index is not None:
                out["dense"] = ranks_of(vector_order(self._sums(held, wanted, index), vector))
        return out

    def _sums(
        self, held: Mapping[str, _Held], wanted: Sequence[str], index: VectorIndex
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Each wanted session's vector sum, computed again only where the index's vectors
        or the session's turns changed since (the index brought in step first)."""
        if getattr(self.store, "vector_backend", None) == SERVED_VECTORS:
            return self._stored_sums(held, wanted, index.model_name, index.dim)
        index.refresh()
        version = index.version
        stale = [s for s in wanted if held[s].vector_of != (version, len(held[s].turns))]
        if stale:
            for session_id, total in zip(
                stale, index.vector_sums([list(held[s].turns) for s in stale]), strict=True
            ):
                held[session_id].vector = total
                held[session_id].vector_of = (version, len(held[session_id].turns))
        return {s: v for s in wanted if (v := held[s].vector) is not None}

    def _stored_sums(
        self, held: Mapping[str, _Held], wanted: Sequence[str], model: str, dim: int
    ) -> dict[str, npt.NDArray[np.float32]]:
        """:meth:`_sums` from the store's vectors of ``model``, read by id for the sessions
        whose turns changed, or which lacked a vector when last read and the log has been
        written since (vectors are written after their turns): the in-memory index, every
        vector of the model, is never loaded for a store that searches vectors itself."""
        token = self._watch.token
        stale = []
        for s in wanted:
            of = held[s].vector_of
            if of is None or of[1] != len(held[s].turns) or of[0] not in (token, "complete"):
                stale.append(s)
        if stale:
            ids = [i for s in stale for i in held[s].turns]
            # as the index holds them: the stored rows of the model's size, as stored
            found = {i: b for i, b in self.store.embeddings_of(model, ids) if len(b) == dim * 4}
            for s in stale:
                got = [i for i in held[s].turns if i in found]
                total = np.zeros(dim, dtype=np.float32)
                for i in got:
                    total += np.frombuffer(found[i], dtype=np.float32)
                held[s].vector = total
                complete = len(got) == len(held[s].turns)
                held[s].vector_of = ("complete" if complete else token, len(held[s].turns))
        return {s: v for s in wanted if (v := held[s].vector) is not None}

    def _sessions(self, wanted: Sequence[str]) -> dict[str, _Held]:
        before = self._watch.seen_id
        previous = self._watch.token
        token, rewritten = self._watch.look()
        if rewritten:
            self._held.clear()
            self._turns = 0
        elif token != previous and self._held:
            # the turns appended since the last look, to the sessions held
            rows = self.store.turn_rows(kinds=WINDOW_KINDS, after_id=before)
            for row in sorted(rows, key=lambda r: r.id):  # they come newest first
                entry = self._held.get(row.session_id or "")
                if entry is not None and row.id > entry.max_id:
                    entry.add(row)
                    self._turns += 1
        found: dict[str, _Held] = {}
        for session_id in wanted:
            entry = self._held.get(session_id)
            if entry is None:
                entry = _Held()
                for row in self.store.turn_rows(session_id=session_id, kinds=WINDOW_KINDS):
                    entry.add(row)
                self.reads += 1
                self._turns += len(entry.turns)
                self._held[session_id] = entry
            self._held.move_to_end(session_id)
            found[session_id] = entry
        while self._turns > self.max_turns and len(self._held) > len(wanted):
            _, dropped = self._held.popitem(last=False)
            self._turns -= len(dropped.turns)
        return found
