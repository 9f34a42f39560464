"""forget and compact on every backend, and at the byte level on PostgreSQL: after an
erasure the erased words leave the database's data files (base/); PostgreSQL's WAL keeps
them until its segments are recycled and overwritten, which a CHECKPOINT does not do."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_cluster import PostgresCluster
from pg_partitions import holding

from pmm import Mind
from pmm.errors import EventNotFoundError, InvalidInputError
from pmm.retention.compaction import check_compaction

SECRET = (
    "Note for later: my passport number is ZX9912345Q and I keep the passport in the blue "
    "drawer under the quokkaberry jar, next to the spare keys of the garage."
)
TOKENS = ("ZX9912345Q", "zx9912345q", "quokkaberry")
FILLER = [
    f"Turn {i}: we talked about the weather in Oslo, the train to Bergen and the football "
    f"results of the weekend, number {i * 7}, and nothing else of note happened."
    for i in range(24)
]


def _embedder() -> Any:
    spec = importlib.util.spec_from_file_location(
        "embed_conftest", Path(__file__).parents[2] / "embed" / "conftest.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("embed_conftest", module)
    spec.loader.exec_module(module)
    return module.WordHashEmbedder()


@pytest.fixture
def mind(log_target: str) -> Iterator[Mind]:
    with Mind(
        log_target,
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        enable_embeddings=True,
        embedder=_embedder(),
        summary_min_chars=40,
        session_summaries=False,
        detect_contradictions=False,
    ) as m:
        yield m


def fill(mind: Mind) -> int:
    for i, text in enumerate(FILLER[:12]):
        mind.remember_turn(text, FILLER[i + 12], session_id="alice" if i % 2 else "bob")
    secret = mind.remember(SECRET, role="user", session_id="alice").id
    mind.remember("Noted, I will remember where it is.", role="assistant", session_id="alice")
    mind.dream()
    return secret


def window_ids(mind: Mind, query: str) -> set[int]:
    return {i for i, _ in mind.store.search_text(query, key="window", limit=100)}


def test_forget_by_match_erases_every_trace_and_the_chain_verifies(mind: Mind) -> None:
    secret = fill(mind)
    assert mind.recall("passport drawer", k=3, session_id="alice")[0].event.id == secret
    neighbours = window_ids(mind, "quokkaberry") - {secret}
    assert neighbours  # the turns around it hold it in their window keys
    rows = mind.store.count()

    report = mind.forget(match="zx9912345q", reason="user asked")

    assert report.erased == [secret] and report.derived == []
    gone = mind.store.get(secret)
    assert (gone.content, gone.summary, gone.keywords, gone.digest_method) == (
        None, None, [], "redacted"
    )  # fmt: skip
    (marker,) = report.markers
    assert marker.kind == "redaction" and marker.session_id == "alice"
    assert marker.meta == {"target": secret, "reason": "user asked"}
    assert mind.store.count() == rows + 1 and mind.verify().ok
    for query in ("quokkaberry", "ZX9912345Q passport drawer"):
        assert mind.store.search_text(query, key="turn") == []
        assert not window_ids(mind, query) & ({secret} | neighbours)
    assert window_ids(mind, "Oslo weather") >= neighbours  # the neighbours keep their keys
    assert secret not in mind.store.embedding_models() and secret not in {
        i for i, _ in mind.store.embeddings(_embedder().model_name)
    }
    hits = mind.recall("passport drawer quokkaberry", k=50, session_id="alice", mode="hybrid")
    assert secret not in [h.event.id for h in hits]
    again = mind.forget(session_id="alice", reason="account deleted")
    assert marker.id in again.skipped and secret in again.erased and mind.verify().ok
    assert window_ids(mind, "Oslo weather") == set(mind.store.event_ids(session_id="bob"))


def test_session_summaries_built_from_erased_turns_go_too(log: Any) -> None:
    turn = log.append("prompt", SECRET, session_id="s", role="user")
    other = log.append("prompt", FILLER[0], session_id="s", role="user")
    node = log.append("summary", "Alice keeps her passport in a drawer.", session_id="s")
    log.add_edges([(node.id, turn.id, "SUMMARIZES"), (node.id, other.id, "SUMMARIZES")])
    report = log.forget(event_ids=[turn.id], reason="user asked")
    assert report.erased == [turn.id, node.id] and report.derived == [node.id]
    assert log.get(node.id).content is None and log.edges_from(node.id, "SUMMARIZES") == []
    assert log.get(other.id).content == FILLER[0] and log.verify().ok


def test_several_sessions_go_in_one_request_with_one_rewrite(
    mind: Mind, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pmm.storage.postgres.erasure as pg_erasure
    import pmm.storage.sqlite.erasure as sqlite_erasure

    fill(mind)
    mind.remember_turn("carol's own note about kayaks", "Noted, kayaks.", session_id="carol")
    mind.dream()
    rewrites: list[str] = []
    real_rewrite, real_scrub = pg_erasure.rewrite, sqlite_erasure.scrub

    def counted_rewrite(db: Any, shards: Any = pg_erasure.ALL_SHARDS, *, pause: float = 0) -> None:
        rewrites.append("tables")
        real_rewrite(db, shards, pause=pause)

    def counted_scrub(store: Any) -> bool:
        rewrites.append("file")
        return real_scrub(store)

    monkeypatch.setattr(pg_erasure, "rewrite", counted_rewrite)
    monkeypatch.setattr(sqlite_erasure, "scrub", counted_scrub)
    ids = sorted(mind.store.event_ids(session_id="alice") + mind.store.event_ids(session_id="bob"))
    carol = mind.store.event_ids(session_id="carol")

    report = mind.forget(session_ids=["alice", "bob"], reason="account deleted")

    assert len(rewrites) == 1
    assert report.erased == ids
    assert sorted(m.session_id or "" for m in report.markers) == ["alice", "bob"]
    assert mind.recall("quokkaberry", k=5, mode="keyword") == []
    assert mind.recall("weather Oslo", k=5, mode="keyword") == []
    assert window_ids(mind, "quokkaberry") == set() and window_ids(mind, "oslo") == set()
    assert [h.event.id for h in mind.recall("kayaks", k=5, mode="keyword")] and all(
        mind.store.get(i).content for i in carol
    )
    assert mind.verify().ok
    with pytest.raises(InvalidInputError):
        mind.forget(session_ids="carol", reason="r")  # type: ignore[arg-type]


def test_bad_requests_change_nothing(log: Any) -> None:
    first = log.append("prompt", SECRET, session_id="s", role="user")
    head = log.head()
    for kwargs in ({"reason": "x"}, {"event_ids": [first.id], "reason": " "},
                   {"event_ids": ["1"], "reason": "r"}, {"session_id": "", "reason": "r"},
                   {"match": " ", "reason": "r"}):  # fmt: skip
        with pytest.raises(InvalidInputError):
            log.forget(**kwargs)
    with pytest.raises(EventNotFoundError, match="99999"):
        log.forget(event_ids=[first.id, 99999], reason="r")
    with pytest.raises(EventNotFoundError, match="nothing to forget"):
        log.forget(match="no such words", reason="r")
    with pytest.raises(InvalidInputError, match="an age"):
        log.compact(older_than="soon")
    assert log.head() == head and log.get(first.id).content == SECRET


def test_compaction_keeps_summaries_and_window_keys(mind: Mind) -> None:
    fill(mind)
    turns = mind.store.event_ids(session_id="bob", kinds=["prompt", "response"])
    plan = mind.compact(older_than="0s", session_id="bob", dry_run=True)
    assert plan.compacted == turns and plan.marker is None and plan.raw_bytes > 0
    assert mind.store.get(turns[0]).content is not None
    assert mind.store.count_compacted() == 0

    report = mind.compact(older_than="0s", session_id="bob")

    assert report.compacted == turns and report.marker is not None
    assert report.marker.kind == "compaction" and check_compaction(mind.store, report.marker)
    kept = mind.store.get(turns[0])
    assert kept.content is None and kept.summary and mind.verify().ok
    assert mind.store.count_compacted() == len(turns)
    word = kept.summary.split()[-1].strip(".,")
    assert turns[0] in {i for i, _ in mind.store.search_text(word, session_id="bob")}
    assert turns[0] in window_ids(mind, word)  # its window now holds its summary
    assert mind.compact(older_than="0s", session_id="bob").compacted == []


def test_forget_and_compact_on_the_command_line(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from pmm.cli import main

    with Mind(pg_url, enable_summary=True, summary_mode="deferred", summarizer="heuristic") as m:
        secret = m.remember(SECRET, role="user", session_id="alice").id
        m.remember_turn(FILLER[0], FILLER[1], session_id="bob")
        m.dream()
    args = ["forget", "--match", "QUOKKABERRY", "--yes", "--db", pg_url, "--json"]
    assert main(args) == 0
    assert secret in json.loads(capsys.readouterr().out)["erased"]
    assert (
        main(["compact", "--older-than", "0s", "--session", "bob", "--db", pg_url, "--json"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert len(data["compacted"]) == 2 == data["compacted_rows_in_log"] and data["verify"]["ok"]
    assert main(["forget", "--session", "bob", "--yes", "--db", pg_url]) == 0
    out = capsys.readouterr().out
    assert "forgot 2 events" in out and "pg_wal" in out
    assert main(["forget", "--scrub", "--db", pg_url]) == 0
    assert "rewrote the tables" in capsys.readouterr().out
    assert main(["verify", "--db", pg_url]) == 0


def _pg_files(cluster: PostgresCluster, url: str) -> tuple[Path, Path]:
    with psycopg.connect(url) as conn:
        oid = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        return cluster.datadir / "base" / str(oid.fetchone()[0]), cluster.datadir / "pg_wal"  # type: ignore[index]


def test_erased_words_leave_the_data_files_but_not_the_wal(
    pg_cluster: PostgresCluster, pg_url: str
) -> None:
    with Mind(
        pg_url,
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        enable_embeddings=True,
        embedder=_embedder(),
        summary_min_chars=40,
    ) as mind:
        secret = fill(mind)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE")  # column statistics sample values and lexemes too
            conn.execute("CHECKPOINT")  # the pages reach base/ (the test server has fsync off)
            lexemes = conn.execute("SELECT to_tsvector('english', %s)::text", (SECRET,))
            assert "'quokkaberri'" in lexemes.fetchone()[0]  # type: ignore[index]
        tokens = (*TOKENS, "quokkaberri")
        base, wal = _pg_files(pg_cluster, pg_url)
        assert holding(base, tokens) == set(tokens)  # text, tsvectors, window keys

        report = mind.forget(event_ids=[secret], reason="user asked")

        assert secret in report.erased and not report.wal_truncated  # + its session summary
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        assert holding(base, tokens) == set()  # VACUUM FULL rewrote every table
        assert mind.verify().ok
        # PostgreSQL's WAL still holds the inserts (and a CHECKPOINT does not change that:
        # segments are recycled by renaming, and overwritten only as new WAL is written).
        assert holding(wal, tokens) >= {"ZX9912345Q", "quokkaberry"}
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("SELECT pg_switch_wal()")
            conn.execute("CHECKPOINT")
        assert holding(wal, tokens) >= {"ZX9912345Q", "quokkaberry"}


def test_a_user_who_does_not_own_the_database_is_warned_about_pg_statistic(
    pg_cluster: PostgresCluster, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from pmm.storage.postgres import PostgresEventStore

    role = f"app_{pg_url.rsplit('_', 1)[-1]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
    app_url = pg_url.replace("://pmm@", f"://{role}@")
    with PostgresEventStore(app_url) as store:  # its tables are the app user's own
        secret = store.append("prompt", SECRET, session_id="s", role="user").id
        with caplog.at_level(logging.WARNING, logger="pmm.storage.postgres.erasure"):
            report = store.forget(event_ids=[secret], reason="asked")
        assert report.erased == [secret] and store.verify().ok
    assert any("VACUUM FULL pg_statistic" in r.getMessage() for r in caplog.records)
