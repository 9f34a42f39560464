"""BM25 over all of one user's turns (every thread of hers), in memory: the user-scoped
keyword search of recall without a full-text index query.

    from pmm.recall.user_index import UserRanker

    ranker = UserRanker(store)
    ranker.search("where do I live?", user_id="alice", key="window")
    # -> [(event_id, bm25 score), ...] best first, like store.search_text(..., user_id=...)

Why: an FTS5 search restricted to one user still reads the whole log's postings of each
query word before it matches her tag, so its cost grows with every other user's data
(``bench/users.py``: 3-4x from 20,000 to 200,000 events). A user holds hundreds of turns:
here they are tokenized once and ranked as :class:`~pmm.recall.session_index.SessionRanker`
ranks one session's (the same keys, FTS5's BM25, the same tokens; and the ``digest`` key,
the turn key's summary and keywords columns alone), with document frequencies and
lengths taken over her turns. Windows never reach across threads (each
thread is an :class:`~pmm.recall.session_index.IndexedSession` sharing her keys).

Kept in step with the log as the session ranker is (:class:`pmm.storage.watch.LogWatch`):
a new ``data_version`` makes a held user read her turns appended since, at her next search
(other processes' writes included); this process's writes are taken at the write
(:meth:`UserRanker.appended`); a ``redaction`` or ``compaction`` anywhere drops every held
user (erased words leave at once), and an assignment of an older thread to a user
(``user_assigned``) rereads hers; a user is read afresh after ``max_age_s`` seconds (digests
written since reach her turn key). At most ``max_users`` users and ``max_turns`` turns in
all are held (a turn costs about 5 KB of memory: 20,000 turns, the default, about 100 MB),
least recently searched out first; the user being searched is always held.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pmm.events.chain import ASSIGN_KIND
from pmm.recall.session_bm25 import (
    DIGEST_COLUMNS,
    DIGEST_WEIGHTS,
    TURN_WEIGHTS,
    WINDOW_WEIGHTS,
    Key,
    turn_query,
    window_query,
)
from pmm.recall.session_index import IndexedSession, index_events
from pmm.storage.watch import LogNow, LogWatch
from pmm.text.window_keys import BOUNDARY_KIND, DEFAULT_WINDOW_RADIUS, WINDOW_KINDS

if TYPE_CHECKING:
    from pmm.records import Event
    from pmm.storage.base import EventLog

_INDEXED_KINDS = (*WINDOW_KINDS, BOUNDARY_KIND)
_READ_KINDS = (*_INDEXED_KINDS, ASSIGN_KIND)
"""An assignment gives her a thread written before users (older ids): read afresh."""


@dataclass
class _User:
    turns: Key
    windows: Key
    token: tuple[int, int]
    threads: dict[str | None, IndexedSession] = field(default_factory=dict)
    max_id: int = 0
    built: float = field(default_factory=time.monotonic)

    def add(self, events: Sequence[Event], radius: int) -> None:
        """Index ``events`` (ids above every id held), each in its thread."""
        by_thread: dict[str | None, list[Event]] = {}
        for event in events:
            if event.id > self.max_id and event.kind in _INDEXED_KINDS:
                by_thread.setdefault(event.session_id, []).append(event)
        for thread, new in by_thread.items():
            held = self.threads.get(thread)
            if held is None:
                held = IndexedSession([], {}, {}, {}, self.turns, self.windows, 0, self.token)
                self.threads[thread] = held
            index_events(held, new, radius)
        # every event read counts as seen, assignments too (else each later look at the
        # log would find the assignment again and read her afresh)
        self.max_id = max([self.max_id, *(e.id for e in events)])


class UserRanker:
    """In-memory BM25 of users' turns (see the module docstring). Thread-safe."""

    def __init__(
        self,
        store: EventLog,
        *,
        radius: int | None = None,
        max_users: int = 256,
        max_turns: int = 20_000,
        max_age_s: float = 60.0,
    ) -> None:
        self.store = store
        self.radius = (
            radius if radius is not None else getattr(store, "window_radius", DEFAULT_WINDOW_RADIUS)
        )
        self.max_users = max_users
        self.max_turns = max_turns
        self.max_age_s = max_age_s
        self.builds = 0
        """Users read in full so far (for tests and benchmarks)."""
        self._users: OrderedDict[str, _User] = OrderedDict()
        self._lock = threading.Lock()
        self._watch = LogWatch(store)

    def serves(self, key: str, kinds: Iterable[str] | None) -> bool:
        """Whether :meth:`search` can answer this (turn, digest or window key, turn kinds)."""
        if key not in ("turn", "window", "digest"):
            return False
        return kinds is not None and set(kinds) <= set(WINDOW_KINDS)

    def search(
        self,
        query: str,
        *,
        user_id: str,
        key: str = "turn",
        kinds: Iterable[str] = WINDOW_KINDS,
        limit: int = 10,
        date_weight: float = 1.0,
    ) -> list[tuple[int, float]]:
        """``(event_id, score)`` by BM25 over one user's turns (all her threads), best
        first (the shape of :meth:`EventLog.search_text`)."""
        weights: tuple[float, ...]
        columns = None
        if key == "turn":
            parsed, weights = turn_query(query), TURN_WEIGHTS
        elif key == "digest":  # the turn key's summary and keywords only
            parsed, weights, columns = turn_query(query), DIGEST_WEIGHTS, DIGEST_COLUMNS
        else:
            parsed, weights = window_query(query), (1.0, float(date_weight))
        if limit <= 0 or not parsed.words:
            return []
        with self._lock:
            user = self._user(user_id)
            index = user.windows if key == "window" else user.turns
            return index.rank(parsed, kinds, weights, limit, columns)

    def appended(self, events: Sequence[Event], now: LogNow | None = None) -> None:
        """This process just appended ``events`` (one transaction): held users they belong
        to index them now (see :meth:`SessionRanker.appended
        <pmm.recall.session_index.SessionRanker.appended>`, which this follows)."""
        if not events:
            return
        with self._lock:
            mine = {u for e in events if (u := e.user_id) is not None and u in self._users}
            if not mine:
                return
            before = self._watch.token
            token = self._watch.follows(events, now)
            if token is None:  # someone else wrote too: read the log as a search would
                for user_id in mine:
                    self._user(user_id)
                return
            for assigned in {e.user_id for e in events if e.kind == ASSIGN_KIND} & mine:
                if assigned is not None:  # a thread with older ids became hers: read afresh
                    del self._users[assigned]
                    mine.discard(assigned)
            clock = time.monotonic()
            for user_id, user in self._users.items():
                if user.token != before or clock - user.built > self.max_age_s:
                    continue  # not current before this append: read at its next search
                if user_id in mine:
                    user.add([e for e in events if e.user_id == user_id], self.radius)
                user.token = token
            self._watch.advance(events, token)

    def _user(self, user_id: str) -> _User:
        token, rewritten = self._watch.look()
        if rewritten:
            self._users.clear()
        user = self._users.get(user_id)
        if user is not None and time.monotonic() - user.built > self.max_age_s:
            user = None
        grew = True  # only a read can take the users held over a bound
        if user is None:
            user = self._build(user_id, token)
        elif user.token != token:
            new = self._read(user_id, user.max_id)
            if any(e.kind == ASSIGN_KIND for e in new):
                user = self._build(user_id, token)
            else:
                user.add(new, self.radius)
                user.token = token
        else:
            grew = False
        self._users[user_id] = user
        self._users.move_to_end(user_id)
        if grew:
            held = sum(len(u.turns.docs) for u in self._users.values())
            while len(self._users) > 1 and (
                len(self._users) > self.max_users or held > self.max_turns
            ):
                _, out = self._users.popitem(last=False)
                held -= len(out.turns.docs)
        return user

    def _build(self, user_id: str, token: tuple[int, int]) -> _User:
        self.builds += 1
        user = _User(Key(TURN_WEIGHTS), Key(WINDOW_WEIGHTS), token)
        user.add(self._read(user_id, 0), self.radius)
        return user

    def _read(self, user_id: str, after_id: int) -> list[Event]:
        return self.store.events(user_id=user_id, kinds=_READ_KINDS, after_id=after_id)
