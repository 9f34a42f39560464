"""Checking a SQLite log: walking the whole hash chain (:meth:`verify`) and counting what
it holds (:meth:`stats`). Mixed into :class:`pmm.storage.sqlite.EventStore`::

    store.verify()        # VerifyReport(ok=True, rows=..., head='...', ...)
    store.stats()["by_kind"]
"""

from __future__ import annotations

import os
from typing import Any

from pmm.errors import CorruptDatabaseError, MissingDependencyError
from pmm.events.chains import ChainsWalker
from pmm.records import VerifyReport
from pmm.storage.sqlite.chains import chain_keys
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

    def chain_keys(self, user_id: str | None = None) -> list[tuple[str, bytes]]:
        """``(chain, secret)`` of every chain (``user_id``: hers alone): what a copy or
        export of version-3 rows needs to verify elsewhere. Secret: whoever holds a
        user's key can link her digests back to her ids."""
        with self._lock, translated(self.path):
            return chain_keys(self._conn, user_id)

    def verify(self, *, expect_head: str | None = None, user_id: str | None = None) -> VerifyReport:
        """Walk every chain (or ``user_id``'s alone, read through the user index) and
        report the first row that does not verify, each chain's head and the root over
        them (see :class:`pmm.events.chains.ChainsWalker`).

        A chain cut off at its end still verifies from inside; pin the root (or a user's
        head) and pass it as ``expect_head`` to catch that.

        >>> store.verify().root                      # pin it  # doctest: +SKIP
        >>> store.verify(user_id="alice").user_head  # doctest: +SKIP
        """
        with self._lock, translated(self.path):
            walker = ChainsWalker(
                keys=chain_keys(self._conn, user_id), expect_head=expect_head, user=user_id
            )
            where, params = ("", ()) if user_id is None else (" WHERE user_id = ?", (user_id,))
            cursor = self._conn.execute(
                "SELECT id, ts, kind, session_id, role, content, content_sha256, meta,"
                " prev_hash, hash, hash_version, user_id, user_digest, session_digest"
                f" FROM events{where} ORDER BY id",
                params,
            )
            decode = self._text.codec.decode
            step = walker.step
            # Digests are 32-byte BLOBs (migrations/0008) and texts may be compressed
            # (0009): converted inline, since this loop is verify's whole cost.
            for row in cursor:
                (id_, ts, kind, session, role, text, sha, meta, prev, digest, version, user,
                 user_dig, session_dig) = row  # fmt: skip
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
                if type(user_dig) is bytes:
                    user_dig = user_dig.hex()
                if type(session_dig) is bytes:
                    session_dig = session_dig.hex()
                if (
                    step(id_, ts, kind, session, role, text, sha, meta, prev, digest, version,
                         user, user_dig, session_dig)
                    is not None
                ):  # fmt: skip
                    break
            cursor.close()
        return walker.report()
