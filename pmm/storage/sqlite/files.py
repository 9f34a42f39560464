"""The file primitives behind backup, restore, recovery and checks
(:mod:`pmm.storage.sqlite.backup`): the online backup API, page checks, and writing the rows
salvaged from a damaged file (:mod:`pmm.storage.sqlite.salvage` reads them).

    copy_file("pmm.db", "copy.db")                    # one-step online backup
    page_check("pmm.db", "quick_check")               # (True, [])
    found = salvage("broken.db")                      # pmm.storage.sqlite.salvage
    report, refused, mended = write_salvaged("salvaged.db", list(found.rows.values()), ...)
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pmm.errors import DatabaseError
from pmm.events.chains import key_heads
from pmm.records import Event, VerifyReport, event_from_row
from pmm.storage.sqlite.rows import COLUMNS
from pmm.storage.sqlite.store import EventStore
from pmm.storage.sqlite.stored_text import pack_digest


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


def write_salvaged(
    dst: str,
    rows: Sequence[tuple[Any, ...]],
    edges: Sequence[tuple[Any, ...]],
    vectors: Sequence[tuple[Any, ...]],
    keys: Sequence[tuple[str, bytes]] = (),
    expiry: Sequence[tuple[Any, ...]] = (),
) -> tuple[VerifyReport, dict[int, str], dict[int, str]]:
    """Write salvaged rows (ascending ids), chain secrets, edges, vectors and store TTLs
    verbatim into the new log ``dst``; the full-text and window indexes are built anew
    from the rows. Returns its verify report, the rows that could not be written and
    those written with damaged fields replaced (each ``{id: why}``)."""
    refused: dict[int, str] = {}
    mended: dict[int, str] = {}
    with EventStore(dst) as store:
        with store._write() as wconn:
            _insert_rows(wconn, rows, refused, mended)
            written = [r for r in rows if r[0] not in refused]
            heads = key_heads(_events(written), keys)
            wconn.executemany(
                "INSERT INTO chains(chain, secret, head_id, head_hash) VALUES (?, ?, ?, ?)",
                [
                    (key, secret, heads.get(key, (0, None))[0],
                     pack_digest(heads.get(key, (0, None))[1]))
                    for key, secret in keys
                ],
            )  # fmt: skip
            _insert_where_events(
                wconn,
                "INSERT OR IGNORE INTO edges(src, dst, kind) SELECT ?, ?, ?"
                " WHERE ?1 IN (SELECT id FROM events) AND ?2 IN (SELECT id FROM events)",
                edges,
            )
            _insert_where_events(
                wconn,
                "INSERT OR IGNORE INTO embeddings(event_id, model, dim, vector)"
                " SELECT ?, ?, ?, ? WHERE ?1 IN (SELECT id FROM events)",
                vectors,
            )
            _insert_where_events(
                wconn,
                "INSERT OR IGNORE INTO store_expiry(event_id, ttl_minutes, expires_at)"
                " SELECT ?, ?, ? WHERE ?1 IN (SELECT id FROM events)",
                expiry,
            )
        store.sync_search_index()
        report = store.verify()
    return report, refused, mended


def table_counts(path: str, tables: Sequence[str]) -> dict[str, int]:
    """Rows in each of ``tables`` of the (intact) file ``path``."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in tables}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise DatabaseError(f"could not count the rows of {path}: {exc}") from exc


_INSERT_ROW = f"INSERT INTO events({COLUMNS}) VALUES ({','.join('?' * 17)})"


def _stored(r: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*r[:6], _pack(r[6]), r[7], _pack(r[8]), _pack(r[9]), *r[10:15], _pack(r[15]),
            _pack(r[16]))  # fmt: skip


def _pack(value: Any) -> Any:
    return pack_digest(value) if isinstance(value, str) else value


def _insert_rows(
    conn: sqlite3.Connection,
    rows: Sequence[tuple[Any, ...]],
    refused: dict[int, str],
    mended: dict[int, str],
) -> None:
    """Insert ``rows`` at once; where a damaged row breaks a column's rule (NOT NULL, a
    type, meta that is not JSON: the meta indexes parse it), again one by one: such a row
    is written with the broken fields replaced (``mended`` says which; its hash no longer
    matches, so it is reported as not verifying), or left out (``refused``)."""
    conn.execute("SAVEPOINT salvaged")
    try:
        conn.executemany(_INSERT_ROW, [_stored(r) for r in rows])
    except (sqlite3.Error, TypeError, ValueError):
        conn.execute("ROLLBACK TO salvaged")
    else:
        conn.execute("RELEASE salvaged")
        return
    conn.execute("RELEASE salvaged")
    for row in rows:
        try:
            conn.execute(_INSERT_ROW, _stored(row))
            continue
        except (sqlite3.Error, TypeError, ValueError) as exc:
            error = str(exc)
        fixed, changed = _mend(row)
        try:
            conn.execute(_INSERT_ROW, _stored(fixed))
            mended[int(row[0])] = f"{error}: stored with {', '.join(changed)} replaced"
        except (sqlite3.Error, TypeError, ValueError) as exc:
            refused[int(row[0])] = f"{error}; {exc}"


_REQUIRED_TEXT = {1: "ts", 2: "kind", 6: "content_sha256", 9: "hash"}
"""The NOT NULL text columns of an event row, by position."""


def _mend(row: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[str]]:
    """A damaged row with each field that breaks a column's rule replaced (meta that is not
    a JSON object by ``{}``, a missing or non-text required field by ``''``, a hash
    version that is not a number by 0), and the names of the fields replaced."""
    fields, changed = list(row), list[str]()
    try:
        meta_ok = isinstance(fields[7], str) and isinstance(json.loads(fields[7]), dict)
    except ValueError:
        meta_ok = False
    if not meta_ok:
        fields[7], changed = "{}", [*changed, "meta"]
    for i, name in _REQUIRED_TEXT.items():
        if not isinstance(fields[i], str):
            fields[i], changed = "", [*changed, name]
    if not isinstance(fields[10], int):
        fields[10], changed = 0, [*changed, "hash_version"]
    for i, name in {3: "session_id", 4: "role", 14: "user_id"}.items():
        if fields[i] is not None and not isinstance(fields[i], str):
            fields[i], changed = None, [*changed, name]
    return tuple(fields), changed


def _insert_where_events(
    conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert the rows of a table that refers to events, one by one where a damaged row
    breaks a rule (such a row is left out: it was read from a damaged page)."""
    try:
        conn.execute("SAVEPOINT derived")
        conn.executemany(sql, rows)
        conn.execute("RELEASE derived")
        return
    except (sqlite3.Error, TypeError, ValueError):
        conn.execute("ROLLBACK TO derived")
        conn.execute("RELEASE derived")
    for row in rows:
        try:
            conn.execute(sql, row)
        except (sqlite3.Error, TypeError, ValueError):
            continue  # a damaged edge/vector/TTL row; counted as not copied by the caller


def _events(rows: Sequence[tuple[Any, ...]]) -> list[Event]:
    """The rows that parse as events (a damaged row's meta may not be JSON)."""
    events: list[Event] = []
    for row in rows:
        try:
            events.append(event_from_row(row))
        except (TypeError, ValueError):
            continue  # it is reported as not verifying; it just heads no chain
    return events
