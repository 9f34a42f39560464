"""The upkeep of one Mind's log: dream (digest, embed, consolidate, compress), forget,
compress and compact, each serialized with the digest/embed work by ``processor.lock``;
and the stats an operator reads.

    upkeep = Upkeep(store, settings, processor, llm=None, on_superseded=contexts.forget_facts)
    upkeep.dream().digested                     # a DreamReport
    upkeep.should_dream()                       # thresholds of pmm/dream/policy.py
    upkeep.dream_on_close(flush=worker.flush)   # a clean exit's dream (PMM_DREAM_ON_CLOSE)
    upkeep.compress_in_passing(seconds=0.2, idle=True)  # PMM_COMPRESS_AFTER without a dream
    upkeep.forget(session_id="alice", reason="user asked").erased
    upkeep.compact(older_than="30d", dry_run=True).compacted
    upkeep.stats(counter="tiktoken", worker=None)["turns"]

:class:`pmm.Mind` documents each call; the logic lives in :mod:`pmm.dream.policy`,
:mod:`pmm.retention.erasure`, :mod:`pmm.retention.compaction` and the storage backends.
``settings`` may be replaced between calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pmm.errors import InvalidInputError, PMMError, UnsupportedOperationError
from pmm.events.turns import TURN_KINDS
from pmm.models.redact import error_text
from pmm.records import DreamReport

if TYPE_CHECKING:
    from datetime import timedelta

    from pmm.dream.consolidation import SummaryReport
    from pmm.dream.contradictions import ContradictionReport
    from pmm.dream.processing import Processor
    from pmm.retention.compaction import CompactionReport
    from pmm.retention.erasure import ErasureReport
    from pmm.settings import Settings
    from pmm.storage import EventLog
    from pmm.storage.sqlite.compression import CompressionReport

log = logging.getLogger(__name__)

PASSING_BATCH = 500
"""Texts per write transaction in a passing compression run (an append waits for one)."""
IDLE_COMPRESS_SECONDS = 0.2
"""How long the background worker's idle pass may compress before it yields."""
IDLE_COMPRESS_INTERVAL = 60.0
"""Seconds between idle passes once a pass found no more than it could do in its time."""
CLOSE_COMPRESS_SECONDS = 2.0
"""How long ``Mind.close()`` may compress; the rest waits for the next pass."""


class Upkeep:
    """Dreaming and erasure for one log. ``llm`` is the chat model consolidation uses
    (None = the default one, if any); ``on_superseded`` runs when consolidation marked a
    statement superseded (cached key facts are stale)."""

    def __init__(
        self,
        store: EventLog,
        settings: Settings,
        processor: Processor,
        *,
        llm: Any = None,
        on_superseded: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.settings = settings
        self._processor = processor
        self._llm = llm
        self._on_superseded = on_superseded
        self._warned_no_llm = False
        self._warned_compress = False
        self._next_idle_compress = 0.0
        self._noted_no_compress = False
        self._compress_errors: set[str] = set()

    def dream(
        self, limit: int | None = None, progress: Callable[[int, int], None] | None = None
    ) -> DreamReport:
        """Digest and embed what is pending, consolidate, compress (see :meth:`pmm.Mind.dream`)."""
        started = time.perf_counter()
        digested, embedded, methods = self._processor.run(limit, progress)
        summaries, contradictions, summary_vectors = self.consolidate()
        compressed = self._compress_old()
        return DreamReport(
            digested=digested,
            embedded=embedded + summary_vectors,
            methods=dict(methods),
            pending=self._processor.pending_count(),
            seconds=time.perf_counter() - started,
            summaries=summaries.created,
            superseded_summaries=summaries.superseded,
            dropped_bullets=summaries.dropped_bullets,
            contradictions=contradictions.superseded,
            llm_calls=summaries.llm_calls + contradictions.llm_calls,
            compressed=compressed,
        )

    def dream_on_close(self, flush: Callable[[], object]) -> None:
        """A clean exit's dream when ``dream_on_close`` is on: ``flush()`` the worker, then
        dream; a failure is logged (what is stored stays stored, its work stays pending)."""
        if not self.settings.dream_on_close:
            return
        flush()
        try:
            self.dream()
        except Exception as exc:
            log.warning(
                "dream on close failed (%s); pending work stays for the next dream "
                "(set PMM_DREAM_ON_CLOSE=0 to skip it)",
                error_text(exc, self._llm),
            )

    def compress_in_passing(self, *, seconds: float, idle: bool) -> int:
        """Apply ``PMM_COMPRESS_AFTER`` where upkeep runs without a dream: the background
        worker's idle pass (``idle``: at most every :data:`IDLE_COMPRESS_INTERVAL` seconds,
        at once again while the last pass ran out of time) and ``Mind.close()``.

        Bounded: :data:`PASSING_BATCH` texts per write transaction and no batch started
        after ``seconds``; the rest waits for the next pass (``pmm compress`` does it all).
        Returns how many texts were compressed; 0, writing nothing, when the setting is
        unset, the file is read-only, or the backend does not compress text (PostgreSQL:
        skipped, noted once at debug level; ``dream()`` warns once that the setting is ignored).
        """
        after = self.settings.compress_after
        if not after:
            return 0
        compress = getattr(self.store, "compress", None)
        if compress is None or getattr(self.store, "read_only_reason", None) is not None:
            if not self._noted_no_compress:
                self._noted_no_compress = True
                log.debug("PMM_COMPRESS_AFTER: %s does not compress text here", self.store.path)
            return 0
        started = time.monotonic()
        if idle and started < self._next_idle_compress:
            return 0
        # never wait for a digest in flight (an LLM call may hold the lock for seconds)
        if not self._processor.lock.acquire(blocking=False):
            return 0
        try:
            report: CompressionReport = compress(after, batch=PASSING_BATCH, seconds=seconds)
        finally:
            self._processor.lock.release()
        ran_out = time.monotonic() - started >= seconds
        self._next_idle_compress = started + (0.0 if ran_out else IDLE_COMPRESS_INTERVAL)
        return report.compressed

    def compress_idle(self) -> int:
        """The background worker's idle compression pass (:meth:`compress_in_passing`): a
        failure is logged once per kind of error, and the texts stay plain until a later
        pass; it never counts as a failed digest."""
        return self._compress_logged(IDLE_COMPRESS_SECONDS, idle=True, when="in the background")

    def compress_on_close(self) -> None:
        """``Mind.close()``'s bounded compression pass (:meth:`compress_in_passing`); a
        failure is logged, and the texts stay plain until a later pass."""
        self._compress_logged(CLOSE_COMPRESS_SECONDS, idle=False, when="on close")

    def _compress_logged(self, seconds: float, *, idle: bool, when: str) -> int:
        try:
            return self.compress_in_passing(seconds=seconds, idle=idle)
        except Exception as exc:
            key = error_text(exc)
            if key not in self._compress_errors:
                self._compress_errors.add(key)
                log.warning(
                    "compressing old texts %s failed (%s); they stay plain until the next "
                    "pass or `pmm compress`",
                    when,
                    key,
                )
                log.debug("traceback of the compression failure", exc_info=exc)
            return 0

    def should_dream(self) -> bool:
        """Whether the turns waiting for a digest, summary or vector pass the thresholds."""
        from pmm.dream.policy import should_dream

        embedder = self._processor.embedder
        vectors = (
            self.store.count_unembedded(embedder.model_name, kinds=TURN_KINDS) if embedder else 0
        )
        return should_dream(
            self.store,
            self.settings,
            pending_digests=self._processor.pending_count(),
            pending_vectors=vectors,
        )

    def consolidate(self) -> tuple[SummaryReport, ContradictionReport, int]:
        """Dream's consolidation step (pmm/dream/policy.py); a no-op with summaries off."""
        from pmm.dream.policy import consolidate

        with self._processor.lock:
            chat = self.chat_model() if self.settings.enable_summary else None
            summaries, contradictions, vectors = consolidate(
                self.store, self.settings, chat, self._processor.embedder
            )
        if contradictions.superseded:
            self._on_superseded()
        return summaries, contradictions, vectors

    def chat_model(self) -> Any:
        """The chat model consolidation uses: the one passed in, else ChatOpenAI when the
        summarizer is llm or auto and OPENAI_API_KEY is set; None = heuristics."""
        if self._llm is not None:
            return self._llm
        from pmm.dream.policy import default_chat_model

        try:
            self._llm = default_chat_model(self.settings)
        except PMMError as exc:
            if not self._warned_no_llm:
                self._warned_no_llm = True
                log.warning(
                    "consolidation runs without an llm (%s): using heuristics", error_text(exc)
                )
            return None
        return self._llm

    def forget(
        self,
        *,
        event_ids: Sequence[int] | None = None,
        session_id: str | None = None,
        session_ids: Sequence[str] | None = None,
        match: str | None = None,
        reason: str,
        identifiers_of: str | None = None,
    ) -> ErasureReport:
        """Erase events (see :meth:`pmm.Mind.forget`) while no digest or vector is written."""
        with self._processor.lock:
            return self.store.forget(
                event_ids=event_ids,
                session_id=session_id,
                session_ids=session_ids,
                match=match,
                reason=reason,
                identifiers_of=identifiers_of,
            )

    def compress(
        self, after: str | int | None = None, *, dry_run: bool = False, retrain: bool = False
    ) -> CompressionReport:
        """Compress old texts losslessly (see :meth:`pmm.Mind.compress`)."""
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
        """Drop the raw text of old digested turns (see :meth:`pmm.Mind.compact`)."""
        with self._processor.lock:
            return self.store.compact(older_than=older_than, session_id=session_id, dry_run=dry_run)

    def stats(self, counter: str, worker: dict[str, Any] | None) -> dict[str, Any]:
        """The log's stats with turns, pending digests, the token ``counter``'s name, the
        main settings and the ``worker``'s status (see :meth:`pmm.Mind.stats`)."""
        stats = self.store.stats()
        stats["turns"] = self.store.count(kinds=TURN_KINDS)
        stats["pending_digests"] = self._processor.pending_count()  # 0 with summaries off
        stats["token_counter"] = counter
        stats["settings"] = {
            "enable_summary": self.settings.enable_summary,
            "summary_mode": self.settings.summary_mode,
            "summarizer": self.settings.summarizer,
            "enable_embeddings": self.settings.enable_embeddings,
            "max_tokens": self.settings.max_tokens,
        }
        stats["worker"] = worker
        return stats

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
