"""Where recall's keyword rankers get their lists (a session's or a user's in-memory
ranker, else the store's full-text index; the dense ranker's: :mod:`pmm.recall.dense`), a
scan for symbol-only queries; and what recall reads from the store around them: the
adaptive policy's lexical evidence, the learned fusion's inputs, and the hits' rows.

    from pmm.recall.sources import keyword_ids

    ids = keyword_ids(store, session_ranker, user_ranker, "where do I live?", "window",
                      session_id=None, kinds=("prompt", "response"), depth=50)

:class:`pmm.recall.recaller.Recaller` calls these; each returns event ids best first,
with ``excluded`` ids left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeGuard

from pmm.errors import InvalidInputError
from pmm.recall.fusion import (
    EVIDENCE_HITS,
    KEYWORD_RANKERS,
    RRF_K,
    FusionPolicy,
    inverse_document_frequencies,
    lexical_coverage,
)
from pmm.recall.rerank import RANKED, rerank
from pmm.records import Event, Hit
from pmm.text.window_keys import is_temporal
from pmm.text.words import WORD, repeat_key, search_terms, words

if TYPE_CHECKING:
    from pmm.recall.session_index import SessionRanker
    from pmm.recall.session_rank import SessionView
    from pmm.recall.user_index import UserRanker
    from pmm.storage.base import EventLog

__all__ = [
    "checked_kinds",
    "fused_hits",
    "keyword_ids",
    "learned_order",
    "one_copy",
    "policy_weights",
    "query_idf",
    "query_weights",
    "ranker_order",
    "searchable",
    "symbol_hits",
    "utterance",
    "wordless",
]


def keyword_ids(
    store: EventLog,
    session_ranker: SessionRanker | None,
    user_ranker: UserRanker | None,
    query: str,
    ranker: str,
    *,
    session_id: str | None,
    kinds: tuple[str, ...],
    depth: int,
    date_weight: float = 1.0,
    sync: bool = True,
    excluded: frozenset[int] | set[int] = frozenset(),
    user_id: str | None = None,
) -> list[int]:
    """One keyword ranker's ids (``ranker``: ``turn``, ``window`` or ``digest``): the
    session's or the user's in-memory ranker where it serves, else the store's full-text
    index (``sync=False``: events appended since its last search may be missed)."""
    if (
        session_id is not None
        and session_ranker is not None
        and session_ranker.serves(ranker, kinds)
    ):
        found = session_ranker.search(
            query, session_id=session_id, key=ranker, kinds=kinds, limit=depth,
            date_weight=date_weight,
        )  # fmt: skip
    elif user_id is not None and user_ranker is not None and user_ranker.serves(ranker, kinds):
        found = user_ranker.search(
            query, user_id=user_id, key=ranker, kinds=kinds, limit=depth,
            date_weight=date_weight,
        )  # fmt: skip
    else:
        found = store.search_text(
            query, limit=depth, session_id=session_id, kinds=kinds, sync=sync, key=ranker,
            date_weight=date_weight, **({} if user_id is None else {"user_id": user_id}),
        )  # fmt: skip
    return [i for i, _ in found if i not in excluded]


def symbol_hits(
    store: EventLog,
    needles: list[str],
    k: int,
    depth: int,
    session_id: str | None,
    kinds: tuple[str, ...],
    excluded: set[int],
    user_id: str | None = None,
) -> list[Hit]:
    """Recall of a query made of symbols only (``"🐶"``): the events holding them, by
    :meth:`EventLog.search_symbols`, ranked as the ``symbol`` ranker; with ``user_id``,
    only that user's events."""
    found = store.search_symbols(
        needles, limit=depth, session_id=session_id, kinds=kinds, user_id=user_id
    )
    ids = [i for i, _ in found if i not in excluded]
    events = store.get_many(ids)
    hits: list[Hit] = []
    for rank, event_id in enumerate(ids, 1):
        event = events.get(event_id)
        if event is None or (event.content is None and not event.summary):
            continue
        hits.append(Hit(event, 1.0 / (RRF_K + rank), {"symbol": rank}))
        if len(hits) >= k:
            break
    return hits


def learned_order(
    store: EventLog,
    query: str,
    rankings: Mapping[str, Sequence[int]],
    coefficients: Mapping[str, float],
    temporal: bool,
    coverage: float | None,
    session_ranks: SessionView | None = None,
    read: Mapping[int, Event] | None = None,
) -> tuple[list[tuple[int, float, dict[str, int]]], dict[int, Event]]:
    """The learned fusion (:mod:`pmm.recall.rerank`) of the rankers' candidates, in
    :func:`~pmm.recall.fusion.rrf_fuse`'s shape: ``(event_id, score, {ranker: rank})``
    best first; and the candidates' rows it read from ``store`` (for their text, session
    and time), which :func:`fused_hits` takes instead of reading them again.
    ``session_ranks``: :meth:`pmm.recall.session_rank.SessionRanks.bind`'s view, the
    candidates' session ranks and cached turn terms, for those features. ``read``: rows of
    some candidates read already by this recall (the others are read here)."""
    ids = list(dict.fromkeys(i for ids in rankings.values() for i in ids))
    events = store.get_many(i for i in ids if not read or i not in read)
    if read:
        events.update((i, read[i]) for i in ids if i in read)
    rankings = one_copy(rankings, events)
    texts = {i: e.text for i, e in events.items()}
    sessions = {i: e.session_id or "" for i, e in events.items()}
    ranks_of_sessions, cached = None, None
    if session_ranks is not None:
        seen = (sessions.get(i, "") for r, ids in rankings.items() if r in RANKED for i in ids)
        first = list(dict.fromkeys(s for s in seen if s))
        ranks_of_sessions, cached = session_ranks(first, sessions)
    ranked = rerank(
        query, rankings, texts, sessions, temporal=temporal,
        coverage=1.0 if coverage is None else coverage, coefficients=coefficients,
        dates={i: e.ts for i, e in events.items()}, session_ranks=ranks_of_sessions,
        cached=cached,
    )  # fmt: skip
    ranks: dict[int, dict[str, int]] = {}
    for ranker, found in rankings.items():
        for rank, event_id in enumerate(found, start=1):
            ranks.setdefault(event_id, {}).setdefault(ranker, rank)
    return [(i, score, ranks[i]) for i, score in ranked], events


Utterance = tuple[str | None, str | None, frozenset[str]]
"""Who said it (the event's user and role) and its :func:`~pmm.text.words.repeat_key`."""


def utterance(event: Event) -> Utterance | None:
    """What a turn says, as recall tells repeats apart: one speaker's words (the user and
    the role: the assistant saying the user's words is not the user saying them again,
    :func:`~pmm.text.words.repeat_key`); None for a turn with no word (never a repeat).
    Another user's copy is another utterance: one user never stands in for another."""
    key = repeat_key(event.content)
    return (event.user_id, event.role, key) if key else None


def one_copy(
    rankings: Mapping[str, Sequence[int]], events: Mapping[int, Event]
) -> dict[str, list[int]]:
    """The rankers' lists with the turns that say one thing (:func:`utterance`: one speaker's
    words) as one candidate: the most recent of them, at the best rank any of them has in each list.
    A copy takes no rank of its own, so a question asked twice does not push down the turn
    that answers it. ``events``: the candidates' rows (one missing is kept as it is).

    The lists leave out the turns with no word (:func:`wordless`, "🐶🐶"), which only the
    dense and window rankers can hold: the encoder reads them all as one unknown token, so
    their similarity to a query says nothing about them, and their window key holds only
    their neighbours' words, which their neighbours are found by (a symbol-only query
    finds them by :func:`symbol_hits`).

    >>> one_copy({"turn": [7, 3, 9]}, events)  # doctest: +SKIP
    {'turn': [9, 3]}    # 7 and 9: "What's my dog's name?"
    """
    if any(wordless(event) for event in events.values()):
        rankings = {
            r: [i for i in found if not wordless(events.get(i))] for r, found in rankings.items()
        }
    newest: dict[Utterance, int] = {}
    keys: dict[int, Utterance] = {}
    repeated = False
    for event_id, event in events.items():
        key = utterance(event)
        if key is None:
            continue
        keys[event_id] = key
        held = newest.get(key)
        if held is None or held < event_id:
            repeated |= held is not None
            newest[key] = event_id
        else:
            repeated = True
    if not repeated:
        return {r: list(found) for r, found in rankings.items()}
    one = {i: newest[key] for i, key in keys.items()}
    return {r: list(dict.fromkeys(one.get(i, i) for i in found)) for r, found in rankings.items()}


def wordless(event: Event | None) -> bool:
    """Whether ``event`` is a turn whose text holds no word, only symbols (emoji); an
    erased or missing one is not."""
    return event is not None and bool(event.text) and not WORD.search(event.text or "")


def searchable(event: Event) -> str:
    """The text the turn key indexes: content, summary and keywords."""
    return " ".join(filter(None, (event.text, event.summary, *event.keywords)))


def query_idf(store: EventLog, query: str) -> dict[str, float]:
    """The inverse document frequency of the query's words in the store."""
    frequencies = store.document_frequencies(search_terms(query))
    return inverse_document_frequencies(frequencies, store.search_index_upto())


def policy_weights(
    store: EventLog, policy: FusionPolicy, query: str, temporal: bool, turn_hits: Sequence[int]
) -> tuple[dict[str, float], float | None]:
    """The policy's weights for the query, and the lexical coverage of the turn ranker's
    best hits that they read (None when the policy reads none)."""
    coverage = None
    if policy.needs_coverage:
        top = store.get_many(turn_hits[:EVIDENCE_HITS]).values()
        # no hit: coverage is 0 with or without idf, so the frequencies are not read
        idf = query_idf(store, query) if policy.idf and top else None
        coverage = lexical_coverage(query, (searchable(e) for e in top), idf)
    return policy.weights_for(temporal=temporal, coverage=coverage), coverage


def query_weights(
    store: EventLog,
    policy: FusionPolicy,
    query: str,
    kinds: tuple[str, ...],
    temporal_date_weight: float,
) -> dict[str, float]:
    """The weights ``policy`` gives ``query`` across all sessions, its evidence read from
    the store's turn key (as :meth:`pmm.recall.recaller.Recaller.fusion_weights` says)."""
    temporal = is_temporal(words(query.lower()))
    turn: list[int] = []
    if policy.needs_coverage:
        found = store.search_text(
            query, limit=EVIDENCE_HITS, kinds=kinds, key="turn",
            date_weight=temporal_date_weight if temporal else 1.0,
        )  # fmt: skip
        turn = [i for i, _ in found]
    return policy_weights(store, policy, query, temporal, turn)[0]


def checked_kinds(kinds: Iterable[str] | str) -> tuple[str, ...]:
    """``kinds`` as a tuple: one or more non-empty strings, else InvalidInputError."""
    found = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not found or not all(isinstance(k, str) and k for k in found):
        raise InvalidInputError(f"kinds must be one or more non-empty strings, got {kinds!r}")
    return found


def fused_hits(
    store: EventLog,
    fused: Sequence[tuple[int, float, dict[str, int]]],
    k: int,
    user_id: str | None = None,
    read: Mapping[int, Event] | None = None,
) -> list[Hit]:
    """The first ``k`` of ``fused`` as hits, their rows read in chunks (or taken from
    ``read``, rows this recall read after its rankers ran): an event redacted since the
    rankers read it is skipped, and so is another user's (checked on the row itself,
    whatever the rankers did).

    One utterance is one hit: a turn that says a hit's words again
    (:func:`~pmm.text.words.repeat_key`) is not another hit, and the more recent of the two
    takes the best-ranked one's place, so that copies of a question asked twice do not push
    the fact it asks about down. (The learned fusion has merged the copies among its
    candidates already, :func:`one_copy`; the weighted RRF has not.)"""
    hits: list[Hit] = []
    held: dict[Utterance, int] = {}  # an utterance -> its hit's index

    def add(event: Event, score: float, ranks: dict[str, int]) -> None:
        key = utterance(event)
        at = held.get(key) if key else None
        if at is None:
            if key:
                held[key] = len(hits)
            hits.append(Hit(event, score, ranks))
        elif event.id > hits[at].event.id:  # the most recent copy, at the best one's place
            hits[at] = Hit(event, hits[at].score, ranks)

    start = 0
    while len(hits) < k and start < len(fused):
        chunk = fused[start : start + k - len(hits)]
        start += len(chunk)
        if read and all(i in read for i, _, _ in chunk):
            events: Mapping[int, Event] = read
        else:
            events = store.get_many(i for i, _, _ in chunk)
        for event_id, score, ranks in chunk:
            event = events.get(event_id)
            if _shown(event, user_id):
                add(event, score, ranks)
    return hits


def _shown(event: Event | None, user_id: str | None) -> TypeGuard[Event]:
    """Whether a candidate's row can be a hit: not redacted after the rankers read it
    (a summary is shown in its place), never another user's."""
    if event is None or (event.content is None and not event.summary):
        return False
    return user_id is None or event.user_id == user_id


def ranker_order(
    first: list[str],
    weights: Mapping[str, float],
    coefficients: Mapping[str, float] | None,
    dense: bool,
) -> list[str]:
    """The rankers a recall reads, in the order its fusion reads them: ``first`` (those
    already searched), the weighted keyword rankers, ``dense`` where it weighs (and
    ``dense``: the query has a vector), then those only the learned ``coefficients`` read.

    >>> ranker_order(["turn"], {"turn": 1, "dense": 0.3}, {"window_rr5": 1.0}, True)
    ['turn', 'dense', 'window']
    """
    order = list(first)
    order += [r for r in KEYWORD_RANKERS if weights.get(r, 0) > 0 and r not in order]
    if dense and weights.get("dense", 0) > 0:
        order.append("dense")
    for ranker in RANKED if coefficients else ():
        wanted = any(f.startswith(ranker) for f in coefficients or ())
        if wanted and ranker not in order and (ranker != "dense" or dense):
            order.append(ranker)
    return order
