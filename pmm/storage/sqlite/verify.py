"""Checking a SQLite log: walking the whole hash chain (:meth:`verify`) and counting what
it holds (:meth:`stats`). Mixed into :class:`pmm.storage.sqlite.EventStore`::

    store.verify()        # VerifyReport(ok=True, rows=..., head='...', ...)
    store.stats()["by_kind"]
"""

from __future__ import annotations

import os
from typing import Any

from ...chain import ChainWalker
from ...errors import CorruptDatabaseError, MissingDependencyError
from ...records import VerifyReport
from .connection import translated
from .derived import DerivedData


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
        files = [self.path + suffix for suffix in ("", "-wal", "-shm")]
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
            "bytes_on_disk": sum(os.path.getsize(f) for f in files if os.path.exists(f)),
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
