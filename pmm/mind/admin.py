"""Administration: verification, stats, erasure, users, export, compression and
compaction (part of :class:`pmm.Mind`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from pmm.context.users import (
    checked_user,
    export_events,
    user_erasure,
    user_stats,
)
from pmm.errors import InvalidInputError
from pmm.events.export_file import read_export_file
from pmm.mind.base import MindParts
from pmm.records import Event, VerifyReport

log = logging.getLogger("pmm")

if TYPE_CHECKING:
    from datetime import timedelta

    from pmm.retention.compaction import CompactionReport
    from pmm.retention.erasure import ErasureReport
    from pmm.storage.sqlite.compression import CompressionReport


class Administration(MindParts):
    """The administration methods of :class:`pmm.Mind`."""

    # -- admin -----------------------------------------------------------------------

    def verify(self, *, expect_head: str | None = None, user_id: str | None = None) -> VerifyReport:
        """Walk every user's hash chain, or one user's (see
        :class:`pmm.events.chains.ChainsWalker`)::

            mind.verify().ok                                # a cut chain fails: see below
            head = mind.verify(user_id="alice").user_head   # pin it somewhere safe
            mind.verify(user_id="alice", expect_head=head).ok  # later, however she grew

        Each chain's last row is compared with the head recorded at its last append, so
        events removed from a chain's end fail without a pin. A pin catches one who also
        rewrote that record: keep a user's head (or any row's hash), which stays valid as
        the log grows; the root changes with every append (pin it for a frozen copy only).

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
        ``user_id``, that user's counts alone (:func:`pmm.context.users.user_stats`)::

            mind.stats(user_id="alice")["events"]

        Args:
            user_id: Only this user's events (sessions, kinds, sizes of her text).

        Returns:
            A JSON-serialisable dict, the figures ``pmm stats`` prints.
        """
        user = checked_user(user_id)
        if user is not None:
            return user_stats(self.store, user)
        worker = self._processor.worker_status(revive=not self._closed)
        return self._upkeep.stats(self.counter.name, worker)

    # -- message ids (LangChain v1 middleware) -----------------------------------------

    def stored_message_ids(self, session_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these LangChain message ids this session already holds (events appended
        with ``meta["message_id"]``): what lets a caller store each message exactly once.

        Args:
            session_id: The session (thread) to look in.
            message_ids: The LangChain message ids to look for.

        Returns:
            The subset of ``message_ids`` already stored.
        """
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
        rewrite of the file), and nothing of any other user; her user and thread ids leave
        the rows too (rows of hash version 3: the chain covers keyed digests of them, and
        her chain's secret is deleted, so the digests left link to no one); with ``session_id``,
        ``session_ids``, ``event_ids`` or ``match`` it keeps to her events (another user's
        session or event raises :class:`InvalidInputError`). ``pmm forget --user`` takes
        this same path (:func:`pmm.context.users.user_erasure`)::

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
        if user is None:
            return self._upkeep.forget(
                event_ids=event_ids,
                session_id=session_id,
                session_ids=session_ids,
                match=match,
                reason=reason,
            )
        request = user_erasure(  # the one path of every whole- or part-user erasure
            self.store,
            self._owners,
            user,
            event_ids=event_ids,
            session_id=None if session_id is None else self._session(session_id),
            session_ids=session_ids,
            match=match,
        )
        return self._upkeep.forget(**request.arguments(), reason=reason)

    # -- users -------------------------------------------------------------------------

    def assign_user(self, session_id: str, user_id: str, *, reason: str = "") -> Event:
        """Give a session written without a user (before users, or by an app that had
        none) its user, once: its events take ``user_id`` and a chained
        ``user_assigned`` event (returned) records it. Refuses a session that already has
        a user, or has no events::

            mind.assign_user("alice-2024", "alice")   # `pmm assign-user alice-2024 alice`

        Args:
            session_id: The session written without a user.
            user_id: The user it belongs to.
            reason: Recorded in the ``user_assigned`` event's text.

        Returns:
            The chained ``user_assigned`` event.

        Raises:
            InvalidInputError: The session has no events or already has a user.
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

    def import_events(self, src: str | IO[str]) -> VerifyReport:
        """Import a file of :meth:`export` (a path or an open text file). Into an empty
        database it goes verbatim (same ids and hashes); into one that already holds
        events, one user's export (``export(..., user_id=U)``) is verified on its own and
        written with new ids onto a new chain of hers, ending in an ``imported`` record
        that holds the file's head (see ``docs/design/chains.md``, "Import")::

            mind.import_events("alice.jsonl").user_head    # her new chain's head here

        Args:
            src: The export file: a path, or an open text file.

        Returns:
            The verify report of the whole log (an empty target) or of the user's chain.

        Raises:
            IntegrityError: The file's chain does not verify (it was changed).
            InvalidInputError: A malformed line; or, into a non-empty database, not one
                user's events, or that user or one of the file's sessions is already
                there. Nothing is written in either case. Embeddings are not imported:
                ``dream`` computes them.
        """
        events, keys = read_export_file(src)
        return self.store.import_events(events, keys=keys)

    def compress(
        self, after: str | int | None = None, *, dry_run: bool = False, retrain: bool = False
    ) -> CompressionReport:
        """Keep the text of old turns compressed, losslessly (zstd with a dictionary
        trained on this file's text, or zlib): all but the ``after`` newest texts
        (``1000``), or those older than an age (``"30d"``); None = ``PMM_COMPRESS_AFTER``.
        Every read decodes them; with the setting on, dream, close and the idle worker run it::

            mind.compress("30d").compressed            # texts compressed now

        Args:
            after: Keep this many newest texts as they are (``1000``), or compress those
                older than an age (``"30d"``); None reads ``PMM_COMPRESS_AFTER``.
            dry_run: Count what would be compressed, change nothing.
            retrain: Train a new dictionary on the file's text even if one exists.

        Returns:
            How many texts were compressed, the bytes before and after, the dictionary.

        Raises:
            InvalidInputError: Compression is off (no ``after`` and no setting) or
                ``after`` is neither a count nor an age.
            UnsupportedOperationError: The store cannot compress (PostgreSQL).
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

        Args:
            older_than: The age (``"30d"``, ``"12h"`` or a ``timedelta``) a turn must reach.
            session_id: Only this session's turns (default: every session).
            dry_run: List what would be compacted, change nothing.

        Returns:
            The compacted event ids, the bytes of raw text dropped and the file's size
            before and after.

        Raises:
            InvalidInputError: ``older_than`` is not an age.
        """
        return self._upkeep.compact(older_than=older_than, session_id=session_id, dry_run=dry_run)
