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

import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pmm.context.sessions import (
    SessionContexts,
    checked_session,
    default_recall_mode,
    recall_weights,
)
from pmm.context.tokens import TokenCounter, get_token_counter
from pmm.dream.processing import Processor
from pmm.dream.upkeep import Upkeep
from pmm.events.turns import CLEAR_KIND, TURN_KINDS, kind_for_role
from pmm.records import DreamReport, Event, Hit, NewEvent, VerifyReport
from pmm.settings import Settings
from pmm.storage import EventLog, open_store

if TYPE_CHECKING:
    from datetime import timedelta

    from langchain_core.language_models import BaseChatModel

    from pmm.context.assembly import Context
    from pmm.digest import Digester
    from pmm.dream.consolidation import SummaryReport
    from pmm.dream.contradictions import ContradictionReport
    from pmm.dream.worker import BackgroundWorker
    from pmm.embed import Embedder
    from pmm.recall.recaller import Recaller
    from pmm.retention.compaction import CompactionReport
    from pmm.retention.erasure import ErasureReport
    from pmm.storage.sqlite.compression import CompressionReport


class Mind:
    """Persistent memory over one event log (see the module docstring for an example).

    Args:
        db_path: The SQLite file or a ``postgresql://`` URL (default ``PMM_DB_PATH``).
        llm: A LangChain chat model for the ``llm`` summarizer.
        digester: Replaces the digest backend the settings would pick (any object with
            ``digest_many``).
        embedder: Replaces the embedding backend (any object with ``embed``).
        settings: Settings to use instead of loading them from the environment.
        **overrides: Any setting by name (``enable_summary=True``, ...); see
            :class:`pmm.settings.Settings`.

    Raises:
        ConfigurationError: A setting is invalid or unknown.
        MissingDependencyError: A setting needs an extra that is not installed.
        DatabaseError: The file is not a PMM database or cannot be opened.
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
        self._settings = settings
        weights = recall_weights(settings)
        embedder = Processor.early_embedder(settings, embedder)  # before a file is opened
        self.store: EventLog = open_store(
            settings.db_url or settings.db_path,
            max_content_bytes=settings.max_content_bytes,
            timeout=settings.busy_timeout_ms / 1000,
            window_radius=settings.recall_window,
        )
        self.counter: TokenCounter = get_token_counter()
        self._closed = False
        self._processor = processor = Processor(
            self.store, settings, llm=llm, digester=digester, embedder=embedder
        )
        # The parts never refer back to this Mind, so dropping it releases the worker.
        self._contexts = SessionContexts(
            self.store, settings, self.counter, weights=weights, embedder=lambda: processor.embedder
        )
        self._upkeep = Upkeep(
            self.store,
            settings,
            self._processor,
            llm=llm,
            on_superseded=self._contexts.forget_facts,
        )
        self._worker = self._processor.start_worker(self.process_pending)
        # A Mind dropped without close() still releases its thread and file when collected
        # (at interpreter exit the worker's own hook flushes instead).
        self._finalizer = weakref.finalize(self, _release, self.store, self._worker)
        self._finalizer.atexit = False

    @property
    def settings(self) -> Settings:
        """The settings in force; assigning new ones applies them to context and upkeep."""
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self._settings = self._contexts.settings = self._upkeep.settings = settings

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Finish background work (within ``flush_timeout``), compress old texts briefly
        (``PMM_COMPRESS_AFTER``, SQLite: :meth:`Upkeep.compress_in_passing`), close the file."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            self._worker.close()
        try:
            self._upkeep.compress_on_close()
        finally:
            self._finalizer()

    def __enter__(self) -> Mind:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        # Consolidation hook: dream on a clean exit (see dream_on_close).
        if exc_type is None and self._derived_enabled and not self._closed:
            self._upkeep.dream_on_close(self.flush)
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
        """Append one turn or note to the chain.

        Args:
            content: The message text.
            role: ``user``, ``assistant``, ``system`` or ``tool``.
            session_id: The conversation (default ``PMM_SESSION_ID``).
            kind: The event kind; defaults from ``role`` (user → prompt, assistant →
                response, system/tool → event).
            meta: JSON metadata, hashed with the event (keep secrets out of it).
            ts: The conversation time (``datetime``, naive = UTC, or ISO-8601 text) for
                imports of past conversations; None = now. It is the row's hashed ``ts``,
                and recall's date key.

        Returns:
            The stored event, with its id and hash.

        Raises:
            InvalidInputError: The content, role, session id or meta is not valid.
        """
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
        """Append one exchange, the user's turn and the AI's reply, atomically.

        Args:
            user_text: The user's message.
            ai_text: The assistant's reply.
            session_id: The conversation (default ``PMM_SESSION_ID``).
            meta: JSON metadata for both events.
            ts: The conversation time, as in :meth:`remember`.

        Returns:
            The two stored events (two turns, two chained events).
        """
        session = self._session(session_id)
        user, ai = self.remember_many(
            [
                NewEvent("prompt", user_text, session, "user", meta, ts),
                NewEvent("response", ai_text, session, "assistant", meta, ts),
            ]
        )
        return user, ai

    def remember_many(self, entries: Sequence[NewEvent]) -> list[Event]:
        """Append several events in one transaction, then digest/embed per the mode.

        Args:
            entries: The events; each :class:`~pmm.records.NewEvent` may carry its
                conversation time in ``ts``.

        Returns:
            The stored events, in order.
        """
        for entry in entries:
            if entry.role is not None:
                kind_for_role(entry.role)  # validates the role
        events = self.store.append_many(entries)
        inline = self._derived_enabled and self.settings.summary_mode == "inline"
        if not inline:  # inline digests rewrite these rows now: readers read them back
            self._contexts.appended(events)
        if self._derived_enabled:
            self._processor.appended(events, inline=inline)
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
        """This session's turns since its last clear, oldest first.

        Args:
            session_id: The conversation (default ``PMM_SESSION_ID``).
            limit: Only the newest N.
            kinds: The event kinds to return (default: turns).

        Returns:
            The events, oldest first.
        """
        return self._contexts.history(self._session(session_id), limit=limit, kinds=kinds)

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

        Args:
            session_id: The conversation (default ``PMM_SESSION_ID``).
            query: The latest message, to find relevant memories for.
            budget_tokens: The token budget (default ``PMM_MAX_TOKENS``).
            human_prefix: Label of user turns in the text.
            ai_prefix: Label of assistant turns in the text.
            as_messages: Also build LangChain messages (``Context.messages``).
            linked_turns: Show the stored summary's ``k`` best-matching turns.

        Returns:
            The context; ``.text()`` is what the model sees.
        """
        return self._contexts.context(
            self._session(session_id),
            query,
            budget_tokens,
            human_prefix=human_prefix,
            ai_prefix=ai_prefix,
            as_messages=as_messages,
            linked_turns=linked_turns,
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
        hybrid when embeddings are on, else keyword.

        Args:
            query: What to look for (plain words; search syntax is never interpreted).
            k: How many hits.
            session_id: Only this session; None searches every session.
            mode: ``keyword``, ``semantic`` or ``hybrid``; None = the default.
            kinds: Only events of these kinds.

        Returns:
            The hits, best first, each with its fused score and the rankers that found it.

        Raises:
            InvalidInputError: The query is not text or the mode is unknown.
        """
        if session_id is not None:
            session_id = self._session(session_id)
        return self._get_recaller().recall(
            query,
            k,
            session_id=session_id,
            mode=mode or default_recall_mode(self.settings),
            kinds=kinds,
        )

    # -- derived data ----------------------------------------------------------------

    def dream(
        self, limit: int | None = None, progress: Callable[[int, int], None] | None = None
    ) -> DreamReport:
        """Digest and embed everything pending, in batches, then consolidate.

        Args:
            limit: Digest at most this many events.
            progress: Called as ``progress(done, total)`` after each batch.

        Returns:
            What was done: digests, vectors, session summaries, contradictions, LLM calls.
        """
        return self._upkeep.dream(limit, progress)

    def pending_count(self) -> int:
        """How many turns still wait for a digest (0 when summaries are off)."""
        return self._processor.pending_count()

    def process_pending(self) -> int:
        """One batch of pending work (used by the background worker); returns items done.
        Idle, one short ``PMM_COMPRESS_AFTER`` pass, which is not counted: the worker does
        not loop on it, so a flush never waits for a compression backlog."""
        done, _, vectors = self._processor.batch(self.settings.summary_batch_size)
        if done or vectors:
            return done + vectors
        self._upkeep.compress_idle()
        return 0

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
        """Walk the hash chain (see :meth:`pmm.storage.base.EventLog.verify`).

        Args:
            expect_head: A head hash printed earlier (or a unique prefix of 8+ hex
                digits): the report is not ok unless the chain still reaches it.

        Returns:
            ``ok``, the rows checked, the head, and the first bad row and why.
        """
        return self.store.verify(expect_head=expect_head)

    def stats(self) -> dict[str, Any]:
        """Counts by kind/session/role, digest and embedding coverage, size on disk."""
        worker = self._processor.worker_status(revive=not self._closed)
        return self._upkeep.stats(self.counter.name, worker)

    # -- internals -------------------------------------------------------------------

    def _session(self, session_id: str | None) -> str:
        return checked_session(session_id, self.settings.session_id)

    def _get_recaller(self) -> Recaller:
        return self._contexts.recaller()

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
        :mod:`pmm.retention.erasure`): by id, a whole session, and/or every event whose text,
        summary or keywords hold ``match`` (case-insensitive)::

            report = mind.forget(session_id="alice", reason="user asked")
            report.erased, [m.id for m in report.markers]

        Digesting and embedding wait while it runs, so no digest or vector of the erased
        text is written back afterwards; the context and recall drop the events at once.

        Args:
            event_ids: Erase these events.
            session_id: Erase this whole session.
            match: Erase every event whose text, summary or keywords hold this text.
            reason: Why; recorded in the chained ``redaction`` event (never the text).

        Returns:
            The ids erased and the chained marker events.

        Raises:
            InvalidInputError: No selector was given, or a selector is not valid.
        """
        return self._upkeep.forget(
            event_ids=event_ids, session_id=session_id, match=match, reason=reason
        )

    def compress(
        self, after: str | int | None = None, *, dry_run: bool = False, retrain: bool = False
    ) -> CompressionReport:
        """Keep the text of old turns compressed, losslessly (zstd with a dictionary
        trained on this file's text, or zlib): all but the ``after`` newest texts
        (``1000``), or those older than an age (``"30d"``); None = ``PMM_COMPRESS_AFTER``.
        Every read decodes them; with the setting on, dream, close and the idle worker run it::

            mind.compress("30d").compressed            # texts compressed now
        """
        return self._upkeep.compress(after, dry_run=dry_run, retrain=retrain)

    def compact(
        self,
        *,
        older_than: str | timedelta,
        session_id: str | None = None,
        dry_run: bool = False,
    ) -> CompactionReport:
        """Drop the raw text of digested turns older than ``older_than`` (``"30d"``),
        keeping their summaries, keywords, vectors and hashes (see
        :mod:`pmm.retention.compaction`)::

            mind.compact(older_than="30d", dry_run=True).compacted   # what would go
        """
        return self._upkeep.compact(older_than=older_than, session_id=session_id, dry_run=dry_run)

    # -- consolidation hooks (logic in pmm/dream/consolidation.py and contradictions.py) ------

    @property
    def should_dream(self) -> bool:
        """True when a pause is worth a dream: ``dream_threshold`` turns wait for a digest
        or for their session summary, or ``dream_max_pending`` turns wait for a digest or a
        vector. Always False while summaries and embeddings are off."""
        return self._derived_enabled and self._upkeep.should_dream()

    def _consolidate(self) -> tuple[SummaryReport, ContradictionReport, int]:
        """Dream's consolidation step (pmm/dream/policy.py); a no-op with summaries off."""
        return self._upkeep.consolidate()


def _release(store: EventLog, worker: BackgroundWorker | None) -> None:
    if worker is not None:
        worker.stop()
    store.close()
