"""Lossless compression of old raw text in the SQLite log (``PMM_COMPRESS_AFTER``).

    report = compress_texts(store, CompressAfter.parse("1000"))   # all but the newest 1,000
    report = compress_texts(store, CompressAfter.parse("30d"))    # texts older than 30 days

(``store``: an :class:`~pmm.storage.sqlite.EventStore`, or anything with the members of
:class:`~pmm.storage.sqlite.handles.CodedFile`.)
    report.compressed, report.bytes_before, report.bytes_after

Texts older than the policy are re-stored as :mod:`pmm.storage.text_codec` blobs (zstd with a
dictionary trained on this file's own text, or zlib), in one write transaction; reads
decode them (:mod:`pmm.storage.sqlite.stored_text`), ``verify`` checks ``content_sha256`` against
the decoded text, and neither the chain nor the full-text indexes change. Runs from
``Mind.dream()``, ``pmm compress`` and, in short bounded runs, the background worker's idle
pass and ``Mind.close()`` (:meth:`pmm.dream.upkeep.Upkeep.compress_in_passing`); never on an
append.

The first run with at least :data:`MIN_SAMPLES` texts to compress trains a dictionary
(kept in ``text_dictionaries`` with the id range of its samples, so the file stays
self-contained); later runs reuse the newest one (``retrain=True`` trains a new version).
A dictionary holds pieces of the texts it was trained on: erasing one of those events
retrains the dictionary without it and re-encodes every text that used the old one
(:func:`retrain_after_erasure`), so that erasure still leaves no byte behind.
``text_state.scanned_upto`` remembers how far the log was looked at, so a run reads only
the rows that became old since the last one.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pmm.events.hashing import utc_now
from pmm.retention.compression import CompressAfter
from pmm.storage.text_codec import (
    FORMAT_VERSION,
    Dictionary,
    TextCodec,
    default_codec,
    dictionary_id,
    train,
)

if TYPE_CHECKING:
    from pmm.storage.sqlite.handles import CodedFile

MIN_BYTES = 96
"""Texts shorter than this (UTF-8 bytes) stay plain: the header would eat the gain."""
MIN_SAMPLES = 16
"""Texts a first run needs to train a dictionary; with fewer it waits for more."""
MAX_SAMPLES = 4000
"""Texts a dictionary is trained on at most (evenly spread over the candidates)."""
BATCH = 5000
"""Texts compressed per write transaction."""


@dataclass(frozen=True, slots=True)
class CompressionReport:
    """What one :func:`compress_texts` run did (or, with ``dry_run``, would do)."""

    compressed: int
    bytes_before: int
    bytes_after: int
    dictionary_id: int | None
    trained: bool
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "compressed": self.compressed,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "dictionary_id": self.dictionary_id,
            "trained": self.trained,
            "dry_run": self.dry_run,
        }


def compress_texts(
    file: CodedFile,
    policy: CompressAfter,
    *,
    dry_run: bool = False,
    retrain: bool = False,
    now: datetime | None = None,
    batch: int = BATCH,
    seconds: float | None = None,
) -> CompressionReport:
    """Compress the plain texts of ``file`` that ``policy`` calls old (see the module
    docstring), ``batch`` texts per write transaction, so that appends from other threads
    and processes wait for one batch at most. With ``seconds``, no batch starts once that
    much time has passed: the rest waits for the next run (``scanned_upto`` keeps the
    place)."""
    done = CompressionReport(0, 0, 0, None, False, dry_run)
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        with file._lock, file._write() as conn:
            scanned = conn.execute("SELECT scanned_upto FROM text_state").fetchone()[0]
            where, params, upto = _candidates(conn, policy, scanned, now)
            if dry_run:
                count, plain = conn.execute(
                    f"SELECT count(*), coalesce(sum(length(CAST(content AS BLOB))), 0)"
                    f" FROM events WHERE {where}",
                    params,
                ).fetchone()
                trained = retrain or _newest(conn) is None
                return CompressionReport(int(count), int(plain), 0, None, trained, True)
            rows = [
                (int(r[0]), str(r[1]))
                for r in conn.execute(
                    f"SELECT id, content FROM events WHERE {where} ORDER BY id LIMIT ?",
                    [*params, batch],
                )
            ]
            if len(rows) == batch:
                upto = rows[-1][0]  # the next batch starts after it
            step = _compress_rows(
                file._text.codec, conn, rows, retrain and done.dictionary_id is None
            )
            if step is None:
                return done  # too little text to train a dictionary on yet: wait for more
            conn.execute("UPDATE text_state SET scanned_upto = ?", (upto,))
        done = CompressionReport(
            done.compressed + step.compressed,
            done.bytes_before + step.bytes_before,
            done.bytes_after + step.bytes_after,
            step.dictionary_id or done.dictionary_id,
            done.trained or step.trained,
        )
        if len(rows) < batch or (deadline is not None and time.monotonic() >= deadline):
            return done


def _compress_rows(
    codec: TextCodec, conn: sqlite3.Connection, rows: list[tuple[int, str]], retrain: bool
) -> CompressionReport | None:
    """Encode and store ``rows``; None when a dictionary is needed and they are too few."""
    if not rows:
        return CompressionReport(0, 0, 0, None, False)
    dictionary = None if retrain else _newest(conn)
    trained = dictionary is None
    if dictionary is None:
        if len(rows) < MIN_SAMPLES:
            return None
        dictionary = _train(conn, rows)
    codec.add(dictionary)
    updates: list[tuple[bytes, int]] = []
    before = after = 0
    for event_id, value in rows:
        size = len(value.encode("utf-8"))
        blob = codec.encode(value, dictionary)
        before += size
        if blob is not None:
            updates.append((blob, event_id))
        after += size if blob is None else len(blob)
    conn.executemany("UPDATE events SET content = ? WHERE id = ?", updates)
    return CompressionReport(len(updates), before, after, dictionary.id, trained)


def _candidates(
    conn: sqlite3.Connection, policy: CompressAfter, scanned: int, now: datetime | None
) -> tuple[str, list[Any], int]:
    """The WHERE clause (and its parameters) of the plain texts to compress, and the id up
    to which the log is scanned once they are."""
    newest = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
    where = "id > ? AND typeof(content) = 'text' AND length(CAST(content AS BLOB)) >= ?"
    params: list[Any] = [scanned, MIN_BYTES]
    cutoff = policy.cutoff_ts(now)
    if cutoff is not None:
        # Scanned up to the first row that is still young: a row imported with an old
        # ``ts`` after it is found by the next run.
        young = conn.execute(
            "SELECT min(id) FROM events WHERE id > ? AND ts >= ?", (scanned, cutoff)
        ).fetchone()[0]
        upto = newest if young is None else young - 1
        where += " AND id <= ? AND ts < ?"
        params += [upto, cutoff]
    else:
        keep = policy.keep_newest or 0
        if keep:
            row = conn.execute(
                "SELECT id FROM events WHERE content IS NOT NULL ORDER BY id DESC LIMIT 1 OFFSET ?",
                (keep - 1,),
            ).fetchone()
            upto = row[0] - 1 if row else 0
        else:
            upto = newest
        where += " AND id <= ?"
        params.append(upto)
    return where, params, max(upto, scanned)


def _newest(conn: sqlite3.Connection) -> Dictionary | None:
    row = conn.execute(
        "SELECT id, codec, data FROM text_dictionaries WHERE codec = ? ORDER BY id DESC LIMIT 1",
        (default_codec(),),
    ).fetchone()
    return Dictionary(int(row[0]), str(row[1]), bytes(row[2])) if row else None


def _train(conn: sqlite3.Connection, rows: list[tuple[int, str]]) -> Dictionary:
    step = max(1, len(rows) // MAX_SAMPLES)
    samples = rows[::step][:MAX_SAMPLES]
    codec, data = train([t for _, t in samples])
    cursor = conn.execute(
        "INSERT INTO text_dictionaries(codec, format, samples, trained_from, trained_upto,"
        " created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (codec, FORMAT_VERSION, len(samples), samples[0][0], samples[-1][0], utc_now(), data),
    )
    return Dictionary(int(cursor.lastrowid or 0), codec, data)


def retrain_after_erasure(codec: TextCodec, conn: sqlite3.Connection, erased: list[int]) -> int:
    """Inside an erasure's write transaction on ``conn``: when a dictionary was trained on
    an erased event, train a new one on the texts that remain, re-encode every text of the
    old dictionaries with it, and delete them (from the file and from ``codec``, the
    connection's). Returns how many texts were re-encoded."""
    stale: list[int] = []
    for dict_id, first, last in conn.execute(
        "SELECT id, trained_from, trained_upto FROM text_dictionaries"
    ).fetchall():
        if any(first <= e <= last for e in erased):
            stale.append(int(dict_id))
    if not stale:
        return 0
    using: list[tuple[int, str]] = []
    for event_id, value in conn.execute(
        "SELECT id, content FROM events WHERE typeof(content) = 'blob' ORDER BY id"
    ).fetchall():
        if dictionary_id(bytes(value)) in stale:
            using.append((int(event_id), codec.decode(bytes(value))))
    updates: list[tuple[bytes | str, int]] = []
    if len(using) >= MIN_SAMPLES:
        dictionary = _train(conn, using)
        codec.add(dictionary)
        for event_id, value in using:
            blob = codec.encode(value, dictionary)
            updates.append((value if blob is None else blob, event_id))
    else:  # too few texts left to train on: keep them plain
        updates = [(value, event_id) for event_id, value in using]
    conn.executemany("UPDATE events SET content = ? WHERE id = ?", updates)
    conn.executemany("DELETE FROM text_dictionaries WHERE id = ?", [(i,) for i in stale])
    for dict_id in stale:
        codec.dictionaries.pop(dict_id, None)
    return len(updates)
