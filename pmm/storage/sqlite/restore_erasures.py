"""Erasures a backup would undo, for :func:`pmm.storage.sqlite.backup.restore`.

A backup taken before an erasure still holds what was erased. The current log records each
erasure as chained ``redaction`` events naming the erased ids; :func:`undone_erasures`
compares them with the backup, and :func:`reapply` erases the same again in the restored
file (recorded by new ``redaction`` events)::

    undone = undone_erasures("pmm.db", "backup.db")   # [] when the backup holds none of it
    undone[0].markers, undone[0].ids, undone[0].whole_user
    with EventStore("pmm.db") as store:                 # after copying the backup in
        reapply(store, undone, "backup.db")

An erased event counts as held by the backup when the backup has the same event (same id
and hash) with its text, summary, keywords or a vector still there. A whole-user erasure
(``Mind.forget(user_id=...)``: her ids and chain secret went too) counts as held when the
backup still has rows or a chain of that user. Messages name the markers and ids, never the
erased user's id.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pmm.errors import DatabaseError, IntegrityError
from pmm.events.hashing import LEGACY_HASH_VERSION
from pmm.retention.erasure import PROTECTED_KINDS, REDACTION_KIND
from pmm.storage.sqlite.files import page_check
from pmm.storage.sqlite.salvage import Salvage, compress_ids, salvage
from pmm.storage.sqlite.stored_text import pack_digest

if TYPE_CHECKING:
    from pmm.storage.base import EventLog

_CHUNK = 500


class ErasedDataInBackupError(IntegrityError):
    """The backup holds events (or a user) that the current log records as erased."""


class UncheckedErasuresError(DatabaseError):
    """The current log cannot be read, so its erasures cannot be compared with a backup."""


@dataclass(frozen=True, slots=True)
class UndoneErasure:
    """Erasures recorded in the current log whose erased data the backup still holds."""

    markers: list[int]
    """The ``redaction`` events (in the current log) that record them."""
    reason: str
    ids: list[int]
    """The erased events the backup holds (with their text, digest or vectors; for a whole
    user, every one of her events it holds)."""
    user: str | None = None
    """The user whose every event was erased (her ids and chain secret too); never shown."""

    @property
    def whole_user(self) -> bool:
        return self.user is not None

    def describe(self) -> str:
        """One line for the operator, without the erased user's id."""
        runs = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in compress_ids(self.ids)[:10])
        more = ", ..." if len(compress_ids(self.ids)) > 10 else ""
        what = (
            "a user whose every event was erased (her user and thread ids, her chain"
            f" secret and {len(self.ids)} events: ids {runs}{more})"
            if self.whole_user
            else f"{len(self.ids)} erased event{'s' * (len(self.ids) != 1)} (ids {runs}{more})"
        )
        events = ", ".join(map(str, self.markers))
        return f"erasure recorded as event(s) {events} (reason: {self.reason!r}): {what}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "markers": self.markers,
            "reason": self.reason,
            "ids": self.ids,
            "whole_user": self.whole_user,
        }


def undone_erasures(current: str, backup: str) -> tuple[list[UndoneErasure], str | None]:
    """The erasures recorded in the log ``current`` whose erased data ``backup`` holds
    (both files opened read-only), and what could not be checked (None: everything).

    A ``current`` that fails SQLite's page check is read row by row
    (:func:`pmm.storage.sqlite.salvage.salvage`: a damaged page can hide rows from a query
    without an error); the ids it cannot read, any of which may have recorded an erasure,
    are the second value. Raises :class:`UncheckedErasuresError` when it cannot be read at
    all."""
    ok, _ = page_check(current, "quick_check")
    if ok:
        try:
            conn = _open(current)
            try:
                return _compare(_ReadLog(conn), backup), None
            finally:
                conn.close()
        except sqlite3.Error:
            pass  # damaged after all: read row by row
    try:
        found = salvage(current)
        undone = _compare(_SalvagedLog(found), backup)
    except (DatabaseError, sqlite3.Error) as exc:
        raise UncheckedErasuresError(
            f"{current} cannot be read ({exc}), so the erasures it records cannot be compared"
            " with the backup: nothing was restored (--force restores without this check)"
        ) from exc
    lost = compress_ids(_unchecked(found, backup))
    if not lost:
        return undone, None
    runs = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in lost[:10])
    return undone, (
        f"{current} is damaged: its events {runs}{', ...' if len(lost) > 10 else ''} cannot be"
        " read, and any erasure recorded there cannot be checked against the backup"
    )


def _unchecked(found: Salvage, backup: str) -> list[int]:
    """The ids lost from the damaged current log that may have recorded an erasure the
    backup predates: those past the backup's newest id (an erasure's records are appended
    after every event there was), or every lost id when the two logs differ where both
    can be read (then the backup is not an earlier state of this log)."""
    old = _open(backup)
    try:
        top = int(old.execute("SELECT max(id) FROM events").fetchone()[0] or 0)
        shared = sorted(i for i in found.rows if i <= top)
        theirs = _column(old, "hash", shared)
    finally:
        old.close()
    if any(theirs.get(i) != pack_digest(found.rows[i][9]) for i in shared):
        return found.lost
    return [i for i in found.lost if i > top]


def _compare(log: _ReadLog | _SalvagedLog, backup: str) -> list[UndoneErasure]:
    markers = log.markers()
    targets = sorted({t for _, ids, _ in markers for t in ids})
    old = _open(backup)
    try:
        held, users = _held(old, targets, log.hashes(targets))
        whole = {
            user: _user_ids(old, user)
            for user in set(users.values())
            if user is not None and not log.has_user(user) and _has_user(old, user)
        }
    finally:
        old.close()
    groups: dict[tuple[str, str | None], tuple[list[int], set[int]]] = {}
    for marker, ids, reason in markers:
        user = next((users[t] for t in ids if users.get(t) in whole), None)
        mine = whole[user] if user is not None else [t for t in ids if t in held]
        if not mine:
            continue
        found = groups.setdefault((reason, user), ([], set()))
        found[0].append(marker)
        found[1].update(mine)
    return [
        UndoneErasure(sorted(found[0]), reason, sorted(found[1]), user)
        for (reason, user), found in groups.items()
    ]


class _ReadLog:
    """The current log's erasure records, read by queries."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def markers(self) -> list[tuple[int, list[int], str]]:
        return [
            (int(id_), *_parsed(meta))
            for id_, meta in self._conn.execute(
                "SELECT id, meta FROM events WHERE kind = ? ORDER BY id", (REDACTION_KIND,)
            )
        ]

    def hashes(self, ids: Sequence[int]) -> dict[int, Any]:
        return _column(self._conn, "hash", ids)

    def has_user(self, user: str) -> bool:
        return _has_user(self._conn, user)


class _SalvagedLog:
    """The current log's erasure records, from the rows still readable in a damaged file."""

    def __init__(self, found: Salvage) -> None:
        self._rows = found.rows
        self._chains = {key for key, _ in found.keys}

    def markers(self) -> list[tuple[int, list[int], str]]:
        return [
            (id_, *_parsed(row[7])) for id_, row in self._rows.items() if row[2] == REDACTION_KIND
        ]

    def hashes(self, ids: Sequence[int]) -> dict[int, Any]:
        return {i: pack_digest(self._rows[i][9]) for i in ids if i in self._rows}

    def has_user(self, user: str) -> bool:
        return user in self._chains or any(r[14] == user for r in self._rows.values())


def _parsed(meta: Any) -> tuple[list[int], str]:
    """``(erased ids, reason)`` of a ``redaction`` event's meta."""
    try:
        data = json.loads(meta) if isinstance(meta, str) else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    ids = data.get("targets", [data["target"]] if "target" in data else [])
    return [int(i) for i in ids if isinstance(i, int)], str(data.get("reason", ""))


def reapply(store: EventLog, undone: Sequence[UndoneErasure], source: str) -> list[int]:
    """Erase in ``store`` (the restored log) what each of ``undone`` erased, as
    ``Mind.forget`` does (a whole user: her ids and chain secret too); returns the ids of
    the new ``redaction`` events."""
    markers: list[int] = []
    for erasure in undone:
        reason = f"re-applied after restoring {source}: {erasure.reason}"
        ids = erasure.ids
        if erasure.user is not None:
            ids = [
                e.id
                for e in store.events(user_id=erasure.user)
                if e.kind not in PROTECTED_KINDS and e.hash_version != LEGACY_HASH_VERSION
            ]
        if not ids:
            continue
        report = store.forget(event_ids=ids, reason=reason, identifiers_of=erasure.user)
        markers += [m.id for m in report.markers]
    return markers


# -- internals -------------------------------------------------------------------------


def _open(path: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    return (ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK))


def _column(conn: sqlite3.Connection, column: str, ids: Sequence[int]) -> dict[int, Any]:
    values: dict[int, Any] = {}
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        values.update(conn.execute(f"SELECT id, {column} FROM events WHERE id IN ({marks})", chunk))
    return values


def _has(conn: sqlite3.Connection, table: str, column: str | None = None) -> bool:
    if column is None:
        return bool(
            conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
        )
    return any(r[1] == column for r in conn.execute(f"PRAGMA table_info({table})"))


def _held(
    conn: sqlite3.Connection, targets: Sequence[int], hashes: dict[int, Any]
) -> tuple[set[int], dict[int, str | None]]:
    """``(erased ids whose text, digest or vectors the backup holds, {erased id: its user
    in the backup})``, counting only the backup's rows that are the same events (same hash)."""
    user = "user_id" if _has(conn, "events", "user_id") else "NULL"
    held: set[int] = set()
    users: dict[int, str | None] = {}
    for chunk in _chunks(targets):
        marks = ",".join("?" * len(chunk))
        for id_, hash_, owner, text in conn.execute(
            f"SELECT id, hash, {user}, content IS NOT NULL OR summary IS NOT NULL"
            f" OR keywords IS NOT NULL FROM events WHERE id IN ({marks})",
            chunk,
        ):
            if hash_ != hashes.get(id_):
                continue  # another event under the same id: not what was erased
            users[id_] = owner
            if text:
                held.add(id_)
        held.update(
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT event_id FROM embeddings WHERE event_id IN ({marks})", chunk
            )
            if r[0] in users
        )
    return held, users


def _has_user(conn: sqlite3.Connection, user: str) -> bool:
    """Whether the log still has a row or a chain of ``user``."""
    if (
        _has(conn, "events", "user_id")
        and conn.execute("SELECT 1 FROM events WHERE user_id = ? LIMIT 1", (user,)).fetchone()
    ):
        return True
    return _has(conn, "chains") and bool(
        conn.execute("SELECT 1 FROM chains WHERE chain = ?", (user,)).fetchone()
    )


def _user_ids(conn: sqlite3.Connection, user: str) -> list[int]:
    """The ids of the backup's events of ``user`` that an erasure of her erases."""
    return [
        int(r[0])
        for r in conn.execute(
            f"SELECT id FROM events WHERE user_id = ? AND hash_version != ?"
            f" AND kind NOT IN ({','.join('?' * len(PROTECTED_KINDS))})",
            (user, LEGACY_HASH_VERSION, *PROTECTED_KINDS),
        )
    ]
