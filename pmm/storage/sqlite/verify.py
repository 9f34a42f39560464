"""Checking a SQLite log: walking the whole hash chain (:meth:`verify`) and counting what
it holds (:meth:`stats`). Mixed into :class:`pmm.storage.sqlite.EventStore`::

    store.verify()        # VerifyReport(ok=True, rows=..., head='...', ...)
    store.stats()["by_kind"]
"""

from __future__ import annotations

import os
from typing import Any

from pmm.errors import CorruptDatabaseError, MissingDependencyError
from pmm.events.chain import ChainWalker
from pmm.records import VerifyReport
from pmm.storage.sqlite.connection import translated
from pmm.storage.sqlite.derived import DerivedData


class Inspection(DerivedData):
    """``verify`` and ``stats`` (``stats`` counts vectors through :class:`DerivedData`)."""

    # -- statistics ------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts by kind, session and role, digest and embedding coverage, bytes on disk."""

        def grouped(column: str) -> dict[str, int]:
            return {
                str(k): n
                for k, n in self._read(
                    f"SELECT {column}, count(*) FROM events GROUP BY {column} ORDER BY 2 DESC"
                )
            }

        total, digested, with_text = self._read(
            "SELECT count(*), count(digest_method), count(content) FROM events"
        )[0]
        # The database's own size as of its last commit (pages x page size): what the .db
        # file holds once checkpointed, the same whether or not a -wal file holds part of
        # it, so every reader of the same log reports the same figure (the -wal and -shm
        # files come and go with the connections; ``wal_bytes`` says what the -wal holds).
        pages = self._read("PRAGMA page_count")[0][0]
        page_size = self._read("PRAGMA page_size")[0][0]
        wal = self.path + "-wal"
        return {
            "path": self.path,
            "events": total,
            "by_kind": grouped("kind"),
            "by_session": grouped("session_id"),
            "by_role": grouped("role"),
            "by_digest_method": grouped("digest_method"),
            "digested": digested,
            "with_text": with_text,
            "embeddings": self.embedding_models(),
            "bytes_on_disk": int(pages) * int(page_size),
            "wal_bytes": os.path.getsize(wal) if os.path.exists(wal) else 0,
            "schema_version": self._read("PRAGMA user_version")[0][0],
        }

    # -- verification ----------------------------------------------------------------

    def verify(self, *, expect_head: str | None = None) -> VerifyReport:
        """Walk the whole chain and report the first row that does not verify.

        Checks, per row: ``prev_hash`` equals the previous row's hash (the first row has
        none), the content (when present) matches ``content_sha256``, and ``hash`` is the
        hash of the row. A log cut off at its end still verifies from inside; pin its
        head and pass ``expect_head`` to catch that.
        """
        walker = ChainWalker(expect_head=expect_head)
        with self._lock, translated(self.path):
            cursor = self._conn.execute(
                "SELECT id, ts, kind, session_id, role, content, content_sha256, meta,"
                " prev_hash, hash, hash_version, user_id FROM events ORDER BY id"
            )
            decode = self._text.codec.decode
            step = walker.step
            # Digests are 32-byte BLOBs (migrations/0008) and texts may be compressed
            # (0009): converted inline, since this loop is verify's whole cost.
            for row in cursor:
                id_, ts, kind, session, role, text, sha, meta, prev, digest, version, user = row
                if type(text) is bytes:
                    try:
                        text = decode(text)
                    except (CorruptDatabaseError, MissingDependencyError) as exc:
                        walker.fail(int(id_), f"its stored text cannot be read: {exc}")
                        break
                if type(sha) is bytes:
                    sha = sha.hex()
                if type(prev) is bytes:
                    prev = prev.hex()
                if type(digest) is bytes:
                    digest = digest.hex()
                if (
                    step(id_, ts, kind, session, role, text, sha, meta, prev, digest, version, user)
                    is not None
                ):
                    break
            cursor.close()
        return walker.report()
