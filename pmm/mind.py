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

import atexit
import logging
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pmm.context.sessions import (
    STORE_KINDS,
    SessionContexts,
    checked_session,
    default_recall_mode,
    recall_weights,
)
from pmm.context.tokens import TokenCounter, get_token_counter
from pmm.dream.processing import Processor
from pmm.dream.upkeep import Upkeep
from pmm.errors import InvalidInputError
from pmm.events.hashing import normalize_ts
from pmm.events.turns import CLEAR_KIND, TURN_KINDS, kind_for_role
from pmm.records import DreamReport, Event, Hit, NewEvent, VerifyReport
from pmm.settings import Settings
from pmm.storage import EventLog, open_store
from pmm.storage.safe_append import join_parts, prepare, warn_once

log = logging.getLogger("pmm")

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
        self._settings = settings
        weights = recall_weights(settings)
        embedder = Processor.early_embedder(settings, embedder)  # before a file is opened
        self.store: EventLog = open_store(
            settings.db_url or settings.db_path,
            max_content_bytes=settings.max_content_bytes,
            timeout=settings.busy_timeout_ms / 1000,
            window_radius=settings.recall_window,
            synchronous=settings.sqlite_synchronous,
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
        # A Mind dropped without close() still releases its thread and file when collected;
        # one still open at interpreter exit is closed by _close_open_minds. Either way the
        # store's close checkpoints the -wal file into the .db file.
        self._finalizer = weakref.finalize(self, _release, self.store, self._worker)
        self._finalizer.atexit = False
        _OPEN.add(self)  # closed at interpreter exit when the caller never did

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
        (``PMM_COMPRESS_AFTER``, SQLite: :meth:`Upkeep.compress_in_passing`), checkpoint
        the -wal file into the database file and close it. Interpreter exit closes a Mind
        left open, and collecting an unclosed Mind closes its file, checkpointed, too."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
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
        (each :class:`NewEvent` may carry its conversation time in ``ts``).

        Nothing is stored when one entry is refused: an empty or whitespace-only turn, a
        text over ``max_content_bytes``, NUL or a lone surrogate raise
        :class:`~pmm.errors.InvalidInputError` (see :meth:`remember_safely` for the lenient
        append of messages a caller cannot fix)."""
        for number, entry in enumerate(entries, 1):
            if entry.role is not None:
                kind_for_role(entry.role)  # validates the role
            content = entry.content
            if entry.kind in TURN_KINDS and isinstance(content, str) and not content.strip():
                raise InvalidInputError(
                    f"entry {number} is an empty turn ({entry.role or entry.kind}): a turn "
                    "needs some text; leave it out"
                )
        events = self.store.append_many(entries)
        inline = self._derived_enabled and self.settings.summary_mode == "inline"
        if not inline:  # inline digests rewrite these rows now: readers read them back
            self._contexts.appended(events)
        if self._derived_enabled:
            self._processor.appended(events, inline=inline)
        return events

    def remember_safely(self, entries: Sequence[NewEvent], *, where: str) -> list[Event]:
        """Store what ``entries`` hold, whatever they hold (what the LangChain integrations
        call; see :mod:`pmm.storage.safe_append`): an oversized text as linked parts, NUL and lone
        surrogates as U+FFFD, empty turns and entries the store refuses left out; one
        warning (naming ``where``) lists what was changed or left out::

            mind.remember_safely([NewEvent("prompt", big_text, "alice", "user")], where="app")
        """
        for entry in entries:  # a bad session or time is the caller's error, not the text's
            if entry.session_id is not None:
                self._session(entry.session_id)
            if entry.ts is not None:
                normalize_ts(entry.ts)
        prepared = prepare(entries, self.settings.max_content_bytes)
        warn_once(prepared.problems, where)
        return self.remember_many(prepared.entries) if prepared.entries else []

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
        include_erased: bool = False,
    ) -> list[Event]:
        """This session's turns since its last clear, oldest first (``limit`` = the newest
        N events), each with its text in ``content``::

            [e.content.lower() for e in mind.history("alice")]

        A message stored as linked parts (see :mod:`pmm.storage.safe_append`) comes back as one
        event with the whole text. Turns whose text is gone, erased by :meth:`forget` or
        compacted away by :meth:`compact`, are left out; ``include_erased=True`` returns
        them too, with ``content=None`` (a compacted turn keeps its ``summary``)."""
        session = self._session(session_id)
        events = join_parts(self._contexts.history(session, limit=limit, kinds=kinds), self.store)
        return events if include_erased else [e for e in events if e.content is not None]

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
        hybrid when embeddings are on, else keyword. ``session_id=None`` searches every
        session."""
        if session_id is not None:
            session_id = self._session(session_id)
        if kinds is not None and set([kinds] if isinstance(kinds, str) else kinds) & set(
            STORE_KINDS
        ):
            raise InvalidInputError(
                f"kinds {', '.join(STORE_KINDS)} are PMMStore's items: search them with "
                "PMMStore.search, which keeps to a namespace"
            )
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
        """Digest and embed everything pending (or ``limit`` events), in batches.

        ``progress(done, total)`` is called after each batch.
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
        """Walk the hash chain (see :meth:`pmm.storage.base.EventLog.verify`)."""
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
        session_ids: Sequence[str] | None = None,
        match: str | None = None,
        reason: str,
    ) -> ErasureReport:
        """Erase events so that no byte of their text stays in the file (see
        :mod:`pmm.retention.erasure`): by id, a whole session, several sessions (``session_ids``:
        one request, one scrub of the file however many), and/or every event whose text,
        summary or keywords hold ``match`` (case-insensitive)::

            report = mind.forget(session_id="alice", reason="user asked")
            report.erased, [m.id for m in report.markers]
            mind.forget(session_ids=["alice/t1", "alice/t2"], reason="account deleted")

        Digesting and embedding wait while it runs, so no digest or vector of the erased
        text is written back afterwards; the context and recall drop the events at once.
        """
        return self._upkeep.forget(
            event_ids=event_ids,
            session_id=session_id,
            session_ids=session_ids,
            match=match,
            reason=reason,
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


_OPEN: weakref.WeakSet[Mind] = weakref.WeakSet()
"""Minds not closed yet (weakly held: a dropped Mind is still collected)."""


@atexit.register
def _close_open_minds() -> None:
    """At interpreter exit, close every Mind the program left open (README quick starts
    never call close()): the worker finishes, and the -wal file is checkpointed into the
    .db file, which then holds everything on its own."""
    for mind in list(_OPEN):
        try:
            mind.close()
        except Exception as exc:  # one Mind's failure must not keep the others open
            log.warning("closing %r at exit failed (%s: %s)", mind, type(exc).__name__, exc)


def _release(store: EventLog, worker: BackgroundWorker | None) -> None:
    if worker is not None:
        worker.stop()
    store.close()
