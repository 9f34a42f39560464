"""One behaviour suite for every storage backend: SQLite files, PostgreSQL databases and
any backend outside PMM must append, read, search, redact, import and verify alike."""

from __future__ import annotations

import struct

import pytest

from pmm.errors import EventNotFoundError, InvalidInputError
from pmm.records import NewEvent
from pmm.storage.base import EventLog
from pmm.testing.backend import SqlRunner
from pmm.testing.fixtures import *  # noqa: F403


def _chat(log: EventLog) -> list[int]:
    events = log.append_many(
        [
            NewEvent("prompt", "I moved to Lisbon last spring", "alice", "user"),
            NewEvent("response", "Lisbon is lovely in May!", "alice", "assistant"),
            NewEvent("prompt", "My dog Rex loves the beach", "bob", "user", {"n": 1}),
            NewEvent("response", "Rex sounds like a happy dog.", "bob", "assistant"),
        ]
    )
    return [e.id for e in events]


def test_the_store_implements_the_protocol(log: EventLog) -> None:
    assert isinstance(log, EventLog)


def test_appends_chain_and_read_back_alike(log: EventLog) -> None:
    ids = _chat(log)
    assert ids == [1, 2, 3, 4]
    first, second = log.get(1), log.get(2)
    assert first.prev_hash is None and second.prev_hash == first.hash
    assert log.get(3).meta == {"n": 1}
    assert [e.id for e in log.events(session_id="bob")] == [3, 4]
    assert [e.id for e in log.events(kinds=["prompt"], newest_first=True, limit=1)] == [3]
    assert [e.id for e in log.events(after_id=1, before_id=4)] == [2, 3]
    assert [r.id for r in log.turn_rows(session_id="alice")] == [2, 1]
    assert log.head() is not None and log.head().id == 4  # type: ignore[union-attr]
    assert log.count() == 4 and log.count(session_id="alice", kinds=["prompt"]) == 1
    assert log.last_id(session_id="alice") == 2
    assert log.event_ids(kinds=["response"]) == [2, 4]
    assert sorted(log.get_many([4, 1, 99])) == [1, 4]
    assert [e.id for e in log.iter_events(batch=3)] == ids
    report = log.verify(expect_head=log.get(4).hash)
    assert report.ok and report.rows == 4 and report.head_id == 4
    with pytest.raises(EventNotFoundError):
        log.get(99)


def test_bad_input_is_refused_and_nothing_is_stored(log: EventLog) -> None:
    with pytest.raises(InvalidInputError, match="NUL"):
        log.append("prompt", "a\x00b")
    with pytest.raises(InvalidInputError, match="str"):
        log.append_many([NewEvent("prompt", "fine"), NewEvent("prompt", 42)])  # type: ignore[arg-type]
    assert log.count() == 0


def test_verify_catches_an_edited_text_and_a_deleted_row(
    log: EventLog, log_target: str, raw_sql: SqlRunner
) -> None:
    _chat(log)
    raw_sql(log_target, "UPDATE events SET content = 'I moved to Porto' WHERE id = 1")
    report = log.verify()
    assert not report.ok and report.first_bad_id == 1 and "text was edited" in str(report.reason)
    raw_sql(log_target, "UPDATE events SET content = 'I moved to Lisbon last spring'")
    raw_sql(log_target, "DELETE FROM events WHERE id = 2")
    report = log.verify()
    assert not report.ok and report.first_bad_id == 3 and "prev_hash" in str(report.reason)


def test_a_pinned_head_that_was_cut_off_fails(
    log: EventLog, log_target: str, raw_sql: SqlRunner
) -> None:
    _chat(log)
    head = log.get(4).hash
    raw_sql(log_target, "DELETE FROM events WHERE id = 4")
    report = log.verify(expect_head=head)
    assert not report.ok and "pinned head" in str(report.reason)


def test_digests_vectors_and_edges(log: EventLog) -> None:
    _chat(log)
    assert log.count_undigested(kinds=["prompt", "response"]) == 4
    assert log.set_digests([(1, "Alice moved to Lisbon.", ["lisbon", "move"], "heuristic")]) == 1
    assert [e.id for e in log.undigested(kinds=["prompt", "response"])] == [2, 3, 4]
    event = log.get(1)
    assert event.summary == "Alice moved to Lisbon." and event.keywords == ["lisbon", "move"]
    blob = struct.pack("3f", 0.1, 0.2, 0.3)
    assert log.put_embeddings("m", 3, [(1, blob), (2, blob)]) == 2
    assert log.put_embeddings("m", 3, [(1, blob)]) == 1  # replaced, not duplicated
    assert log.embeddings("m") == [(1, blob), (2, blob)]
    assert log.embeddings("m", after_id=1) == [(2, blob)]
    assert log.embeddings_of("m", [2, 4, 1]) == [(1, blob), (2, blob)]  # 4 has none
    assert log.embeddings_of("m", []) == [] and log.embeddings_of("other", [1]) == []
    assert log.embedding_models() == {"m": 2}
    log.add_edges([(1, 2, "SUMMARIZES"), (1, 3, "SUMMARIZES"), (1, 2, "SUMMARIZES")])
    assert log.edges_from(1, "SUMMARIZES") == [2, 3]


def test_keyword_search_is_plain_words_and_scoped(log: EventLog) -> None:
    _chat(log)
    hits = log.search_text("Where is Lisbon?", session_id="alice")
    assert {i for i, _ in hits} == {1, 2} and all(score > 0 for _, score in hits)
    assert [i for i, _ in log.search_text("dog", session_id="bob", kinds=["prompt"])] == [3]
    assert log.search_text("beach", session_id="alice") == []
    for nasty in ['"unbalanced', "a AND (b OR", "rex*", "NEAR(x y)", "'; DROP TABLE events;--"]:
        log.search_text(nasty)  # searched as words, never as syntax
    assert log.count() == 4


def test_document_frequencies_count_the_events_holding_each_word(log: EventLog) -> None:
    log.append_many(
        [NewEvent("prompt", f"Coffee number {n} at work", "s", "user") for n in range(12)]
        + [NewEvent("prompt", "My violin teacher moved", "s", "user")]
    )
    log.sync_search_index()
    df = log.document_frequencies(["coffee", "violin", "kangaroo", '"AND*'])
    assert set(df) == {"coffee", "violin", "kangaroo", '"AND*'}
    # PostgreSQL estimates from pg_stats (a rare word may read 0): compare, do not pin
    assert 8 <= df["coffee"] <= 13 and df["coffee"] > df["violin"] >= 0
    assert df["kangaroo"] == df['"AND*'] == 0
    assert log.document_frequencies([]) == {}
    with pytest.raises(InvalidInputError, match="iterable of str"):
        log.document_frequencies("coffee")


def test_redaction_erases_text_and_keeps_the_chain(log: EventLog) -> None:
    _chat(log)
    log.set_digests([(3, "Bob's dog Rex loves the beach.", ["rex"], "heuristic")])
    log.put_embeddings("m", 1, [(3, struct.pack("f", 1.0))])
    marker = log.redact(3, reason="user asked")
    assert marker.kind == "redaction" and marker.meta == {"target": 3, "reason": "user asked"}
    erased = log.get(3)
    assert erased.content is None and erased.summary is None and erased.keywords == []
    assert log.embeddings("m") == []
    hits = log.search_text("Rex beach")
    assert [i for i, _ in hits] == [4] and hits[0][1] == pytest.approx(log.search_text("Rex")[0][1])
    assert log.verify().ok
    with pytest.raises(EventNotFoundError):
        log.redact(3, reason="again")


def test_stats_count_what_is_there(log: EventLog) -> None:
    _chat(log)
    stats = log.stats()
    assert stats["events"] == 4 and stats["by_session"] == {"alice": 2, "bob": 2}
    assert stats["with_text"] == 4 and stats["digested"] == 0 and stats["bytes_on_disk"] > 0


def test_content_and_digest_keys_search_their_own_fields(log: EventLog) -> None:
    a = log.append("prompt", "We walked along the harbour at dusk", session_id="s", role="user")
    b = log.append("prompt", "Booked a table for Friday", session_id="s", role="user")
    log.set_digests([(b.id, "Dinner at the harbour restaurant", ["harbour", "dinner"], "test")])
    assert sorted(i for i, _ in log.search_text("harbour")) == [a.id, b.id]
    assert [i for i, _ in log.search_text("harbour", key="content")] == [a.id]
    assert [i for i, _ in log.search_text("harbour", key="digest")] == [b.id]
    assert [i for i, _ in log.search_text("Friday table", key="content")] == [b.id]
    assert log.search_text("Friday table", key="digest") == []
    assert log.search_text("it's a back\\slash harbour", key="digest")[0][0] == b.id
