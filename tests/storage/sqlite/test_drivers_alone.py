"""Each SQLite driver (compression, erasure, compaction, the rebased import's write) run
alone: on a real file migrated with the backend's schema and a bare connection that holds
what :mod:`pmm.storage.sqlite.handles` names, never an ``EventStore``. The chain is
appended by :func:`pmm.storage.sqlite.chains.append_locked` and checked afterwards with
:func:`pmm.events.rebase.verify_export`, both without the store."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import pmm.storage.sqlite
from pmm.errors import InvalidInputError
from pmm.events.chain import CheckedEvent, check_new_event
from pmm.events.rebase import verify_export
from pmm.records import Event, NewEvent, VerifyReport
from pmm.retention.compaction import COMPACTION_KIND
from pmm.retention.compression import CompressAfter
from pmm.retention.erasure import REDACTION_KIND, SUMMARIZES
from pmm.storage.sqlite import schema
from pmm.storage.sqlite.chains import ChainCache, append_locked, chain_keys
from pmm.storage.sqlite.compaction import compact, count_compacted
from pmm.storage.sqlite.compression import MIN_SAMPLES, compress_texts
from pmm.storage.sqlite.connection import WriteTransaction, open_connection
from pmm.storage.sqlite.erasure import forget
from pmm.storage.sqlite.imports import rebase_user
from pmm.storage.sqlite.rows import COLUMNS
from pmm.storage.sqlite.stored_text import StoredText

TOKEN = "quokkaberry"


class BareFile:
    """An open SQLite log without the store: a connection migrated to the schema, a lock,
    the connection's text codec and chain cache. Its full-text indexes are never built
    here (the store builds them from the rows as they are when it first searches), so a
    driver's index hooks have nothing of the erased text to take out of them: each checks
    that, then lets the rows change."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.max_content_bytes = 1_048_576
        self._conn = open_connection(self.path, 5.0)
        self._text = StoredText(self._conn)  # registers pmm_text and pmm_unhex first
        schema.migrate(self._conn, path)
        self._lock = threading.RLock()
        self._chains = ChainCache()

    def _write(self) -> WriteTransaction:
        return WriteTransaction(self._conn, self.path)

    def _check(self, entry: NewEvent) -> CheckedEvent:
        return check_new_event(entry, self.max_content_bytes)

    def _append_locked(self, conn: sqlite3.Connection, checked: list[CheckedEvent]) -> list[Event]:
        return append_locked(conn, self._chains, checked)

    def _unindexed(self, conn: sqlite3.Connection) -> None:
        upto = conn.execute(
            "SELECT (SELECT indexed_upto FROM fts_state), (SELECT indexed_upto FROM window_state)"
        ).fetchone()
        assert tuple(upto) == (0, 0), "this bare file's indexes are never built"

    def erase_search_terms(
        self,
        conn: sqlite3.Connection,
        placed: dict[str | None, list[int]],
        erase_text: Callable[[], object],
    ) -> None:
        self._unindexed(conn)
        erase_text()

    def rebuild_search_indexes(self, conn: sqlite3.Connection) -> None:
        self._unindexed(conn)

    # -- for the tests -----------------------------------------------------------------

    def append(self, entries: list[NewEvent]) -> list[Event]:
        with self._lock, self._write() as conn:
            return self._append_locked(conn, [self._check(e) for e in entries])

    def rows(self, where: str = "1", params: tuple[object, ...] = ()) -> list[Event]:
        found = self._conn.execute(
            f"SELECT {COLUMNS} FROM events WHERE {where} ORDER BY id", params
        ).fetchall()
        return [self._text.event(r) for r in found]

    def verified(self) -> VerifyReport:
        """The whole log verified as its rows and chain secrets are, without the store."""
        return verify_export(self.rows(), chain_keys(self._conn))

    def close(self) -> None:
        self._conn.close()


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[BareFile]:
    file = BareFile(tmp_path / "bare.db")
    try:
        yield file
    finally:
        file.close()


def _turns(session: str, user: str | None, n: int, start: int = 0) -> list[NewEvent]:
    return [
        NewEvent(
            "prompt" if i % 2 == 0 else "response",
            f"Turn {i} of {session}: we spoke about the harbour in Bergen, the ferry times "
            f"and the weather on the fjord, which was grey again, number {i * 7}.",
            session,
            "user" if i % 2 == 0 else "assistant",
            None,
            None,
            user,
        )
        for i in range(start, start + n)
    ]


def _file_bytes(path: str) -> bytes:
    return b"".join(
        Path(path + suffix).read_bytes() for suffix in ("", "-wal") if Path(path + suffix).exists()
    )


def test_the_store_class_is_not_needed(bare: BareFile) -> None:
    """What the drivers run on here is no store: the proof that each test below runs its
    driver alone."""
    assert not isinstance(bare, pmm.storage.sqlite.EventStore)


def test_compress_texts_alone(bare: BareFile) -> None:
    appended = bare.append(_turns("s1", None, MIN_SAMPLES + 4))
    report = compress_texts(bare, CompressAfter(keep_newest=2))  # all but the 2 newest
    assert report.compressed == len(appended) - 2 and report.trained
    assert report.bytes_after < report.bytes_before
    stored = dict(bare._conn.execute("SELECT id, typeof(content) FROM events").fetchall())
    assert [stored[e.id] for e in appended] == ["blob"] * (len(appended) - 2) + ["text"] * 2
    assert bare._conn.execute("SELECT count(*) FROM text_dictionaries").fetchone()[0] == 1
    assert [e.content for e in bare.rows()] == [e.content for e in appended]  # lossless
    assert bare.verified().ok


def test_forget_a_session_alone(bare: BareFile) -> None:
    alice = bare.append(_turns("alice", "alice", 3))
    secret = bare.append(
        [NewEvent("prompt", f"my passport is in the {TOKEN} jar", "alice", "user", None, None)]
    )[0]
    bob = bare.append(_turns("bob", "bob", 3))
    with bare._write() as conn:
        conn.execute(
            "INSERT INTO embeddings(event_id, model, dim, vector) VALUES (?, 'm', 1, x'00')",
            (secret.id,),
        )
        conn.execute(
            "INSERT INTO edges(src, dst, kind) VALUES (?, ?, 'NEXT')", (alice[0].id, secret.id)
        )
        conn.execute(
            "INSERT INTO edges(src, dst, kind) VALUES (?, ?, 'NEXT')", (bob[0].id, bob[1].id)
        )
    assert TOKEN.encode() in _file_bytes(bare.path)

    report = forget(bare, session_id="alice", reason="asked to")

    erased = [e.id for e in [*alice, secret]]
    assert report.erased == erased and report.wal_truncated
    [marker] = report.markers
    assert (marker.kind, marker.session_id, marker.user_id) == (REDACTION_KIND, "alice", "alice")
    for e in bare.rows("session_id = 'alice' AND kind <> ?", (REDACTION_KIND,)):
        assert (e.content, e.summary, e.digest_method) == (None, None, "redacted")
    assert [e.content for e in bare.rows("session_id = 'bob'")] == [e.content for e in bob]
    assert bare._conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0
    assert bare._conn.execute("SELECT src, dst FROM edges").fetchall() == [(bob[0].id, bob[1].id)]
    assert TOKEN.encode() not in _file_bytes(bare.path)  # scrubbed: VACUUM + TRUNCATE
    assert bare.verified().ok


def test_forget_a_user_with_her_identifiers_alone(bare: BareFile) -> None:
    ana = bare.append(_turns("ana-1", "ana", 2) + _turns("ana-2", "ana", 2))
    bob = bare.append(_turns("bob", "bob", 2))
    assert [k for k, _ in chain_keys(bare._conn)].count("ana") == 1

    report = forget(
        bare, event_ids=[e.id for e in ana], reason="account deleted", identifiers_of="ana"
    )

    assert report.erased == [e.id for e in ana]
    assert all(m.user_id is None and m.session_id is None for m in report.markers)
    assert bare.rows("user_id = 'ana' OR session_id LIKE 'ana-%'") == []
    assert "ana" not in [k for k, _ in chain_keys(bare._conn)]  # her chain's secret went
    assert [e.content for e in bare.rows("user_id = 'bob'")] == [e.content for e in bob]
    assert b"ana-1" not in _file_bytes(bare.path)


def test_forget_retrains_the_compression_dictionary_alone(bare: BareFile) -> None:
    secrets = bare.append(  # the dictionary is trained on these: it holds the secret
        [
            NewEvent(
                "prompt",
                f"the spare key is under the {TOKEN} pot; I wrote it down on day {i} so that "
                "I would not forget where it was",
                "s1",
                "user",
            )
            for i in range(2 * MIN_SAMPLES)
        ]
    )
    turns = bare.append(_turns("s2", None, MIN_SAMPLES))
    compress_texts(bare, CompressAfter(keep_newest=0))
    [(old, data)] = bare._conn.execute("SELECT id, data FROM text_dictionaries").fetchall()
    assert TOKEN.encode() in bytes(data)

    report = forget(bare, match=TOKEN, reason="asked to")  # matched in the compressed texts

    assert report.erased == [e.id for e in secrets]
    dictionaries = bare._conn.execute("SELECT id, data FROM text_dictionaries").fetchall()
    assert len(dictionaries) == 1 and dictionaries[0][0] != old
    assert TOKEN.encode() not in bytes(dictionaries[0][1])
    assert old not in bare._text.codec.dictionaries
    kept = {e.id: e.content for e in bare.rows("session_id = 's2'")}
    assert [kept[e.id] for e in turns] == [e.content for e in turns]  # re-encoded, lossless
    assert TOKEN.encode() not in _file_bytes(bare.path)
    assert bare.verified().ok


def test_compact_alone(bare: BareFile) -> None:
    old = bare.append(_turns("s1", None, 4))
    undigested = bare.append(_turns("s1", None, 1, start=4))[0]
    with bare._write() as conn:
        conn.executemany(
            "UPDATE events SET summary = ?, digest_method = 'heuristic' WHERE id = ?",
            [(f"summary of turn {e.id}", e.id) for e in old],
        )
        conn.execute(
            "INSERT INTO edges(src, dst, kind) VALUES (?, ?, ?)", (old[1].id, old[0].id, SUMMARIZES)
        )
    later = datetime.now(UTC) + timedelta(days=2)

    plan = compact(bare, older_than="1d", now=later, dry_run=True)
    assert plan.compacted == [e.id for e in old] and plan.marker is None
    assert count_compacted(bare) == 0  # the dry run wrote nothing
    report = compact(bare, older_than="1d", now=later)

    assert report.compacted == [e.id for e in old]
    assert report.marker is not None and report.marker.kind == COMPACTION_KIND
    assert report.raw_bytes == sum(len(e.content.encode("utf-8")) for e in old if e.content)
    rows = {e.id: e for e in bare.rows()}
    assert all(rows[e.id].content is None and rows[e.id].summary for e in old)
    assert rows[undigested.id].content == undigested.content  # no digest: its text stays
    assert count_compacted(bare) == len(old)
    assert bare._conn.execute("SELECT count(*) FROM edges").fetchone()[0] == 1  # kept
    assert bare.verified().ok


def _export(tmp_path: Path, user: str) -> tuple[list[Event], list[tuple[str, bytes]]]:
    """One user's events and chain secret, as ``pmm export --user`` writes them, from a
    second bare file."""
    source = BareFile(tmp_path / "source.db")
    try:
        source.append(_turns("src-other", "zoe", 2))
        source.append(_turns(f"{user}-1", user, 3) + _turns(f"{user}-2", user, 2))
        return source.rows("user_id = ?", (user,)), chain_keys(source._conn, user)
    finally:
        source.close()


def test_rebase_user_alone(bare: BareFile, tmp_path: Path) -> None:
    events, keys = _export(tmp_path, "ana")
    there = bare.append(_turns("bob-1", "bob", 3))

    user, appended = rebase_user(bare, events, keys)

    assert user == "ana"
    newest = there[-1].id
    assert [e.id for e in appended] == list(range(newest + 1, newest + len(events) + 2))
    assert [e.content for e in appended if e.kind in ("prompt", "response")] == [
        e.content for e in events
    ]
    stored = bare.rows("user_id = 'ana'")
    assert [e.id for e in stored] == [e.id for e in appended]
    assert {e.session_id for e in stored} >= {"ana-1", "ana-2"}
    assert bare.verified().ok

    count = len(bare.rows())
    with pytest.raises(InvalidInputError):
        rebase_user(bare, events, keys)  # she is there now: refused, nothing written
    assert len(bare.rows()) == count
