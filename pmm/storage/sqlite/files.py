"""The file primitives behind backup, restore, recovery and checks
(:mod:`pmm.storage.sqlite.backup`): the online backup API, page checks, and salvaging the
readable rows of a damaged file.

    copy_file("pmm.db", "copy.db")                    # one-step online backup
    page_check("pmm.db", "quick_check")               # (True, [])
    rows, failed, edges, vectors = salvage("broken.db", errors := [])
    write_salvaged("salvaged.db", rows, edges, vectors).ok
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pmm.errors import DatabaseError, PMMError
from pmm.events.chains import key_heads
from pmm.records import VerifyReport, event_from_row
from pmm.storage.sqlite.rows import COLUMNS
from pmm.storage.sqlite.store import EventStore
from pmm.storage.sqlite.stored_text import pack_digest, unpack_digest
from pmm.storage.text_codec import Dictionary, TextCodec


def copy_file(source: str, target: str) -> None:
    """One-step online backup of ``source`` into ``target`` (created or overwritten)."""
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        try:
            dst = sqlite3.connect(target)
            try:
                src.backup(dst)
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise DatabaseError(f"could not copy {source} to {target}: {exc}") from exc


def remove_files(path: str | os.PathLike[str]) -> None:
    """Delete ``path`` and its -wal, -shm and -journal files, where they exist."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def page_check(path: str, pragma: str) -> tuple[bool, list[str]]:
    """``(ok, problems)`` of ``PRAGMA quick_check`` or ``integrity_check`` on ``path``,
    opened read-only; an unreadable file is a problem, not an exception."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = [r[0] for r in conn.execute(f"PRAGMA {pragma}(100)")]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return False, [str(exc)]
    return rows == ["ok"], [] if rows == ["ok"] else rows


def salvage(
    src: str, errors: list[str]
) -> tuple[list[tuple[Any, ...]], list[int], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """``(event rows, ids that failed to read, edge rows, embedding rows)`` readable in the
    damaged file ``src``; what could not be read is described in ``errors``."""
    try:
        conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        conn.execute("SELECT 1 FROM events LIMIT 0")
    except sqlite3.Error as exc:
        raise DatabaseError(
            f"{src} cannot be read at all ({exc}): its first page (the schema) is damaged; "
            "`sqlite3 BROKEN.db .recover` may still find rows"
        ) from exc
    try:
        rows, failed = _salvage_events(conn, errors)
        rows = _plain_rows(conn, rows, errors)
        edges = _salvage_all(conn, "SELECT src, dst, kind FROM edges", errors)
        vectors = _salvage_all(conn, "SELECT event_id, model, dim, vector FROM embeddings", errors)
    finally:
        conn.close()
    return rows, failed, edges, vectors


def salvage_keys(src: str, errors: list[str]) -> list[tuple[str, bytes]]:
    """The chain secrets readable in ``src`` (none before migrations/0015)."""
    try:
        conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        errors.append(f"chains: unreadable ({exc})")
        return []
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chains'").fetchone():
            return []
        found = _salvage_all(conn, "SELECT chain, secret FROM chains", errors)
    finally:
        conn.close()
    return [(str(key), bytes(secret)) for key, secret in found]


def write_salvaged(
    dst: str,
    rows: list[tuple[Any, ...]],
    edges: list[tuple[Any, ...]],
    vectors: list[tuple[Any, ...]],
    keys: Sequence[tuple[str, bytes]] = (),
) -> VerifyReport:
    """Write salvaged rows (and chain secrets) verbatim into the new log ``dst``; returns
    its verify report."""
    heads = key_heads([event_from_row(r) for r in rows], keys)
    with EventStore(dst) as store:
        with store._write() as wconn:
            wconn.executemany(
                f"INSERT INTO events({COLUMNS}) VALUES ({','.join('?' * 17)})",
                [
                    (*r[:6], pack_digest(r[6]), r[7], pack_digest(r[8]), pack_digest(r[9]),
                     *r[10:15], pack_digest(r[15]), pack_digest(r[16]))
                    for r in rows
                ],
            )  # fmt: skip
            wconn.executemany(
                "INSERT INTO chains(chain, secret, head_id, head_hash) VALUES (?, ?, ?, ?)",
                [
                    (key, secret, heads.get(key, (0, None))[0],
                     pack_digest(heads.get(key, (0, None))[1]))
                    for key, secret in keys
                ],
            )  # fmt: skip
            wconn.executemany(
                "INSERT OR IGNORE INTO edges(src, dst, kind) SELECT ?, ?, ?"
                " WHERE ?1 IN (SELECT id FROM events) AND ?2 IN (SELECT id FROM events)",
                edges,
            )
            wconn.executemany(
                "INSERT OR IGNORE INTO embeddings(event_id, model, dim, vector)"
                " SELECT ?, ?, ?, ? WHERE ?1 IN (SELECT id FROM events)",
                vectors,
            )
        store.sync_search_index()
        report = store.verify()
    return report


def _salvage_events(
    conn: sqlite3.Connection, errors: list[str]
) -> tuple[list[tuple[Any, ...]], list[int]]:
    try:
        top = int(conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0)
    except sqlite3.Error as exc:
        errors.append(f"max(id) unreadable ({exc}): searching every id up to 2**40")
        top = 2**40
    rows: list[tuple[Any, ...]] = []
    failed: list[int] = []
    pending = [(1, top)] if top else []
    columns = COLUMNS
    try:  # a file from before migrations/0013 (0015) has no user column (digests)
        present = {r[1] for r in conn.execute("PRAGMA table_info(events)")}
        for name in ("user_id", "user_digest", "session_digest"):
            if name not in present:
                columns = columns.replace(f", {name}", ", NULL")
    except sqlite3.Error as exc:
        errors.append(f"the events table's columns are unreadable ({exc})")
    while pending:
        lo, hi = pending.pop()
        try:
            rows.extend(
                conn.execute(
                    f"SELECT {columns} FROM events WHERE id BETWEEN ? AND ?", (lo, hi)
                ).fetchall()
            )
        except sqlite3.Error as exc:
            if lo == hi:
                failed.append(lo)
                if len(errors) < 20:
                    errors.append(f"event {lo}: {exc}")
                continue
            mid = (lo + hi) // 2
            pending += [(mid + 1, hi), (lo, mid)]
    return rows, failed


def _plain_rows(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], errors: list[str]
) -> list[tuple[Any, ...]]:
    """Salvaged rows with hex digests and decoded text, as an export shows them (the new
    file stores them plain). A text that cannot be decoded (its dictionary was lost) stays
    a blob, so that the row is reported as not verifying."""
    dictionaries: dict[int, Dictionary] = {}
    if any(isinstance(r[5], bytes) for r in rows):
        for id_, codec, data in _salvage_all(
            conn, "SELECT id, codec, data FROM text_dictionaries", errors
        ):
            dictionaries[int(id_)] = Dictionary(int(id_), str(codec), bytes(data))
    codec = TextCodec(dictionaries)
    plain: list[tuple[Any, ...]] = []
    for row in rows:
        fields = list(row)
        if isinstance(fields[5], bytes):
            try:
                fields[5] = codec.decode(fields[5])
            except PMMError as exc:
                if len(errors) < 20:
                    errors.append(f"event {row[0]}: its compressed text cannot be read ({exc})")
        for i in (6, 8, 9, 15, 16):
            fields[i] = unpack_digest(fields[i])
        plain.append(tuple(fields))
    return plain


def _salvage_all(conn: sqlite3.Connection, sql: str, errors: list[str]) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    try:
        for row in conn.execute(sql):
            found.append(row)
    except sqlite3.Error as exc:
        errors.append(f"{sql.split(' FROM ')[1]}: kept {len(found)} rows, then {exc}")
    return found
