"""How the SQLite log stores digests and text, and the SQL functions that read them back.

    text = StoredText(conn)            # registers pmm_text() and pmm_unhex() on conn
    event = text.event(row)            # a rows.COLUMNS row -> Event (hex digests, plain text)
    pack_digest("9f86d0...")           # -> 32 bytes, as the digest columns hold it

Digests: ``content_sha256``, ``prev_hash`` and ``hash`` hold the 32 bytes of each SHA-256
(migrations/0008); an :class:`~pmm.records.Event` shows them as 64 hex digits, and the chain
rule hashes that hex text, as before. A value that is not 64 lower-case hex digits (only a
damaged or foreign legacy row has one) is kept as it was, so export and import give back
exactly what was stored.

Text: a turn compressed by :mod:`pmm.storage.sqlite.compression` keeps its text in
``content`` as a BLOB (:mod:`pmm.storage.text_codec`'s format; migrations/0009), so ``content IS NOT
NULL`` still means "has text". Python reads decode it here; SQL (the full-text view, its
triggers, window keys) calls ``pmm_text(content)``, which every connection of the store
registers. Dictionaries are read from ``text_dictionaries`` once and kept (a dictionary
never changes: a new version gets a new id).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any

from pmm.records import Event, event_from_row
from pmm.storage.text_codec import Dictionary, TextCodec

_HEX64 = re.compile(r"[0-9a-f]{64}")


def pack_digest(value: str | None) -> bytes | str | None:
    """A hex SHA-256 as the 32 bytes stored; anything else unchanged."""
    if value is not None and len(value) == 64 and _HEX64.fullmatch(value):
        return bytes.fromhex(value)
    return value


def unpack_digest(value: bytes | str | None) -> str | None:
    """A stored digest as hex text (the form events and the chain rule use)."""
    return value.hex() if isinstance(value, bytes) else value


def _sql_unhex(value: Any) -> Any:
    return pack_digest(value) if isinstance(value, str) else value


TEXT_SQL = "CASE WHEN typeof(content) = 'blob' THEN pmm_text(content) ELSE content END"
"""The ``content`` column as text in SQL: only compressed (BLOB) rows call into Python."""


class StoredText:
    """Decodes one connection's stored digests and texts (see the module docstring)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.codec = TextCodec(load=self._load)
        conn.create_function("pmm_text", 1, self.text, deterministic=True)
        conn.create_function("pmm_unhex", 1, _sql_unhex, deterministic=True)

    def _load(self, dict_id: int) -> Dictionary | None:
        row = self._conn.execute(
            "SELECT id, codec, data FROM text_dictionaries WHERE id = ?", (dict_id,)
        ).fetchone()
        return Dictionary(int(row[0]), str(row[1]), bytes(row[2])) if row else None

    def text(self, value: str | bytes | None) -> str | None:
        """A ``content`` value as text (a compressed one decoded)."""
        if isinstance(value, bytes):
            return self.codec.decode(value)
        return value

    def event(self, row: Sequence[Any]) -> Event:
        """An :class:`Event` from a row of ``rows.COLUMNS``."""
        fields = list(row)
        if isinstance(fields[5], bytes):
            fields[5] = self.codec.decode(fields[5])
        for i in (6, 8, 9, 15, 16):
            if i < len(fields) and isinstance(fields[i], bytes):
                fields[i] = fields[i].hex()
        return event_from_row(fields)
