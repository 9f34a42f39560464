"""verify() catches every edit made behind the store's back (raw sqlite3 on the file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import filled_store, raw

from pmm.events.hashing import canonical_json, chain_payload_v3, legacy_hash, sha256_hex
from pmm.records import VerifyReport
from pmm.storage.sqlite import EventStore

N = 8


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "pmm.db"
    with filled_store(path, N) as store:
        assert store.verify().ok
    return path


def verify(path: Path, **kwargs: object) -> VerifyReport:
    with EventStore(path) as store:
        return store.verify(**kwargs)  # type: ignore[arg-type]


def assert_bad(report: VerifyReport, first_bad_id: int | None, *reason_words: str) -> None:
    assert not report.ok, report
    assert report.first_bad_id == first_bad_id, report
    assert report.reason, report
    for word in reason_words:
        assert word in report.reason, report.reason


def row(conn, event_id: int) -> dict[str, object]:
    cursor = conn.execute("SELECT * FROM events WHERE id = ?", (event_id,))
    names = [d[0] for d in cursor.description]
    found = dict(zip(names, cursor.fetchone(), strict=True))
    # Digests are stored as their 32 bytes (migrations/0008); the chain rule hashes hex.
    return {k: v.hex() if isinstance(v, bytes) else v for k, v in found.items()}


def rehash(r: dict[str, object]) -> str:
    """The version-3 hash of a row as stored (its keyed digests included)."""
    return sha256_hex(
        chain_payload_v3(
            ts=r["ts"],
            kind=r["kind"],
            role=r["role"],
            content_sha256=r["content_sha256"],
            meta_json=r["meta"],
            prev_hash=r["prev_hash"],
            user_digest=r["user_digest"],
            session_digest=r["session_digest"],
        )
    )


def test_edited_content(db: Path):
    with raw(db) as conn:
        conn.execute("UPDATE events SET content = 'I never said that' WHERE id = 4")
    assert_bad(verify(db), 4, "content")


def test_edited_content_with_matching_content_sha256(db: Path):
    with raw(db) as conn:
        conn.execute(
            "UPDATE events SET content = ?, content_sha256 = ? WHERE id = 4",
            ("forged", sha256_hex("forged")),
        )
    assert_bad(verify(db), 4, "hash does not match")


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("meta", '{"i":999}'),
        ("meta", '{"i": 4}'),  # the same meta, spaced differently
        ("kind", "event"),
        ("ts", "2020-01-01T00:00:00.000000Z"),
        ("session_id", "mallory"),
        ("role", "system"),
        ("role", None),
    ],
)
def test_edited_chained_column(db: Path, column: str, value: object):
    with raw(db) as conn:
        conn.execute(f"UPDATE events SET {column} = ? WHERE id = 4", (value,))
    # the hash covers the session's keyed digest, which no longer matches the stored id
    assert_bad(verify(db), 4, "session is not" if column == "session_id" else "hash does not")


def test_edited_hash(db: Path):
    with raw(db) as conn:
        conn.execute("UPDATE events SET hash = ? WHERE id = 3", ("0" * 64,))
    assert_bad(verify(db), 3, "hash")


def test_deleted_middle_row(db: Path):
    with raw(db) as conn:
        conn.execute("DELETE FROM events WHERE id = 5")
    # the walk stops at row 6; the reason names the removal and says row 6 is intact
    assert_bad(verify(db), 6, "between id 4 and id 6", "row at id 6 is intact")


def test_deleted_first_row(db: Path):
    with raw(db) as conn:
        conn.execute("DELETE FROM events WHERE id = 1")
    assert_bad(verify(db), 2, "starts at id 2", "removed from the start")


def test_swapped_rows_contents_and_hashes(db: Path):
    with raw(db) as conn:
        a, b = row(conn, 3), row(conn, 4)
        columns = [c for c in a if c != "id"]
        sets = ", ".join(f"{c} = ?" for c in columns)
        conn.execute(f"UPDATE events SET {sets} WHERE id = 3", [b[c] for c in columns])
        conn.execute(f"UPDATE events SET {sets} WHERE id = 4", [a[c] for c in columns])
    assert_bad(verify(db), 3)


def test_swapped_ids(db: Path):
    with raw(db) as conn:
        conn.execute("UPDATE events SET id = -1 WHERE id = 3")
        conn.execute("UPDATE events SET id = 3 WHERE id = 4")
        conn.execute("UPDATE events SET id = 4 WHERE id = -1")
    assert_bad(verify(db), 3, "prev_hash")


def test_a_renumbered_row_keeps_its_hash_but_not_its_place(db: Path):
    # Version 3 does not hash the id (a chain keeps its hashes when imported elsewhere):
    # a row given another id keeps verifying while its chain's order holds...
    with raw(db) as conn:
        conn.execute("UPDATE events SET id = 100 WHERE id = ?", (N,))
    assert verify(db).ok
    # ...and a row moved before its predecessor breaks the links.
    with raw(db) as conn:
        conn.execute("UPDATE events SET id = 0 WHERE id = 100")
    assert_bad(verify(db), 0, "prev_hash")


def test_forged_row_with_correct_hash_breaks_its_successor(db: Path):
    with raw(db) as conn:
        r = row(conn, 5)
        r["content"] = "forged but well hashed"
        r["content_sha256"] = sha256_hex(r["content"])
        r["hash"] = rehash(r)
        conn.execute(
            "UPDATE events SET content = ?, content_sha256 = ?, hash = ? WHERE id = 5",
            (r["content"], r["content_sha256"], r["hash"]),
        )
    # row 5 itself verifies; row 6 still points at the old hash, which no row holds now
    assert_bad(verify(db), 6, "between id 5 and id 6", "row at id 5 was rewritten")


def test_rewritten_tail_is_caught_by_a_pinned_head(db: Path):
    with EventStore(db) as store:
        pinned = store.head().hash
    with raw(db) as conn:
        prev = row(conn, 4)["hash"]
        for event_id in range(5, N + 1):
            r = row(conn, event_id)
            if event_id == 5:
                r["content"] = "rewritten history"
                r["content_sha256"] = sha256_hex(r["content"])
            r["prev_hash"] = prev
            r["hash"] = rehash(r)
            conn.execute(
                "UPDATE events SET content = ?, content_sha256 = ?, prev_hash = ?, hash = ?"
                " WHERE id = ?",
                (r["content"], r["content_sha256"], r["prev_hash"], r["hash"], event_id),
            )
            prev = r["hash"]
    # the re-chained tail does not end at the head the store recorded...
    assert_bad(verify(db), N, "recorded head", "rewritten")
    with raw(db) as conn:  # ...and one who rewrites that too is seen only against a pin
        conn.execute("UPDATE chains SET head_hash = ?", (bytes.fromhex(str(prev)),))
    assert verify(db).ok
    report = verify(db, expect_head=pinned)
    assert not report.ok and report.reason and "pinned head" in report.reason


def test_truncated_end(db: Path):
    with EventStore(db) as store:
        old_head = store.head().hash
        keep_head = store.get(N - 2).hash
        assert store.verify(expect_head=old_head).ok
    with raw(db) as conn:
        conn.execute("DELETE FROM events WHERE id > ?", (N - 2,))
    cut = f"ends at id {N - 2} but its recorded head is {N}: events were removed from its end"
    assert_bad(verify(db), None, cut)
    report = verify(db, expect_head=old_head)
    assert not report.ok
    assert report.reason and cut in report.reason
    assert old_head in report.reason and "cut back" in report.reason
    with raw(db) as conn:  # the recorded head set back too: only a pin sees the cut
        conn.execute(
            "UPDATE chains SET head_id = ?, head_hash = ?", (N - 2, bytes.fromhex(keep_head))
        )
    inside = verify(db)
    assert inside.ok and inside.rows == N - 2 and inside.head == keep_head
    report = verify(db, expect_head=old_head)
    assert not report.ok and report.reason and "cut back" in report.reason
    # an earlier pinned head that is still there is fine
    assert verify(db, expect_head=keep_head).ok


def test_legacy_row_after_v3_rows_is_rejected(db: Path):
    with raw(db) as conn:
        head = row(conn, N)
        content, meta = "User said: sneaky", "{}"
        conn.execute(
            "INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,"
            " prev_hash, hash, hash_version) VALUES (?,?,?,?,?,?,?,?,?,?,0)",
            (
                N + 1,
                "2020-01-01T00:00:00",
                "prompt",
                "default",
                None,
                content,
                sha256_hex(content),
                meta,
                head["hash"],
                legacy_hash(head["hash"], "prompt", content, meta),
            ),
        )
    assert_bad(verify(db), N + 1, "hash_version 0")


def test_v3_row_downgraded_to_legacy_is_rejected(db: Path):
    with raw(db) as conn:
        r = row(conn, 4)
        conn.execute(
            "UPDATE events SET hash_version = 0, hash = ? WHERE id = 4",
            (legacy_hash(r["prev_hash"], r["kind"], r["content"], r["meta"]),),
        )
    assert_bad(verify(db), 4, "hash_version")


def test_unknown_hash_version_is_rejected(db: Path):
    with raw(db) as conn:
        conn.execute("UPDATE events SET hash_version = 4 WHERE id = 2")
    assert_bad(verify(db), 2, "hash_version 4")


def test_a_row_relabelled_as_an_older_version_does_not_verify(db: Path):
    # every version-3 row comes after the rows of versions 0-2
    with raw(db) as conn:
        conn.execute("UPDATE events SET hash_version = 2 WHERE id = 2")
    assert_bad(verify(db), 2, "hash_version 2")


def test_only_the_first_bad_row_is_reported(db: Path):
    with raw(db) as conn:
        conn.execute("UPDATE events SET content = 'x' WHERE id = 6")
        conn.execute("UPDATE events SET content = 'y' WHERE id = 3")
    report = verify(db)
    assert_bad(report, 3, "content")
    assert report.rows == 3


def test_redaction_is_not_tampering_but_editing_after_it_is(db: Path):
    with EventStore(db) as store:
        store.redact(2, reason="user asked")
        assert store.verify().ok
    with raw(db) as conn:
        meta = canonical_json({"i": 2, "x": 1})
        conn.execute("UPDATE events SET meta = ? WHERE id = 2", (meta,))
    assert_bad(verify(db), 2, "hash does not match")
