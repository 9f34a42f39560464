"""Mind: the one object that wires the event log, digests, embeddings, recall and context.

    from pmm import Mind

    with Mind("pmm.db", enable_summary=True, summarizer="heuristic") as mind:
        mind.remember("I moved to Lisbon", role="user", session_id="alice")
        mind.dream()                                   # digest + embed what is pending
        mind.recall("where do I live?", k=5, session_id="alice")
        print(mind.context("alice", query="where do I live?").text())
        mind.verify().ok

Keyword arguments are PMM settings (``enable_summary`` = ``PMM_ENABLE_SUMMARY``, ...); an
argument wins over the environment, which wins over ``.env`` and the defaults.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .context import Context, Turn, assemble
from .errors import ConfigurationError, InvalidInputError, UnsupportedOperationError
from .facts import FactBook
from .processing import Processor
from .records import DreamReport, Event, Hit, NewEvent, VerifyReport
from .roles import without_speaker
from .settings import Settings
from .storage import EventLog, open_store
from .tokens import TokenCounter, get_token_counter
from .turns import (
    CLEAR_KIND,
    REDACTION_KIND,
    SUPERSEDES_EDGE,
    TURN_KINDS,
    kind_for_role,
    turn_role,
)

if TYPE_CHECKING:
    from datetime import timedelta

    from langchain_core.language_models import BaseChatModel

    from .compaction import CompactionReport
    from .consolidate import SummaryReport
    from .contradictions import ContradictionReport
    from .digest import Digester
    from .embed import Embedder
    from .erasure import ErasureReport
    from .recall import Recaller
    from .storage.sqlite.compression import CompressionReport
    from .worker import BackgroundWorker

log = logging.getLogger(__name__)


@dataclass
class _SessionState:
    """What Mind has read of one session so far (refreshed incrementally)."""

    scanned_upto: int = 0
    clear_after: int = 0
    facts: FactBook = field(default_factory=FactBook)


class Mind:
    """Persistent memory over one event log (see the module docstring for an example).

    ``llm`` is a LangChain chat model for the ``llm`` summarizer. ``digester`` and
    ``embedder`` replace the backends the settings would pick (any object with
    ``digest_many`` / ``embed``).
    """

    def __init__(
        self,
        db_path: str | None = None,
        *,
        llm: BaseChatModel | None = None,
        digester: Digester | None = None,
        embedder: Embedder | None = None,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> None:
        if settings is None:
            settings = Settings.load(db_path=db_path, **overrides)
        elif db_path is not None or overrides:
            settings = settings.with_(**({"db_path": db_path} if db_path else {}), **overrides)
        self.settings = settings
        from .recall import parse_weights

        self._recall_weights = parse_weights(settings.recall_weights)
        if settings.recall_window > 20:
            raise ConfigurationError(
                f"PMM_RECALL_WINDOW={settings.recall_window} is not valid: use 0..20 turns"
            )
        if settings.enable_embeddings and embedder is None:
            from .embed import build_embedder

            # Cheap (the model loads on first use), and a missing [embeddings] extra fails
            # here, with one line saying what to install, not later in the worker.
            embedder = build_embedder(settings)
        self.store: EventLog = open_store(
            settings.db_url or settings.db_path,
            max_content_bytes=settings.max_content_bytes,
            timeout=settings.busy_timeout_ms / 1000,
            window_radius=settings.recall_window,
        )
        self.counter: TokenCounter = get_token_counter()
        self._llm = llm
        self._recaller: Recaller | None = None
        self._sessions: dict[str, _SessionState] = {}
        self._lock = threading.RLock()
        self._worker: BackgroundWorker | None = None
        self._closed = False
        self._warned_no_llm = False
        self._warned_compress = False
        self._processor = Processor(
            self.store, settings, llm=llm, digester=digester, embedder=embedder
        )
        if self._derived_enabled and settings.summary_mode == "background":
            from .worker import BackgroundWorker

            self._worker = BackgroundWorker(
                self.process_pending, name="pmm-digest", flush_timeout=settings.flush_timeout
            )
            self._worker.wake()  # events left pending by an earlier process
        # A Mind dropped without close() still releases its thread and file when collected
        # (at interpreter exit the worker's own hook flushes instead).
        self._finalizer = weakref.finalize(self, _release, self.store, self._worker)
        self._finalizer.atexit = False

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Finish background work (within ``flush_timeout``) and close the file."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            self._worker.close()
        self._finalizer()

    def __enter__(self) -> Mind:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        # Consolidation hook: dream on a clean exit (see dream_on_close).
        if (
            exc_type is None
            and self.settings.dream_on_close
            and self._derived_enabled
            and not self._closed
        ):
            self.flush()
            try:
                self.dream()
            except Exception as exc:  # what is stored stays stored; it stays pending
                log.warning(
                    "dream on close failed (%s: %s); pending work stays for the next dream "
                    "(set PMM_DREAM_ON_CLOSE=0 to skip it)",
                    type(exc).__name__,
                    exc,
                )
        self.close()

    def __repr__(self) -> str:
        return f"Mind({self.settings.db_path!r})"

    @property
    def _derived_enabled(self) -> bool:
        return self.settings.enable_summary or self.settings.enable_embeddings

    # -- writing ---------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        role: str,
        session_id: str | None = None,
        kind: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
    ) -> Event:
        """Append one turn or note; ``kind`` defaults from ``role`` (user → prompt,
        assistant → response, system/tool → event). ``ts`` is the conversation time
        (``datetime``, naive = UTC, or ISO-8601 text) for imports of past conversations;
        None = now. It is the row's hashed ``ts``, and recall's date key."""
        session = self._session(session_id)
        kind = kind or kind_for_role(role)
        [event] = self.remember_many([NewEvent(kind, content, session, role, meta, ts)])
        return event

    def remember_turn(
        self,
        user_text: str,
        ai_text: str,
        *,
        session_id: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
    ) -> tuple[Event, Event]:
        """Append one exchange, the user's turn and the AI's reply (two turns, two chained
        events), atomically (``ts``: the conversation time, as in :meth:`remember`)."""
        session = self._session(session_id)
        user, ai = self.remember_many(
            [
                NewEvent("prompt", user_text, session, "user", meta, ts),
                NewEvent("response", ai_text, session, "assistant", meta, ts),
            ]
        )
        return user, ai

    def remember_many(self, entries: Sequence[NewEvent]) -> list[Event]:
        """Append several events in one transaction, then digest/embed per the mode
        (each :class:`NewEvent` may carry its conversation time in ``ts``)."""
        for entry in entries:
            if entry.role is not None:
                kind_for_role(entry.role)  # validates the role
        events = self.store.append_many(entries)
        if self._derived_enabled:
            if self.settings.summary_mode == "inline":
                self._processor.process_events(events)
            elif self._worker is not None:
                self._worker.wake()
        return events

    def clear(self, session_id: str | None = None) -> Event:
        """Start this session's history afresh. Nothing is deleted: a chained ``clear``
        marker is appended and history (and key facts) start after it."""
        session = self._session(session_id)
        return self.store.append(CLEAR_KIND, "history cleared", session_id=session, role="system")

    # -- reading ---------------------------------------------------------------------

    def history(
        self,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        kinds: Sequence[str] = TURN_KINDS,
    ) -> list[Event]:
        """This session's turns since its last clear, oldest first (``limit`` = newest N)."""
        session = self._session(session_id)
        clear_after, _ = self._state(session)
        events = self.store.events(
            session_id=session,
            kinds=kinds,
            after_id=clear_after,
            newest_first=True,
            limit=limit,
        )
        events.reverse()
        return events

    def context(
        self,
        session_id: str | None = None,
        query: str | None = None,
        budget_tokens: int | None = None,
        *,
        human_prefix: str = "Human",
        ai_prefix: str = "AI",
        as_messages: bool = False,
        linked_turns: int = 0,
    ) -> Context:
        """The compact, role-labelled memory of a session within ``budget_tokens``.

        Newest turns come first and whole; older turns use their summary when summaries
        are on; "Key information" lists what the user said about themselves; with a
        ``query`` and recall available, "Relevant memories" adds older matching turns.
        When the session's turns no longer fit, "Earlier in this conversation" shows the
        stored session summary for them (written by :meth:`dream`). ``linked_turns=k``
        makes "Relevant memories" the summary's ``k`` turns that best match ``query``
        (deterministic: no recall ranking), instead of recall's hits.
        """
        session = self._session(session_id)
        budget = self.settings.max_tokens if budget_tokens is None else budget_tokens
        if budget < 0:
            raise InvalidInputError(f"budget_tokens must be >= 0, got {budget}")
        clear_after, facts = self._state(session)
        window, complete = self._history_window(session, clear_after, budget)
        if self.settings.enable_summary:
            facts += self._topic_lines(session, clear_after)
        # Recall runs only when there is something older than the window to find.
        look_back = not complete or self.settings.recall_scope == "all"
        memories: list[Turn] = []
        # Consolidation hook: the stored session summary stands for turns that do not fit.
        summary = self._summary_lines(session, clear_after, complete, linked_turns)
        if linked_turns > 0:
            memories = self._linked_memories(session, clear_after, query or "", linked_turns)
        elif query and query.strip() and self.settings.recall_k and look_back:
            memories = self._memories(query, session, clear_after, window)
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
        )

    def recall(
        self,
        query: str,
        k: int = 10,
        *,
        session_id: str | None = None,
        mode: str | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Events relevant to ``query``, best first: ``mode`` ``keyword`` (BM25),
        ``semantic`` (embeddings) or ``hybrid`` (both, fused by reciprocal rank); None =
        hybrid when embeddings are on, else keyword. ``session_id=None`` searches every
        session."""
        if session_id is not None:
            session_id = self._session(session_id)
        return self._get_recaller().recall(
            query, k, session_id=session_id, mode=mode or self._default_mode, kinds=kinds
        )

    @property
    def _default_mode(self) -> str:
        return "hybrid" if self.settings.enable_embeddings else "keyword"

    # -- derived data ----------------------------------------------------------------

    def dream(
        self, limit: int | None = None, progress: Callable[[int, int], None] | None = None
    ) -> DreamReport:
        """Digest and embed everything pending (or ``limit`` events), in batches.

        ``progress(done, total)`` is called after each batch.
        """
        started = time.perf_counter()
        digested, embedded, methods = self._processor.run(limit, progress)
        summaries, contradictions, summary_vectors = self._consolidate()
        compressed = self._compress_old()
        return DreamReport(
            digested=digested,
            embedded=embedded + summary_vectors,
            methods=dict(methods),
            pending=self.pending_count(),
            seconds=time.perf_counter() - started,
            summaries=summaries.created,
            superseded_summaries=summaries.superseded,
            dropped_bullets=summaries.dropped_bullets,
            contradictions=contradictions.superseded,
            llm_calls=summaries.llm_calls + contradictions.llm_calls,
            compressed=compressed,
        )

    def _compress_old(self) -> int:
        """Dream's last step: compress old texts when ``PMM_COMPRESS_AFTER`` is set."""
        if not self.settings.compress_after:
            return 0
        if not hasattr(self.store, "compress"):
            if not self._warned_compress:
                self._warned_compress = True
                log.warning(
                    "PMM_COMPRESS_AFTER is set, but this storage backend (%s) does not "
                    "compress text: it is ignored",
                    type(self.store).__name__,
                )
            return 0
        return self.compress().compressed

    def pending_count(self) -> int:
        """How many turns still wait for a digest (0 when summaries are off)."""
        return self._processor.pending_count()

    def process_pending(self) -> int:
        """One batch of pending work (used by the background worker); returns items done."""
        done, _, vectors = self._processor.batch(self.settings.summary_batch_size)
        return done + vectors

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for the background worker to finish what is pending now."""
        return True if self._worker is None else self._worker.flush(timeout)

    @property
    def digester(self) -> Digester:
        """The digest backend chain for the configured summarizer (built on first use)."""
        return self._processor.digester

    @property
    def embedder(self) -> Embedder | None:
        """The embedding backend, or None when embeddings are off (loaded on first use)."""
        return self._processor.embedder

    # -- admin -----------------------------------------------------------------------

    def verify(self, *, expect_head: str | None = None) -> VerifyReport:
        """Walk the hash chain (see :meth:`pmm.storage.base.EventLog.verify`)."""
        return self.store.verify(expect_head=expect_head)

    def stats(self) -> dict[str, Any]:
        """Counts by kind/session/role, digest and embedding coverage, size on disk."""
        stats = self.store.stats()
        turns = self.store.count(kinds=TURN_KINDS)
        stats["turns"] = turns
        stats["pending_digests"] = self.pending_count()  # 0 when summaries are off
        stats["token_counter"] = self.counter.name
        stats["settings"] = {
            "enable_summary": self.settings.enable_summary,
            "summary_mode": self.settings.summary_mode,
            "summarizer": self.settings.summarizer,
            "enable_embeddings": self.settings.enable_embeddings,
            "max_tokens": self.settings.max_tokens,
        }
        stats["worker"] = self._worker_status()
        return stats

    def _worker_status(self) -> dict[str, Any] | None:
        """The background worker's :meth:`~pmm.worker.BackgroundWorker.status` (a dead
        thread is restarted first and counted in ``restarts``); None without a worker."""
        if self._worker is None:
            return None
        if not self._closed:
            self._worker.revive()
        return self._worker.status()

    # -- internals -------------------------------------------------------------------

    def _session(self, session_id: str | None) -> str:
        session = self.settings.session_id if session_id is None else session_id
        if not isinstance(session, str) or not session.strip():
            raise InvalidInputError(f"session_id must be a non-empty string, got {session!r}")
        try:
            session.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInputError(
                f"session_id {session!r} holds a lone surrogate, which UTF-8 cannot store"
            ) from None
        return session

    def _new_session_state(self) -> _SessionState:
        return _SessionState(facts=FactBook(nlp=self.settings.facts_nlp))

    def _state(self, session: str) -> tuple[int, list[str]]:
        """This session's clear marker and key facts, brought up to date with new events.

        Facts are rebuilt from scratch when a turn of the session was redacted, so erased
        text does not live on in the prompt.
        """
        with self._lock:
            state = self._sessions.setdefault(session, self._new_session_state())
            new = self.store.events(
                session_id=session,
                kinds=("prompt", CLEAR_KIND, REDACTION_KIND),
                after_id=state.scanned_upto,
            )
            seen_upto = max((e.id for e in new), default=state.scanned_upto)
            if any(e.kind == REDACTION_KIND for e in new):
                state = self._sessions[session] = self._new_session_state()
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

    def _history_window(
        self, session: str, clear_after: int, budget: int
    ) -> tuple[list[Turn], bool]:
        """Newest turns first, read page by page until they would fill ``budget``; the flag
        says whether the window holds every turn since the clear marker."""
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

    def _topic_lines(self, session: str, clear_after: int) -> list[str]:
        """The most frequent keywords of this session's digested turns (a "Topics" line)."""
        events = self.store.events(
            session_id=session,
            kinds=TURN_KINDS,
            after_id=clear_after,
            newest_first=True,
            limit=200,
        )
        counts: Counter[str] = Counter()
        for event in events:
            counts.update({k.strip(): 1 for k in event.keywords if k.strip()})
        top = [k for k, n in counts.most_common(8) if n > 1 or len(counts) <= 8]
        return [f"Topics: {', '.join(top)}"] if top else []

    def _memories(
        self, query: str, session: str, clear_after: int, window: list[Turn]
    ) -> list[Turn]:
        """Older turns relevant to ``query`` that are not in the recent window."""
        seen = {t.event_id for t in window}
        scope_all = self.settings.recall_scope == "all"
        # Indexing new turns costs a write; within one session it can wait while every turn
        # not yet indexed is in the window anyway (the background worker and dream index).
        sync = scope_all or not seen or self.store.search_index_upto() < min(seen) - 1
        hits = self._get_recaller().recall(
            query,
            self.settings.recall_k * 2,  # some may predate this session's clear marker
            session_id=None if scope_all else session,
            mode=self._default_mode,
            exclude_ids=seen,
            sync_index=sync,
        )
        memories: list[Turn] = []
        for hit in hits:
            event = hit.event
            if event.id in seen or (event.session_id == session and event.id <= clear_after):
                continue
            role, text = turn_role(event)
            if self.settings.enable_summary and event.summary:
                text = without_speaker(role, event.summary)
            memories.append(
                Turn(role, text, event.id, event.ts, event.session_id, bool(event.summary))
            )
            if len(memories) >= self.settings.recall_k:
                break
        return memories

    def _get_recaller(self) -> Recaller:
        with self._lock:
            if self._recaller is None:
                from .recall import Recaller

                self._recaller = Recaller(
                    self.store,
                    self.embedder,
                    weights=self._recall_weights,
                    summaries=self.settings.recall_summaries and self.settings.enable_summary,
                    summary_prior=self.settings.summary_prior,
                    summary_children=self.settings.summary_children,
                )
            return self._recaller

    # -- message ids (LangChain v1 middleware) -----------------------------------------

    def stored_message_ids(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these LangChain message ids this session already holds (events appended
        with ``meta["message_id"]``): what lets a caller store each message exactly once."""
        return self.store.stored_meta_values(
            session_id=self._session(session_id), field="message_id", values=message_ids
        )

    # -- erasure -----------------------------------------------------------------------

    def forget(
        self,
        *,
        event_ids: Sequence[int] | None = None,
        session_id: str | None = None,
        match: str | None = None,
        reason: str,
    ) -> ErasureReport:
        """Erase events so that no byte of their text stays in the file (see
        :mod:`pmm.erasure`): by id, a whole session, and/or every event whose text,
        summary or keywords hold ``match`` (case-insensitive)::

            report = mind.forget(session_id="alice", reason="user asked")
            report.erased, [m.id for m in report.markers]

        Digesting and embedding wait while it runs, so no digest or vector of the erased
        text is written back afterwards; the context and recall drop the events at once.
        """
        with self._processor.lock:
            return self.store.forget(
                event_ids=event_ids, session_id=session_id, match=match, reason=reason
            )

    def compress(
        self, after: str | int | None = None, *, dry_run: bool = False, retrain: bool = False
    ) -> CompressionReport:
        """Keep the text of old turns compressed, losslessly (zstd with a dictionary
        trained on this file's text, or zlib): all but the ``after`` newest texts
        (``1000``), or those older than an age (``"30d"``); None = ``PMM_COMPRESS_AFTER``.
        Every read decodes them; ``dream()`` runs this when the setting is on::

            mind.compress("30d").compressed            # texts compressed now
        """
        after = self.settings.compress_after if after is None else after
        if after is None or after == "":
            raise InvalidInputError(
                "compression is off: pass after= (a count like 1000 or an age like 30d) "
                "or set PMM_COMPRESS_AFTER"
            )
        compress = getattr(self.store, "compress", None)
        if compress is None:
            raise UnsupportedOperationError(
                f"{type(self.store).__name__} does not compress text (SQLite files do)"
            )
        with self._processor.lock:
            report: CompressionReport = compress(after, dry_run=dry_run, retrain=retrain)
            return report

    def compact(
        self,
        *,
        older_than: str | timedelta,
        session_id: str | None = None,
        dry_run: bool = False,
    ) -> CompactionReport:
        """Drop the raw text of digested turns older than ``older_than`` (``"30d"``),
        keeping their summaries, keywords, vectors and hashes (see :mod:`pmm.compaction`)::

            mind.compact(older_than="30d", dry_run=True).compacted   # what would go
        """
        with self._processor.lock:
            return self.store.compact(older_than=older_than, session_id=session_id, dry_run=dry_run)

    # -- consolidation hooks (logic in pmm/consolidate.py, pmm/contradictions.py) -----

    @property
    def should_dream(self) -> bool:
        """True when a pause is worth a dream: ``dream_threshold`` turns wait for a digest
        or for their session summary, or ``dream_max_pending`` turns wait for a digest or a
        vector. Always False while summaries and embeddings are off."""
        if not self._derived_enabled:
            return False
        from .dream_policy import should_dream

        embedder = self.embedder
        vectors = (
            self.store.count_unembedded(embedder.model_name, kinds=TURN_KINDS) if embedder else 0
        )
        return should_dream(
            self.store, self.settings, pending_digests=self.pending_count(), pending_vectors=vectors
        )

    def _consolidate(self) -> tuple[SummaryReport, ContradictionReport, int]:
        """Dream's consolidation step (pmm/dream_policy.py); a no-op with summaries off."""
        from .dream_policy import consolidate

        with self._processor.lock:
            chat = self._chat_model() if self.settings.enable_summary else None
            summaries, contradictions, vectors = consolidate(
                self.store, self.settings, chat, self.embedder
            )
        if contradictions.superseded:
            with self._lock:
                self._sessions.clear()  # key facts are rebuilt without superseded statements
        return summaries, contradictions, vectors

    def _current_summary(self, session: str, clear_after: int) -> Event | None:
        if not (self.settings.enable_summary and self.settings.session_summaries):
            return None
        from .consolidate import current_summary

        summary = current_summary(self.store, session)
        if summary is None or int(summary.meta.get("covers_from", 0)) <= clear_after:
            return None
        return summary

    def _summary_lines(
        self, session: str, clear_after: int, complete: bool, linked: int
    ) -> list[tuple[str, int]]:
        """``(bullet, first cited id)`` of the stored session summary, when the window does
        not hold every turn (or ``linked`` turns are asked for)."""
        if complete and not linked:
            return []
        summary = self._current_summary(session, clear_after)
        if summary is None:
            return []
        from .consolidate import summary_bullets

        bullets = [b for b in summary_bullets(summary) if b.turns]
        return [(b.text, -1 if linked else min(b.turns)) for b in bullets]

    def _linked_memories(self, session: str, clear_after: int, query: str, k: int) -> list[Turn]:
        """The ``k`` turns of the session summary that best match ``query``."""
        summary = self._current_summary(session, clear_after)
        if summary is None:
            return []
        from .consolidate import best_children

        out = []
        for event in best_children(self.store, summary, query, k):
            role, text = turn_role(event)
            if event.summary:
                text = without_speaker(role, event.summary)
            out.append(Turn(role, text, event.id, event.ts, event.session_id, bool(event.summary)))
        return out

    def _chat_model(self) -> Any:
        """The chat model consolidation uses: the one passed in, else ChatOpenAI when the
        summarizer is llm or auto and OPENAI_API_KEY is set; None = heuristics."""
        if self._llm is not None:
            return self._llm
        from .dream_policy import default_chat_model
        from .errors import PMMError

        try:
            self._llm = default_chat_model(self.settings)
        except PMMError as exc:
            if not self._warned_no_llm:
                self._warned_no_llm = True
                log.warning("consolidation runs without an llm (%s): using heuristics", exc)
            return None
        return self._llm


def _release(store: EventLog, worker: BackgroundWorker | None) -> None:
    if worker is not None:
        worker.stop()
    store.close()
