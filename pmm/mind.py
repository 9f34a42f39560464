"""Mind: the one object that wires the event log, digests, embeddings, recall and context.

    from pmm import Mind

    with Mind("pmm.db", enable_summary=True, summarizer="heuristic") as mind:
        mind.remember("I moved to Lisbon", role="user", session_id="alice")
        mind.dream()                                   # digest + embed what is pending
        mind.recall("where do I live?", k=5, session_id="alice")
        print(mind.context("alice", query="where do I live?").text())
        mind.verify().ok

Users and threads: a *user* (tenant) owns *sessions* (threads). Pass ``user_id=`` and each
event stores it; a session belongs to one user (writing or reading another user's thread
raises :class:`~pmm.errors.InvalidInputError`). ``context`` of a user's thread shows that
thread's recent turns and rolling summary, and, in the ``user`` scope (``PMM_RECALL_SCOPE``,
the default whenever a user is known), key facts and relevant memories from all of her
threads, each labelled with its thread and date. Nothing crosses users unless the scope is
``all`` (the whole log: single-user apps only)::

        mind.remember_turn("I live in Lisbon", "Noted!", session_id="t1", user_id="alice")
        mind.context("t2", query="where do I live?", user_id="alice").text()  # knows Lisbon
        mind.recall("Lisbon", user_id="alice")           # all of alice's threads, no one else's
        mind.forget(user_id="alice", reason="account deleted")   # every thread of hers
        mind.assign_user("old-session", "bob")   # a session written before users, once

Keyword arguments are PMM settings (``enable_summary`` = ``PMM_ENABLE_SUMMARY``, ...); an
argument wins over the environment, which wins over ``.env`` and the defaults.
"""

from __future__ import annotations

import atexit
import logging
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from pmm.context.sessions import (
    STORE_KINDS,
    SessionContexts,
    checked_session,
    default_recall_mode,
    recall_weights,
)
from pmm.context.tokens import TokenCounter, get_token_counter
from pmm.context.users import (
    SessionOwners,
    checked_user,
    export_events,
    user_erasure_ids,
    user_stats,
)
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
        user_id: str | None = None,
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
            user_id: The user whose thread ``session_id`` is (None: the session's user,
                if it has one).

        Returns:
            The stored event, with its id and hash.

        Raises:
            InvalidInputError: The content, role, session id or meta is not valid, the
                content is empty, or the session belongs to another user.
        """
        session = self._session(session_id)
        kind = kind or kind_for_role(role)
        [event] = self.remember_many(
            [NewEvent(kind, content, session, role, meta, ts, checked_user(user_id))]
        )
        return event

    def remember_turn(
        self,
        user_text: str,
        ai_text: str,
        *,
        session_id: str | None = None,
        meta: dict[str, Any] | None = None,
        ts: datetime | str | None = None,
        user_id: str | None = None,
    ) -> tuple[Event, Event]:
        """Append one exchange, the user's turn and the AI's reply, atomically.

        Args:
            user_text: The user's message.
            ai_text: The assistant's reply.
            session_id: The conversation (default ``PMM_SESSION_ID``).
            meta: JSON metadata for both events.
            ts: The conversation time, as in :meth:`remember`.
            user_id: The thread's user, as in :meth:`remember`.

        Returns:
            The two stored events (two turns, two chained events).
        """
        session = self._session(session_id)
        user = checked_user(user_id)
        said, ai = self.remember_many(
            [
                NewEvent("prompt", user_text, session, "user", meta, ts, user),
                NewEvent("response", ai_text, session, "assistant", meta, ts, user),
            ]
        )
        return said, ai

    def remember_many(
        self, entries: Sequence[NewEvent], *, user_id: str | None = None
    ) -> list[Event]:
        """Append several events in one transaction, then digest/embed per the mode.

        Nothing is stored when one entry is refused (see :meth:`remember_safely` for the
        lenient append of messages a caller cannot fix).

        Args:
            entries: The events; each :class:`~pmm.records.NewEvent` may carry its
                conversation time in ``ts`` and its user in ``user_id``.
            user_id: The user of the entries that carry none.

        Returns:
            The stored events, in order.

        Raises:
            InvalidInputError: An empty or whitespace-only turn, a text over
                ``max_content_bytes``, NUL or a lone surrogate, or an event under another
                user than its session's.
        """
        user = checked_user(user_id)
        if user is not None:
            entries = [e if e.user_id is not None else replace(e, user_id=user) for e in entries]
        for number, entry in enumerate(entries, 1):
            checked_user(entry.user_id)
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

    def remember_safely(
        self, entries: Sequence[NewEvent], *, where: str, user_id: str | None = None
    ) -> list[Event]:
        """Store what ``entries`` hold, whatever they hold (what the LangChain integrations
        call; see :mod:`pmm.storage.safe_append`): an oversized text as linked parts, NUL
        and lone surrogates as U+FFFD, empty turns and entries the store refuses left out;
        one warning (naming ``where``) lists what was changed or left out. ``user_id`` is
        the user of the entries that carry none::

            mind.remember_safely([NewEvent("prompt", big_text, "alice", "user")], where="app")
        """
        user = checked_user(user_id)
        if user is not None:
            entries = [e if e.user_id is not None else replace(e, user_id=user) for e in entries]
        for entry in entries:  # a bad session, user or time is the caller's error, not the text's
            if entry.session_id is not None:
                self._session(entry.session_id)
            checked_user(entry.user_id)
            if entry.ts is not None:
                normalize_ts(entry.ts)
        prepared = prepare(entries, self.settings.max_content_bytes)
        warn_once(prepared.problems, where)
        return self.remember_many(prepared.entries) if prepared.entries else []

    def clear(self, session_id: str | None = None, *, user_id: str | None = None) -> Event:
        """Start this session's history afresh. Nothing is deleted: a chained ``clear``
        marker is appended and history (and key facts) start after it. A user's other
        threads keep theirs."""
        session = self._session(session_id)
        user = self._owners.resolve(session, user_id)
        [event] = self.store.append_many(
            [NewEvent(CLEAR_KIND, "history cleared", session, "system", None, None, user)]
        )
        return event

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

    def verify(self, *, expect_head: str | None = None, user_id: str | None = None) -> VerifyReport:
        """Walk every user's hash chain, or one user's (see
        :class:`pmm.events.chains.ChainsWalker`)::

            root = mind.verify().root                       # pin it somewhere safe
            mind.verify(expect_head=root).ok                # later: nothing rewritten
            mind.verify(user_id="alice").user_head          # her chain alone

        Args:
            expect_head: A root or a head hash printed earlier: the report is not ok
                unless it is the root, or a row of the chain(s) walked.
            user_id: Check this user's chain alone (cost grows with her events only).

        Returns:
            ``ok``, the rows checked, each chain's head and the root (or her head),
            and the first bad row and why.
        """
        return self.store.verify(expect_head=expect_head, user_id=checked_user(user_id))

    def stats(self, *, user_id: str | None = None) -> dict[str, Any]:
        """Counts by kind/session/role, digest and embedding coverage, size on disk; with
        ``user_id``, that user's counts alone (:func:`pmm.context.users.user_stats`)."""
        user = checked_user(user_id)
        if user is not None:
            return user_stats(self.store, user)
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
        user_id: str | None = None,
    ) -> ErasureReport:
        """Erase events so that no byte of their text stays in the file (see
        :mod:`pmm.retention.erasure`): by id, a whole session, several sessions (``session_ids``:
        one request, one scrub of the file however many), and/or every event whose text,
        summary or keywords hold ``match`` (case-insensitive)::

            report = mind.forget(session_id="alice", reason="user asked")
            report.erased, [m.id for m in report.markers]
            mind.forget(session_ids=["alice/t1", "alice/t2"], reason="account deleted")

        ``user_id`` alone erases every session (thread) of that user in one request (one
        rewrite of the file), and nothing of any other user; with ``session_id``,
        ``event_ids`` or ``match`` it keeps to her events (another user's session or
        event raises :class:`InvalidInputError`)::

            mind.forget(user_id="alice", reason="account deleted")

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
        user = checked_user(user_id)
        if user is not None:
            if session_id is not None:
                self._owners.resolve(self._session(session_id), user)
            event_ids = user_erasure_ids(self.store, user, event_ids, match, session_id)
            match = None
        return self._upkeep.forget(
            event_ids=event_ids,
            session_id=session_id,
            session_ids=session_ids,
            match=match,
            reason=reason,
        )

    # -- users -------------------------------------------------------------------------

    def assign_user(self, session_id: str, user_id: str, *, reason: str = "") -> Event:
        """Give a session written without a user (before users, or by an app that had
        none) its user, once: its events take ``user_id`` and a chained
        ``user_assigned`` event (returned) records it. Refuses a session that already has
        a user, or has no events::

            mind.assign_user("alice-2024", "alice")   # `pmm assign-user alice-2024 alice`
        """
        user = checked_user(user_id)
        if user is None:
            raise InvalidInputError("user_id is required: the user the session belongs to")
        event = self.store.assign_user(self._session(session_id), user, reason=reason)
        self._contexts.forget_facts()
        return event

    def export(self, out: str | IO[str], *, user_id: str | None = None) -> int:
        """Write the log as JSON lines, one event a line with every field (the format of
        ``pmm export`` / ``pmm import``), to a path or an open text file; with ``user_id``,
        only that user's events. Returns how many were written::

            mind.export("alice.jsonl", user_id="alice")
        """
        return export_events(self.store, out, checked_user(user_id))

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
