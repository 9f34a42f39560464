"""Checking a SQLite log: walking the whole hash chain (:meth:`verify`) and counting what
it holds (:meth:`stats`). Mixed into :class:`pmm.storage.sqlite.EventStore`::

    store.verify()        # VerifyReport(ok=True, rows=..., head='...', ...)
    store.stats()["bytes_on_disk"]     # stats itself is the shared layer's
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pmm.errors import CorruptDatabaseError, MissingDependencyError
from pmm.events.chains import ChainsWalker
from pmm.records import VerifyReport
from pmm.storage.shared import GROUPED
from pmm.storage.sqlite.chains import chain_heads, chain_keys
from pmm.storage.sqlite.connection import translated
from pmm.storage.sqlite.derived import DerivedData


class Inspection(DerivedData):
    """``verify`` and the figures of ``stats`` (the shared layer's)."""

    # -- statistics ------------------------------------------------------------------

    def _counts_by(self, column: str) -> dict[str, int]:
        if column not in GROUPED:
            raise ValueError(f"not a grouped column: {column!r}")
        return {
            str(k): n
            for k, n in self._read(
                f"SELECT {column}, count(*) FROM events GROUP BY {column} ORDER BY 2 DESC"
            )
        }

    def _coverage(self) -> tuple[int, int, int]:
        total, digested, with_text = self._read(
            "SELECT count(*), count(digest_method), count(content) FROM events"
        )[0]
        return int(total), int(digested), int(with_text)

    def _storage_stats(self) -> dict[str, Any]:
        # The database's own size as of its last commit (pages x page size): what the .db
        # file holds once checkpointed, the same whether or not a -wal file holds part of
        # it, so every reader of the same log reports the same figure (the -wal and -shm
        # files come and go with the connections; ``wal_bytes`` says what the -wal holds).
        pages = self._read("PRAGMA page_count")[0][0]
        page_size = self._read("PRAGMA page_size")[0][0]
        wal = self.path + "-wal"
        return {
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

        Each chain's last row is compared with the head the ``chains`` table recorded at
        its last append (read in the same transaction), so events removed from a chain's
        end are caught without a pin, and a row appended after such a cut is not blamed
        for it (see :class:`~pmm.events.chains.ChainsWalker`). What that cannot catch, a
        cut whose recorder rewrote the ``chains`` table too, a pin does: a user's head
        (``expect_head`` with ``user_id``) or a row's hash stays valid as the log grows;
        the root changes with every append.

        >>> store.verify(user_id="alice").user_head  # pin it  # doctest: +SKIP
        """
        with self._lock, translated(self.path), _snapshot(self._conn):
            walker = ChainsWalker(
                keys=chain_keys(self._conn, user_id),
                expect_head=expect_head,
                user=user_id,
                heads=chain_heads(self._conn, user_id),
                find=lambda digest: _row_with_hash(self._conn, digest),
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


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction (the connection is in autocommit mode): the chains' recorded
    heads and the rows come from the same state of the file."""
    if conn.in_transaction:  # a caller's transaction already fixes the state
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _row_with_hash(conn: sqlite3.Connection, digest: str) -> int | None:
    """The id of the row whose hash is ``digest`` (a scan: asked only when a row does not
    link to the one before it), or None."""
    try:
        value: bytes | str = bytes.fromhex(digest)
    except ValueError:
        value = digest
    row = conn.execute(
        "SELECT id FROM events WHERE hash = ? OR hash = ? LIMIT 1", (value, digest)
    ).fetchone()
    return None if row is None else int(row[0])
