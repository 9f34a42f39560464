"""The :class:`Mind` itself: wiring, lifecycle, reading and derived data; its writing and
administration methods come from :mod:`pmm.mind.writing` and :mod:`pmm.mind.admin`."""

from __future__ import annotations

import atexit
import logging
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from pmm.context.checks import STORE_KINDS, default_recall_mode, recall_weights
from pmm.context.sessions import SessionContexts
from pmm.context.tokens import TokenCounter, get_token_counter
from pmm.context.users import (
    SessionOwners,
    checked_user,
)
from pmm.dream.processing import Processor
from pmm.dream.upkeep import Upkeep
from pmm.errors import InvalidInputError
from pmm.events.turns import TURN_KINDS
from pmm.mind.admin import Administration
from pmm.mind.writing import Writing
from pmm.models.redact import error_text, mask_url
from pmm.records import DreamReport, Event, Hit
from pmm.settings import Settings
from pmm.storage import EventLog, open_store
from pmm.storage.safe_append import join_parts

log = logging.getLogger("pmm")

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from pmm.context.assembly import Context
    from pmm.digest import Digester
    from pmm.dream.consolidation import SummaryReport
    from pmm.dream.contradictions import ContradictionReport
    from pmm.dream.worker import BackgroundWorker
    from pmm.embed import Embedder
    from pmm.recall.recaller import Recaller


class Mind(Writing, Administration):
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
        self._owners = SessionOwners(self.store)
        self._worker = self._processor.start_worker(self.process_pending)
        # A Mind dropped without close() still releases its thread and file when collected;
        # one still open at interpreter exit is closed by _close_open_minds. Either way the
        # store's close checkpoints the -wal file into the .db file.
        self._finalizer = weakref.finalize(self, _release, self.store, self._worker)
        self._finalizer.atexit = False
        _OPEN.add(self)  # closed at interpreter exit when the caller never did

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
        # the URL of a shared log without its password (repr lands in logs and tracebacks)
        return f"Mind({mask_url(self.settings.db_url or self.settings.db_path)!r})"

    # -- reading ---------------------------------------------------------------------

    def history(
        self,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        kinds: Sequence[str] = TURN_KINDS,
        include_erased: bool = False,
        user_id: str | None = None,
    ) -> list[Event]:
        """This session's turns since its last clear, oldest first, each with its text in
        ``content``::

            [e.content.lower() for e in mind.history("alice")]

        A message stored as linked parts (see :mod:`pmm.storage.safe_append`) comes back as
        one event with the whole text.

        Args:
            session_id: The conversation (default ``PMM_SESSION_ID``).
            limit: Only the newest N.
            kinds: The event kinds to return (default: turns).
            include_erased: Also return turns whose text is gone (erased by
                :meth:`forget` or compacted away by :meth:`compact`), with
                ``content=None`` (a compacted turn keeps its ``summary``).
            user_id: The session must be this user's (or new).

        Returns:
            The events, oldest first.
        """
        session = self._session(session_id)
        self._owners.resolve(session, user_id)
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
        user_id: str | None = None,
        skip_turns: Collection[int] = (),
    ) -> Context:
        """The compact, role-labelled memory of a session within ``budget_tokens``.

        ``user_id`` (or the session's own user) makes the session a thread of that user:
        in the ``user`` scope (the default then) key facts and relevant memories come from
        all of her threads, labelled with their thread and date, while recent turns and
        the summary stay this thread's. Another user's thread raises
        :class:`InvalidInputError`.

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
            user_id: The thread's user (default: the session's own user).
            skip_turns: Event ids of turns the model already sees (an agent's state
                messages): left out, their tokens spent on memories and older turns.

        Returns:
            The context; ``.text()`` is what the model sees.
        """
        session = self._session(session_id)
        return self._contexts.context(
            session,
            query,
            budget_tokens,
            human_prefix=human_prefix,
            ai_prefix=ai_prefix,
            as_messages=as_messages,
            linked_turns=linked_turns,
            user=self._owners.resolve(session, user_id),
            skip_turns=skip_turns,
        )

    def recall(
        self,
        query: str,
        k: int = 10,
        *,
        session_id: str | None = None,
        mode: str | None = None,
        kinds: Sequence[str] | None = None,
        user_id: str | None = None,
    ) -> list[Hit]:
        """Events relevant to ``query``, best first: ``mode`` ``keyword`` (BM25),
        ``semantic`` (embeddings) or ``hybrid`` (both, fused by reciprocal rank); None =
        hybrid when embeddings are on, else keyword.

        Args:
            query: What to look for (plain words; search syntax is never interpreted).
            k: How many hits.
            session_id: Only this session (of ``user_id``, when given).
            mode: ``keyword``, ``semantic`` or ``hybrid``; None = the default.
            kinds: Only events of these kinds.
            user_id: All of this user's sessions and nothing else. With neither
                ``user_id`` nor ``session_id``: the whole log (every user's: for
                single-user apps).

        Returns:
            The hits, best first, each with its fused score and the rankers that found it.

        Raises:
            InvalidInputError: The query is not text or the mode is unknown.
        """
        user = checked_user(user_id)
        if session_id is not None:
            session_id = self._session(session_id)
            if user is not None:
                self._owners.resolve(session_id, user)
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
            user_id=user,
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
        """Wait for the background worker to finish what is pending now.

        Args:
            timeout: Seconds to wait at most (None: until done).

        Returns:
            True when nothing is pending any more (or there is no worker), False on timeout.
        """
        return True if self._worker is None else self._worker.flush(timeout)

    @property
    def digester(self) -> Digester:
        """The digest backend chain for the configured summarizer (built on first use)."""
        return self._processor.digester

    @property
    def embedder(self) -> Embedder | None:
        """The embedding backend, or None when embeddings are off (loaded on first use)."""
        return self._processor.embedder

    # -- internals -------------------------------------------------------------------

    def _get_recaller(self) -> Recaller:
        return self._contexts.recaller()

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
            log.warning("closing %r at exit failed (%s)", mind, error_text(exc))


def _release(store: EventLog, worker: BackgroundWorker | None) -> None:
    if worker is not None:
        worker.stop()
    store.close()
