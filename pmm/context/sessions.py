"""The context of a session as :meth:`pmm.Mind.context` assembles it: what is read from the
log (clear marker, key facts, the newest turns that fit, topics, relevant memories, the
stored session summary) before :func:`pmm.context.assembly.assemble` fits it into the budget.

    weights = recall_weights(settings)      # pmm.context.checks: the recall settings checked
    contexts = SessionContexts(store, settings, counter, weights=weights, embedder=get_embedder)
    session = checked_session("alice", settings.session_id)   # pmm.context.checks too
    ctx = contexts.context(session, query="where do I live?", budget_tokens=500)
    clear_after, facts = contexts.state(session)   # clear marker id, key-fact lines
    contexts.history(session, limit=10)             # turns since the clear, oldest first
    contexts.recaller().recall("Lisbon", 5)         # the one recaller (built on first use)
    contexts.forget_facts()    # consolidation superseded statements: rebuild key facts
    contexts.appended(events)  # after a write: kept turns, session and user indexes take them

What has been read of each session is kept and brought up to date incrementally.
``settings`` may be replaced between calls (the recaller keeps those it was built with).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pmm.context.assembly import RECENT_FLOOR, Context, Policy, Turn, assemble
from pmm.context.checks import default_recall_mode
from pmm.context.recent_turns import RecentTurns
from pmm.context.users import UserFacts, effective_scope
from pmm.errors import InvalidInputError
from pmm.events.roles import without_speaker
from pmm.events.turns import CLEAR_KIND, REDACTION_KIND, SUPERSEDES_EDGE, TURN_KINDS, turn_role
from pmm.facts import FactBook
from pmm.storage.watch import LogNow

if TYPE_CHECKING:
    from pmm.context.tokens import TokenCounter
    from pmm.embed import Embedder
    from pmm.recall.recaller import Recaller
    from pmm.records import Event
    from pmm.settings import Settings
    from pmm.storage import EventLog


@dataclass
class _SessionState:
    """What has been read of one session so far (refreshed incrementally)."""

    scanned_upto: int = 0
    clear_after: int = 0
    facts: FactBook = field(default_factory=FactBook)


class SessionContexts:
    """Builds the :class:`~pmm.context.assembly.Context` of any session of one log, and holds the
    recaller it shares with :meth:`pmm.Mind.recall` (``weights`` from
    :func:`pmm.context.checks.recall_weights`; ``embedder`` is called when the recaller is
    built)."""

    def __init__(
        self,
        store: EventLog,
        settings: Settings,
        counter: TokenCounter,
        *,
        weights: dict[str, float],
        embedder: Callable[[], Embedder | None],
    ) -> None:
        self.store = store
        self.settings = settings
        self.counter = counter
        self._weights = weights
        self._embedder = embedder
        self._recaller: Recaller | None = None
        self._sessions: dict[str, _SessionState] = {}
        self._lock = threading.RLock()
        self._recent = RecentTurns(store, counter)
        self._user_facts = UserFacts(store, nlp=settings.facts_nlp)

    def context(
        self,
        session: str,
        query: str | None = None,
        budget_tokens: int | None = None,
        *,
        human_prefix: str = "Human",
        ai_prefix: str = "AI",
        as_messages: bool = False,
        linked_turns: int = 0,
        user: str | None = None,
        skip_turns: Collection[int] = (),
    ) -> Context:
        """The compact, role-labelled memory of ``session`` (see :meth:`pmm.Mind.context`),
        a thread of ``user`` when one is known: in the ``user`` scope (the default then)
        key facts and relevant memories come from all of her threads."""
        budget = self.settings.max_tokens if budget_tokens is None else budget_tokens
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise InvalidInputError(
                f"budget_tokens must be a whole number of tokens (an int), got {budget!r}"
            )
        if budget < 0:
            raise InvalidInputError(f"budget_tokens must be >= 0, got {budget}")
        scope = effective_scope(self.settings.recall_scope, user)
        clear_after, facts = self.state(session)
        if user is not None and scope != "session":
            facts = self._user_facts.lines(user)
        window, complete = self._history_window(session, clear_after, budget)
        if skip_turns:  # the model sees them elsewhere: their tokens go to the rest
            window = [t for t in window if t.event_id not in skip_turns]
        policy = self.policy()
        # Recall runs only when there is something older than the window to find.
        look_back = not complete or scope != "session"
        memories: list[Turn] = []
        # Consolidation hook: the stored session summary stands for turns that do not fit.
        summary = self._summary_lines(session, clear_after, complete, linked_turns)
        if linked_turns > 0:
            memories = self._linked_memories(
                session, clear_after, query or "", linked_turns + len(window)
            )
        elif query and query.strip() and self.settings.recall_k and look_back:
            floor = window[: max(policy.recent_turns, RECENT_FLOOR)]
            seen = {t.event_id for t in floor} | set(skip_turns)
            memories = self._memories(query, session, clear_after, seen, scope, user, budget)
        return assemble(
            session_id=session,
            history=window,
            budget=budget,
            counter=self.counter,
            facts=facts,
            memories=memories,
            human_prefix=human_prefix,
            ai_prefix=ai_prefix,
            as_messages=as_messages,
            summary=summary,
            memory_limit=linked_turns or None,
            query=query,
            policy=policy,
        )

    def policy(self) -> Policy:
        """How the budget is spent, from the ``context_*`` settings and ``recall_k``."""
        s = self.settings
        return Policy(
            recent_turns=s.context_recent_turns,
            memory_tokens=s.context_memory_tokens,
            whole_every=s.context_whole_every,
            spread=s.context_spread,
            facts=s.context_facts,
            max_memories=s.recall_k,
            summary=s.context_summary,
        )

    def state(self, session: str) -> tuple[int, list[str]]:
        """This session's clear marker and key facts, brought up to date with new events.

        Facts are rebuilt from scratch when a turn of the session was redacted, so erased
        text does not live on in the prompt.
        """
        with self._lock:
            state = self._sessions.setdefault(session, self._new_state())
            new = self.store.events(
                session_id=session,
                kinds=("prompt", CLEAR_KIND, REDACTION_KIND),
                after_id=state.scanned_upto,
            )
            seen_upto = max((e.id for e in new), default=state.scanned_upto)
            if any(e.kind == REDACTION_KIND for e in new):
                state = self._sessions[session] = self._new_state()
                new = self.store.events(
                    session_id=session, kinds=("prompt", CLEAR_KIND), before_id=seen_upto + 1
                )
            # Consolidation hook: statements a newer one superseded are not key facts.
            replaced = self.store.edge_sources(
                (e.id for e in new if e.kind == "prompt"), SUPERSEDES_EDGE
            )
            for event in new:
                if event.id in replaced:
                    continue
                if event.kind == CLEAR_KIND:
                    state.clear_after = event.id
                    state.facts.clear()
                elif event.kind == "prompt":
                    role, text = turn_role(event)
                    if role == "user":
                        state.facts.add(text)
            state.scanned_upto = seen_upto
            return state.clear_after, state.facts.lines()

    def history(
        self, session: str, *, limit: int | None = None, kinds: Sequence[str] = TURN_KINDS
    ) -> list[Event]:
        """This session's turns since its last clear, oldest first (``limit`` = newest N)."""
        clear_after, _ = self.state(session)
        events = self.store.events(
            session_id=session,
            kinds=kinds,
            after_id=clear_after,
            newest_first=True,
            limit=limit,
        )
        events.reverse()
        return events

    def recaller(self) -> Recaller:
        """The recaller of this log, built on first use from the settings of that moment."""
        with self._lock:
            if self._recaller is None:
                from pmm.recall.recaller import Recaller

                self._recaller = Recaller(
                    self.store,
                    self._embedder(),
                    weights=self._weights,
                    summaries=self.settings.recall_summaries and self.settings.enable_summary,
                    summary_prior=self.settings.summary_prior,
                    summary_children=self.settings.summary_children,
                )
            return self._recaller

    def appended(self, events: Sequence[Event]) -> None:
        """This process appended ``events``: the kept recent turns and the recaller's
        in-memory session index take them now, at the write, rather than at the next
        context's read (sharing one read of the store's state)."""
        now = LogNow(self.store)
        self._recent.appended(events, now)
        if self._recaller is not None:
            for ranker in (self._recaller.session_ranker, self._recaller.user_ranker):
                if ranker is not None:
                    ranker.appended(events, now)

    def forget_facts(self) -> None:
        """Drop what was read of every session: key facts are rebuilt on the next call."""
        with self._lock:
            self._sessions.clear()
            self._user_facts.clear()

    def _new_state(self) -> _SessionState:
        return _SessionState(facts=FactBook(nlp=self.settings.facts_nlp))

    def _history_window(
        self, session: str, clear_after: int, budget: int
    ) -> tuple[list[Turn], bool]:
        """Newest turns first until they would fill ``budget``; the flag says whether the
        window holds every turn since the clear marker. With summaries off the turns shown
        last time are kept (:mod:`pmm.context.recent_turns`); with summaries on, digests written
        since would change them: read afresh (:meth:`_read_window`)."""
        if self.settings.enable_summary:
            return self._read_window(session, clear_after, budget)
        return self._recent.window(session, clear_after, budget)

    def _read_window(self, session: str, clear_after: int, budget: int) -> tuple[list[Turn], bool]:
        """:meth:`_history_window` read from the log (used with summaries on)."""
        turns: list[Turn] = []
        spent = 0
        before: int | None = None
        use_summaries = self.settings.enable_summary
        raw_turns = self.settings.raw_turns
        page = 64
        while spent < budget:
            rows = self.store.turn_rows(
                session_id=session,
                kinds=TURN_KINDS,
                after_id=clear_after,
                before_id=before,
                limit=page,
            )
            for row in rows:
                role, text = turn_role(row)
                summarized = False
                if use_summaries and len(turns) >= raw_turns and row.summary:
                    summary = without_speaker(role, row.summary)
                    if len(summary) < len(text):
                        text, summarized = summary, True
                turns.append(Turn(role, text, row.id, row.ts, row.session_id, summarized))
                spent += self.counter.count(text) + 4
                if spent >= budget:
                    return turns, False
            if len(rows) < page:
                return turns, True
            before = rows[-1].id
        return turns, False

    def _memories(
        self,
        query: str,
        session: str,
        clear_after: int,
        seen: set[int],
        scope: str,
        user: str | None,
        budget: int,
    ) -> list[Turn]:
        """Turns relevant to ``query`` other than those ``seen`` (the recent floor, which
        the context shows anyway, and turns the model sees elsewhere), best first: of this
        session, of all the user's sessions (``user`` scope) or of the whole log (``all``);
        as many as ``budget`` could hold (see :func:`memory_candidates`), at most
        ``recall_k``."""
        # Indexing new turns costs a write; within one session it can wait while every turn
        # not yet indexed is in the floor anyway (the background worker and dream index).
        sync = scope != "session" or not seen or self.store.search_index_upto() < min(seen) - 1
        wanted = min(self.settings.recall_k, memory_candidates(budget))
        hits = self.recaller().recall(
            query,
            wanted + 8,  # some may predate this session's clear marker
            session_id=session if scope == "session" else None,
            user_id=user if scope == "user" else None,
            mode=default_recall_mode(self.settings),
            exclude_ids=seen,
            sync_index=sync,
        )
        memories: list[Turn] = []
        for hit in hits:
            event = hit.event
            if event.id in seen or (event.session_id == session and event.id <= clear_after):
                continue
            role, text = turn_role(event)
            digest = ""
            if self.settings.enable_summary and event.summary:
                digest = without_speaker(role, event.summary)
            memories.append(Turn(role, text, event.id, event.ts, event.session_id, alt=digest))
            if len(memories) >= wanted:
                break
        return memories

    def _current_summary(self, session: str, clear_after: int) -> Event | None:
        if not (self.settings.enable_summary and self.settings.session_summaries):
            return None
        from pmm.dream.consolidation import current_summary

        summary = current_summary(self.store, session)
        if summary is None or int(summary.meta.get("covers_from", 0)) <= clear_after:
            return None
        return summary

    def _summary_lines(
        self, session: str, clear_after: int, complete: bool, linked: int
    ) -> list[tuple[str, tuple[int, ...]]]:
        """``(bullet, cited ids)`` of the stored session summary, when the window does not
        hold every turn (or ``linked`` turns are asked for); :func:`pmm.context.assembly.assemble`
        keeps the bullets about turns it leaves out."""
        if complete and not linked:
            return []
        summary = self._current_summary(session, clear_after)
        if summary is None:
            return []
        from pmm.dream.consolidation import summary_bullets

        bullets = [b for b in summary_bullets(summary) if b.turns]
        return [(b.text, b.turns) for b in bullets]

    def _linked_memories(self, session: str, clear_after: int, query: str, k: int) -> list[Turn]:
        """The ``k`` turns of the session summary that best match ``query``, best first
        (:func:`pmm.context.assembly.assemble` shows the best ones that are not recent turns)."""
        summary = self._current_summary(session, clear_after)
        if summary is None:
            return []
        from pmm.dream.consolidation import best_children

        out = []
        for event in best_children(self.store, summary, query, k):
            role, text = turn_role(event)
            if event.summary:
                text = without_speaker(role, event.summary)
            out.append(Turn(role, text, event.id, event.ts, event.session_id, bool(event.summary)))
        return out


MEMORY_CANDIDATES_PER_TOKEN = 1 / 15
"""Recall hits a context asks for per token of budget: a memory line costs 15 tokens or
more, so the budget never runs out of candidates before it runs out of tokens."""


def memory_candidates(budget: int) -> int:
    """How many memories a context of ``budget`` tokens asks recall for (10 at least)."""
    return max(10, int(budget * MEMORY_CANDIDATES_PER_TOKEN))
