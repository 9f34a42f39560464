"""Reading what a damaged SQLite log still holds, for :func:`pmm.storage.sqlite.backup.recover`.

    found = salvage("broken.db")
    found.rows            # every event row a read still returns, by id (ids ascending)
    found.top             # the highest id the file knows (chain heads, max(id), rows read)
    found.lost            # every other id in 1..top: not readable, one by one either
    found.damaged         # tables and indexes SQLite's integrity check names as damaged

A range read (``WHERE id BETWEEN lo AND hi``) on a file with a damaged interior page can end
early without an error, so no range read is trusted to have reached its end: ids it did not
return are read again by later range reads that start after the last row returned, and
every id still missing in ``1..top`` is then read on its own (``WHERE id = ?``). ``top`` is
the chains' highest recorded head (``chains.head_id``), or where the file has none the
highest of ``sqlite_sequence``, ``max(id)`` (which the last page's damage can hide) and the
ids read; ids just past it are tried too, and each row found there extends it. A claim far
past what the file holds (a damaged head) is not believed, and the report says so.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from pmm.errors import DatabaseError, PMMError
from pmm.storage.sqlite.rows import COLUMNS
from pmm.storage.sqlite.stored_text import unpack_digest
from pmm.storage.text_codec import Dictionary, TextCodec

PROBE_PAST_TOP = 1_000
"""Ids past the highest known one that are still tried (rows a damaged page hides from
every range read and from ``max(id)``); each row found there moves the window on."""
_MARGIN = 1_000_000
"""How far past the rows read a claimed highest id may lie and still be believed."""
_MAX_ERRORS = 40
"""Read errors quoted in the report (each failed id is listed in ``lost`` either way)."""


@dataclass(slots=True)
class Salvage:
    """What :func:`salvage` read from a damaged file."""

    rows: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """Event rows by id, with hex digests and decoded text (as an export shows them)."""
    failed: list[int] = field(default_factory=list)
    """Ids whose read raised an error even on their own (a subset of ``lost``)."""
    top: int = 0
    """The highest id the file knows of."""
    claims: dict[str, int] = field(default_factory=dict)
    """Where ``top`` came from: ``chains.head_id``, ``sqlite_sequence``, ``max(id)``, rows read."""
    edges: list[tuple[Any, ...]] = field(default_factory=list)
    vectors: list[tuple[Any, ...]] = field(default_factory=list)
    expiry: list[tuple[Any, ...]] = field(default_factory=list)
    keys: list[tuple[str, bytes]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    """Tables that could not be read to their end (``name: what happened``)."""
    damaged: list[str] = field(default_factory=list)
    """Tables and indexes ``PRAGMA integrity_check`` names as damaged."""
    errors: list[str] = field(default_factory=list)

    @property
    def lost(self) -> list[int]:
        """Every id in ``1..top`` that could not be read."""
        return [i for i in range(1, self.top + 1) if i not in self.rows]


def salvage(src: str) -> Salvage:
    """Every readable row of the damaged file ``src`` (opened read-only) and what could
    not be read; raises :class:`DatabaseError` when not even its schema can be read."""
    try:
        conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        # damaged text that is no longer UTF-8 is still read (the row then fails its check)
        conn.text_factory = lambda data: data.decode("utf-8", "replace")
        conn.execute("SELECT 1 FROM events LIMIT 0")
    except sqlite3.Error as exc:
        raise DatabaseError(
            f"{src} cannot be read at all ({exc}): its schema (sqlite_master) is damaged,"
            " so not one row can be found by id; `sqlite3 BROKEN.db .recover` may still find"
            " rows"
        ) from exc
    found = Salvage()
    try:
        columns = _columns(conn, found)
        raw = _read_events(conn, columns, found)
        found.rows = _plain_rows(conn, raw, found)
        found.edges = _read_all(conn, "edges", "SELECT src, dst, kind FROM edges", found)
        found.vectors = _read_all(
            conn, "embeddings", "SELECT event_id, model, dim, vector FROM embeddings", found
        )
        if _has_table(conn, "store_expiry"):
            found.expiry = _read_all(
                conn,
                "store_expiry",
                "SELECT event_id, ttl_minutes, expires_at FROM store_expiry",
                found,
            )
        if _has_table(conn, "chains"):  # migrations/0015
            found.keys = [
                (str(key), bytes(secret))
                for key, secret in _read_all(
                    conn, "chains", "SELECT chain, secret FROM chains", found
                )
                if isinstance(key, str) and isinstance(secret, bytes)
            ]
        found.damaged = _damaged(conn)
    finally:
        conn.close()
    return found


def compress_ids(ids: list[int]) -> list[tuple[int, int]]:
    """Ascending ``ids`` as ``(first, last)`` runs: ``[1, 2, 3, 7]`` -> ``[(1, 3), (7, 7)]``."""
    runs: list[tuple[int, int]] = []
    for i in ids:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


# -- events ----------------------------------------------------------------------------


def _columns(conn: sqlite3.Connection, found: Salvage) -> str:
    """The event columns to read; a file from before migrations/0013 (0015) has no user
    column (digests): NULL stands in."""
    columns = COLUMNS
    try:
        present = {r[1] for r in conn.execute("PRAGMA table_info(events)")}
    except sqlite3.Error as exc:
        found.errors.append(f"the events table's columns are unreadable ({exc})")
        return columns
    for name in ("user_id", "user_digest", "session_digest"):
        if name not in present:
            columns = columns.replace(f", {name}", ", NULL")
    return columns


def _read_events(
    conn: sqlite3.Connection, columns: str, found: Salvage
) -> dict[int, tuple[Any, ...]]:
    rows: dict[int, tuple[Any, ...]] = {}
    tried: set[int] = set()
    failed: set[int] = set()
    _range(conn, columns, 1, 2**62, rows, found)  # the fast path: one pass, maybe cut short
    found.claims = _claims(conn, found)
    top = _believed_top(conn, found, rows)
    start = 1
    while True:
        _fill(conn, columns, start, top, rows, tried, failed, found)
        # rows just past the highest id known, hidden from max(id) by a damaged last page;
        # a row far past it is kept but moves no bound (a damaged cell's id is anything)
        _range(conn, columns, top + 1, top + PROBE_PAST_TOP, rows, found)
        for id_ in range(top + 1, top + PROBE_PAST_TOP + 1):
            _point(conn, columns, id_, rows, tried, failed, found)
        newest = max((i for i in rows if top < i <= top + PROBE_PAST_TOP), default=top)
        if newest == top:
            break
        start, top = top + 1, newest
        found.claims["rows read"] = newest
    found.top = top
    found.failed = sorted(i for i in failed if i <= top and i not in rows)
    return rows


def _fill(
    conn: sqlite3.Connection,
    columns: str,
    lo: int,
    hi: int,
    rows: dict[int, tuple[Any, ...]],
    tried: set[int],
    failed: set[int],
    found: Salvage,
) -> None:
    """Read every id of ``lo..hi`` missing from ``rows``: a range read from each missing id
    to the end of its gap (it may stop early: the next one starts after the last row it
    returned), and a read of the id on its own where the range read did not return it."""
    present = sorted(rows)
    for id_ in range(lo, hi + 1):
        if id_ in rows or id_ in tried:
            continue
        after = bisect.bisect_right(present, id_)
        end = present[after] - 1 if after < len(present) and present[after] <= hi else hi
        _range(conn, columns, id_, end, rows, found)
        if id_ not in rows:
            _point(conn, columns, id_, rows, tried, failed, found)


def _range(
    conn: sqlite3.Connection,
    columns: str,
    lo: int,
    hi: int,
    rows: dict[int, tuple[Any, ...]],
    found: Salvage,
) -> int:
    """Add the rows a range read of ``lo..hi`` returns before it ends or fails; returns
    how many new ones."""
    new = 0
    try:
        for row in conn.execute(
            f"SELECT {columns} FROM events WHERE id BETWEEN ? AND ? ORDER BY id", (lo, hi)
        ):
            if isinstance(row[0], int) and lo <= row[0] <= hi and row[0] not in rows:
                rows[row[0]] = row
                new += 1
    except sqlite3.Error:
        pass  # what it returned is kept; every id it missed is read on its own later
    return new


def _point(
    conn: sqlite3.Connection,
    columns: str,
    id_: int,
    rows: dict[int, tuple[Any, ...]],
    tried: set[int],
    failed: set[int],
    found: Salvage,
) -> None:
    if id_ in rows or id_ in tried:
        return
    tried.add(id_)
    try:
        row = conn.execute(f"SELECT {columns} FROM events WHERE id = ?", (id_,)).fetchone()
    except sqlite3.Error as exc:
        failed.add(id_)
        if len(found.errors) < _MAX_ERRORS:
            found.errors.append(f"event {id_}: {exc}")
        return
    if row is not None:
        rows[id_] = row


def _claims(conn: sqlite3.Connection, found: Salvage) -> dict[str, int]:
    """The highest event id each record of the file claims, where it can be read."""
    claims: dict[str, int] = {}
    queries = {
        "max(id)": "SELECT max(id) FROM events",
        "chains.head_id": "SELECT max(head_id) FROM chains",
        "sqlite_sequence": "SELECT max(seq) FROM sqlite_sequence WHERE name = 'events'",
    }
    for name, sql in queries.items():
        if name == "chains.head_id" and not _has_table(conn, "chains"):
            continue
        try:
            value = conn.execute(sql).fetchone()[0]
        except sqlite3.Error as exc:
            found.errors.append(f"{name} unreadable ({exc})")
            continue
        if isinstance(value, int) and value > 0:
            claims[name] = value
    return claims


def _believed_top(
    conn: sqlite3.Connection, found: Salvage, rows: dict[int, tuple[Any, ...]]
) -> int:
    """The highest id the file knows: its chains' recorded heads where readable (the log's
    own record of its newest rows), else the highest of the other claims and the rows read.
    A claim more than ``_MARGIN`` ids past twice the rows the file holds (ids are dense),
    with no row of that id, is the damage itself and is not believed."""
    try:
        counted = int(conn.execute("SELECT count(*) FROM events").fetchone()[0] or 0)
    except (sqlite3.Error, TypeError, ValueError):
        counted = 0
    bound = 2 * max(len(rows), counted) + _MARGIN
    believed: dict[str, int] = {}
    for name, value in found.claims.items():
        if value <= bound or _exists(conn, value):
            believed[name] = value
        else:
            found.errors.append(
                f"{name} says the newest id is {value}, far past the {max(len(rows), counted)}"
                " rows found, and no row of that id can be read: taken as damage, not believed"
            )
    if "chains.head_id" in believed:
        return believed["chains.head_id"]  # ids past it count only where rows follow on
    return max([*believed.values(), *(i for i in rows if i <= bound)], default=0)


def _exists(conn: sqlite3.Connection, id_: int) -> bool:
    try:
        return conn.execute("SELECT 1 FROM events WHERE id = ?", (id_,)).fetchone() is not None
    except sqlite3.Error:
        return False


# -- other tables ----------------------------------------------------------------------


def _plain_rows(
    conn: sqlite3.Connection, rows: dict[int, tuple[Any, ...]], found: Salvage
) -> dict[int, tuple[Any, ...]]:
    """Salvaged rows with hex digests and decoded text, as an export shows them (the new
    file stores them plain). A text that cannot be decoded (its dictionary was lost) stays
    a blob, so that the row is reported as not verifying."""
    dictionaries: dict[int, Dictionary] = {}
    if any(isinstance(r[5], bytes) for r in rows.values()):
        for id_, codec, data in _read_all(
            conn, "text_dictionaries", "SELECT id, codec, data FROM text_dictionaries", found
        ):
            try:
                dictionaries[int(id_)] = Dictionary(int(id_), str(codec), bytes(data))
            except (TypeError, ValueError, PMMError) as exc:
                found.errors.append(f"text dictionary {id_!r} unreadable ({exc})")
    codec = TextCodec(dictionaries)
    plain: dict[int, tuple[Any, ...]] = {}
    for id_ in sorted(rows):
        fields = list(rows[id_])
        if isinstance(fields[5], bytes):
            try:
                fields[5] = codec.decode(fields[5])
            except PMMError as exc:
                if len(found.errors) < _MAX_ERRORS:
                    found.errors.append(f"event {id_}: its compressed text cannot be read ({exc})")
        for i in (6, 8, 9, 15, 16):
            fields[i] = unpack_digest(fields[i])
        plain[id_] = tuple(fields)
    return plain


def _read_all(
    conn: sqlite3.Connection, name: str, sql: str, found: Salvage
) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    try:
        for row in conn.execute(sql):
            rows.append(row)
    except sqlite3.Error as exc:
        found.unreadable.append(f"{name}: {len(rows)} rows read, then {exc}")
    return rows


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    try:
        return bool(
            conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
            ).fetchone()
        )
    except sqlite3.Error:
        return False


_TREE = re.compile(r"\bTree (\d+) page")
_NAMED = re.compile(r"\bindex (\w+)")
_PAGE = re.compile(r"\b(?:[Tt]ree|[Pp]age) (\d+)")
"""A page an integrity-check message names (a b-tree's root, or a page in one)."""


def _damaged(conn: sqlite3.Connection) -> list[str]:
    """The tables and indexes found damaged, by name: those ``PRAGMA integrity_check``
    names (or whose pages it names; where it fails outright, it is run one table at a
    time), and those whose b-tree cannot be walked page by page (SQLite's ``dbstat``)."""
    try:
        problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(10000)")]
    except sqlite3.Error as exc:
        problems = [f"integrity_check failed: {exc}"]
    try:
        trees = [
            (str(name), int(root))
            for name, root in conn.execute("SELECT name, rootpage FROM sqlite_master")
            if isinstance(root, int) and root > 0
        ]
    except sqlite3.Error:
        trees = []
    roots = {root: name for name, root in trees}
    pages = {int(p) for line in problems for p in _PAGE.findall(line)}
    names: dict[str, None] = {}
    for line in problems:
        for tree in _TREE.findall(line):
            names[roots.get(int(tree), f"b-tree at page {tree}")] = None
        for index in _NAMED.findall(line):
            names[index] = None
    if problems and problems[0].startswith("integrity_check failed"):
        for name in _tables(conn):  # checked one table (with its indexes) at a time
            try:
                found = [str(r[0]) for r in conn.execute(f"PRAGMA integrity_check('{name}')")]
            except sqlite3.Error:
                found = ["failed"]
            if found != ["ok"]:
                names[name + " (or one of its indexes)"] = None
    for name, _ in trees:
        try:
            held = {
                int(r[0]) for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (name,))
            }
        except sqlite3.Error:
            names[name] = None  # its b-tree cannot be walked
            continue
        if held & pages:
            names[name] = None
    if not names and problems != ["ok"]:
        flat = "; ".join(" ".join(p.split()) for p in problems[:3])
        names[f"(not named by SQLite: {flat})"] = None
    return list(names)


def _tables(conn: sqlite3.Connection) -> list[str]:
    try:
        return [
            str(r[0])
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if "'" not in str(r[0])
        ]
    except sqlite3.Error:
        return []
