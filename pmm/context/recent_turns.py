"""The newest turns of each session as the context shows them with summaries off, kept
between calls, so that a context reads only the turns appended since the last one.

    recent = RecentTurns(store, counter)
    turns, complete = recent.window("alice", clear_after, budget=2000)  # newest first
    recent.appended(events)  # this process's append: its turns are taken as given

With summaries off a turn shows as it is stored (role and text, or its summary once its
text was compacted away), so what was shown stays right until a stored turn is rewritten,
which only a redaction or a compaction does, and both append a marker event. Each call
first compares the store's ``data_version`` with the last one seen; when it moved, a
marker appended since (by this process or another) drops every kept session; otherwise
only the turns after the newest kept one are read. A turn's token cost (``count(text) +
4``) is counted once. :meth:`RecentTurns.appended` takes this process's own appends
without reading them back, when nothing else was appended in between (see
:class:`pmm.storage.watch.LogWatch`); the next call then reads nothing from the log and counts
the new turns' tokens.

A :class:`RecentTurns` is thread-safe and holds at most ``max_sessions`` sessions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pmm.context.assembly import Turn
from pmm.events.turns import CLEAR_KIND, TURN_KINDS, turn_role
from pmm.storage.watch import LogNow, LogWatch

if TYPE_CHECKING:
    from pmm.context.tokens import TokenCounter
    from pmm.records import Event, TurnRow
    from pmm.storage import EventLog

PAGE = 64
"""Turns read per query when the kept ones do not fill the budget."""
UNCOUNTED = -1
"""The cost of a turn taken from an append, not yet counted (counting is the reader's)."""


@dataclass
class _Kept:
    """One session's newest turns since ``clear_after``, newest first, each with its token
    cost: from the newest turn as of ``token`` down to some older one, none left out;
    ``complete``: down to the first turn after ``clear_after``."""

    clear_after: int
    token: tuple[int, int]
    turns: list[tuple[Turn, int]] = field(default_factory=list)
    complete: bool = False


class RecentTurns:
    """Keeps the recent turns of sessions between context calls (see the module docstring)."""

    def __init__(self, store: EventLog, counter: TokenCounter, *, max_sessions: int = 64) -> None:
        self.store = store
        self.counter = counter
        self.max_sessions = max_sessions
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()
        self._watch = LogWatch(store)

    def window(self, session: str, clear_after: int, budget: int) -> tuple[list[Turn], bool]:
        """The session's turns after ``clear_after``, newest first, until they would fill
        ``budget`` tokens; the flag says whether they are every turn after it."""
        with self._lock:
            token, rewritten = self._watch.look()
            if rewritten:
                self._kept.clear()
            kept = self._kept.pop(session, None)
            if kept is not None and kept.clear_after == clear_after and kept.turns:
                if kept.token != token:
                    newest = kept.turns[0][0].event_id
                    rows = self.store.turn_rows(
                        session_id=session, kinds=TURN_KINDS, after_id=newest, limit=PAGE
                    )
                    if len(rows) < PAGE:
                        kept.turns[:0] = [self._shown(row) for row in rows]
                        kept.token = token
                    else:  # more new turns than a page: read afresh
                        kept = None
            else:
                kept = None
            if kept is None:
                kept = _Kept(clear_after, token)
            self._kept[session] = kept
            while len(self._kept) > self.max_sessions:
                self._kept.popitem(last=False)
            return self._fill(session, kept, budget)

    def appended(self, events: Sequence[Event], now: LogNow | None = None) -> None:
        """This process appended ``events`` (one transaction): prepend their turns to the
        kept sessions they belong to, when nothing else was appended in between (``now``:
        the store's state shared by the readers told about this append). Their token
        costs are counted by the next :meth:`window` that shows them."""
        if not events:
            return
        with self._lock:
            mine = {s for e in events if (s := e.session_id) is not None and s in self._kept}
            if not mine:
                return
            before = self._watch.token
            token = self._watch.follows(events, now)
            if token is None:
                return  # the next call reads the log
            for session, kept in list(self._kept.items()):
                if kept.token != before:
                    continue  # not current before this append: the next call reads the log
                if session not in mine:  # nothing new for it: the new rows are these events
                    kept.token = token
                    continue
                theirs = [e for e in events if e.session_id == session]
                if any(e.kind == CLEAR_KIND for e in theirs):
                    del self._kept[session]
                    continue
                # a window() between the commit and this call may have read them already
                newest = kept.turns[0][0].event_id if kept.turns else kept.clear_after
                turns = [e for e in theirs if e.kind in TURN_KINDS and e.id > newest]
                kept.turns[:0] = [self._shown(e, counted=False) for e in reversed(turns)]
                kept.token = token
            self._watch.advance(events, token)

    def _fill(self, session: str, kept: _Kept, budget: int) -> tuple[list[Turn], bool]:
        turns: list[Turn] = []
        spent = 0
        if budget <= 0:
            return turns, False
        for i, (turn, cost) in enumerate(kept.turns):
            if cost == UNCOUNTED:
                cost = self.counter.count(turn.text) + 4
                kept.turns[i] = turn, cost
            turns.append(turn)
            spent += cost
            if spent >= budget:
                del kept.turns[len(turns) :]  # keep what is shown, not what is older
                kept.complete = False
                return turns, False
        while not kept.complete:
            rows = self.store.turn_rows(
                session_id=session,
                kinds=TURN_KINDS,
                after_id=kept.clear_after,
                before_id=turns[-1].event_id if turns else None,
                limit=PAGE,
            )
            for row in rows:
                shown = self._shown(row)
                kept.turns.append(shown)
                turns.append(shown[0])
                spent += shown[1]
                if spent >= budget:
                    return turns, False
            kept.complete = len(rows) < PAGE
        return turns, True

    def _shown(self, row: TurnRow | Event, *, counted: bool = True) -> tuple[Turn, int]:
        """A stored turn as the context shows it with summaries off, and its token cost
        (``counted=False``: :data:`UNCOUNTED`, counted when first shown)."""
        role, text = turn_role(row)
        cost = self.counter.count(text) + 4 if counted else UNCOUNTED
        return Turn(role, text, row.id, row.ts, row.session_id), cost
