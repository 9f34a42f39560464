"""Digesting and embedding pending turns: the work behind :meth:`pmm.Mind.dream`, inline
mode and the background worker, for one Mind.

    embedder = Processor.early_embedder(settings, None)  # a missing extra fails here
    processor = Processor(store, settings, embedder=embedder)
    digested, embedded, methods = processor.run(limit=None, progress=None)
    processor.process_events(new_events)        # inline mode: right after an append
    worker = processor.start_worker(one_batch)  # background mode: the digest thread
    processor.appended(new_events, inline=False)  # inline: process them; else wake it
    processor.worker_status(revive=True)        # None without a worker

The digester and embedder are built on first use unless passed in (``early_embedder``
builds the embedder up front; its model still loads on first use).
``lock`` serializes this work with erasure and compaction, so no digest or vector of erased
text is written back.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.events.turns import TURN_KINDS, turn_role
from pmm.models.redact import error_text, remember_secrets_of

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from pmm.digest import Digester
    from pmm.dream.worker import BackgroundWorker
    from pmm.embed import Embedder
    from pmm.records import Event
    from pmm.settings import Settings
    from pmm.storage import EventLog

log = logging.getLogger(__name__)


class Processor:
    """Digests (summaries on) and embeds (embeddings on) what the log holds undone."""

    def __init__(
        self,
        store: EventLog,
        settings: Settings,
        *,
        llm: BaseChatModel | None = None,
        digester: Digester | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        remember_secrets_of(llm, digester, embedder)  # keys handed in code: never logged
        self._llm = llm
        self._digester = digester
        self._embedder = embedder
        self._build_lock = threading.Lock()
        self.lock = threading.Lock()
        self.worker: BackgroundWorker | None = None

    @staticmethod
    def early_embedder(settings: Settings, embedder: Embedder | None) -> Embedder | None:
        """``embedder``, else with embeddings on the one the settings pick, built now."""
        if settings.enable_embeddings and embedder is None:
            from pmm.embed import build_embedder

            # Cheap (the model loads on first use), and a missing [embeddings] extra fails
            # here, with one line saying what to install, not later in the worker.
            embedder = build_embedder(settings)
        return embedder

    @property
    def digester(self) -> Digester:
        """The digest backend chain for the configured summarizer (built on first use)."""
        with self._build_lock:
            if self._digester is None:
                from pmm.digest.select import build_digester

                self._digester = build_digester(self.settings, llm=self._llm)
            return self._digester

    @property
    def embedder(self) -> Embedder | None:
        """The embedding backend, or None when embeddings are off (loaded on first use)."""
        if not self.settings.enable_embeddings:
            return None
        with self._build_lock:
            if self._embedder is None:
                from pmm.embed import build_embedder

                self._embedder = build_embedder(self.settings)
            return self._embedder

    def pending_count(self) -> int:
        """How many turns still wait for a digest (0 when summaries are off)."""
        if not self.settings.enable_summary:
            return 0
        return self.store.count_undigested(kinds=TURN_KINDS)

    def run(
        self, limit: int | None, progress: Callable[[int, int], None] | None
    ) -> tuple[int, int, Counter[str]]:
        """Batches until nothing is pending (or ``limit`` turns are digested):
        ``(digested, embedded, methods used)``; ``progress(done, total)`` after each."""
        total = self.pending_count()
        if limit is not None:
            total = min(total, limit)
        digested = embedded = 0
        methods: Counter[str] = Counter()
        while limit is None or digested < limit:
            size = self.settings.summary_batch_size
            if limit is not None:
                size = min(size, limit - digested)
            done, used, vectors = self.batch(size)
            digested += done
            embedded += vectors
            methods.update(used)
            if progress is not None:
                progress(min(digested, total), total)
            if not done and not vectors:
                break
        return digested, embedded, methods

    def batch(self, size: int) -> tuple[int, Counter[str], int]:
        """Digest up to ``size`` pending turns, embed what lacks a vector, and index new
        events for keyword search: ``(digested, methods, embedded)``."""
        with self.lock:
            self.store.sync_search_index()
            done = 0
            methods: Counter[str] = Counter()
            if self.settings.enable_summary:
                events = self.store.undigested(kinds=TURN_KINDS, limit=size)
                if events:
                    methods = self._digest(events)
                    done = len(events)
                if done >= size:  # a full batch: more may wait, and vectors wait for them
                    return done, methods, 0
            return done, methods, self._embed_pending(size)

    def process_events(self, events: Sequence[Event]) -> None:
        """Inline mode: digest and embed these new events before returning.

        The events are already stored: if every backend fails, they stay pending (for
        ``dream()`` or the next process) and the failure is logged, not raised.
        """
        turns = [e for e in events if e.kind in TURN_KINDS]
        try:
            with self.lock:
                if self.settings.enable_summary and turns:
                    self._digest(turns)
                if turns:
                    self._embed_pending(len(turns))
        except Exception as exc:  # the turns are stored; they stay pending
            log.warning(
                "inline digest/embedding failed (%s); events %s stay pending for "
                "`pmm dream` or the next process",
                error_text(exc, self._llm, self._digester, self._embedder),
                [e.id for e in turns],
            )

    def start_worker(self, work: Callable[[], int]) -> BackgroundWorker | None:
        """Background mode (summaries or embeddings on): start the thread that runs
        ``work`` (one batch) when woken, woken now for what an earlier process left
        pending. None, and no thread, in the other modes."""
        settings = self.settings
        derived = settings.enable_summary or settings.enable_embeddings
        if not derived or settings.summary_mode != "background":
            return None
        from pmm.dream.worker import BackgroundWorker

        self.worker = BackgroundWorker(
            work, name="pmm-digest", flush_timeout=settings.flush_timeout
        )
        self.worker.wake()  # events left pending by an earlier process
        return self.worker

    def appended(self, events: Sequence[Event], *, inline: bool) -> None:
        """New events are stored: digest and embed them now (``inline``), or wake the
        background worker if there is one."""
        if inline:
            self.process_events(events)
        elif self.worker is not None:
            self.worker.wake()

    def worker_status(self, *, revive: bool) -> dict[str, Any] | None:
        """The background worker's :meth:`~pmm.dream.worker.BackgroundWorker.status` (with
        ``revive``, a dead thread is restarted first and counted in ``restarts``); None
        without a worker."""
        if self.worker is None:
            return None
        if revive:
            self.worker.revive()
        return self.worker.status()

    def _embed_pending(self, limit: int) -> int:
        """Embed up to ``limit`` turns without a vector. With summaries on, a turn is
        embedded by its summary: nothing is embedded while digests are pending, or a
        vector would hold the raw text for good."""
        embedder = self.embedder
        if embedder is None or (self.settings.enable_summary and self.pending_count()):
            return 0
        from pmm.embed.backfill import embed_pending

        return embed_pending(
            self.store, embedder, kinds=TURN_KINDS, batch_size=max(limit, 1), limit=limit
        )

    def _digest(self, events: Sequence[Event]) -> Counter[str]:
        texts = [turn_role(e)[1] for e in events]
        roles: list[str | None] = [turn_role(e)[0] for e in events]
        digests = self.digester.digest_many(texts, roles)
        self.store.set_digests(
            (e.id, d.summary, d.keywords, d.method) for e, d in zip(events, digests, strict=True)
        )
        return Counter(d.method for d in digests)
