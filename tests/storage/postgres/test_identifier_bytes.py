"""On PostgreSQL, erasing a whole user takes her ids out of the tables' data files too (the
erasure's table rewrite runs after her ids are nulled); the WAL keeps old bytes until its
segments are recycled, as for any erasure (see the privacy guide)."""

from __future__ import annotations

from pathlib import Path

import psycopg
from pg_cluster import PostgresCluster

from pmm import Mind

ALICE = "alice.liddell@example.org"
THREAD = "alice-thread-kyoto"
BOB = "bob.builder@example.org"


def _base(cluster: PostgresCluster, url: str) -> Path:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        return cluster.datadir / "base" / str(row.fetchone()[0])  # type: ignore[index]


def _holding(folder: Path, tokens: tuple[str, ...]) -> set[str]:
    found: set[str] = set()
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found.update(t for t in tokens if t.encode() in data)
    return found


def test_her_ids_leave_the_data_files(pg_cluster: PostgresCluster, pg_url: str) -> None:
    tokens = (ALICE, THREAD, BOB)
    with Mind(pg_url) as mind:
        mind.remember_turn("plans for Kyoto", "noted", session_id=THREAD, user_id=ALICE)
        mind.remember_turn("I build sheds", "nice", session_id="bob-thread", user_id=BOB)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE")  # column statistics sample ids too
            conn.execute("CHECKPOINT")  # the pages reach base/ (the test server has fsync off)
        assert _holding(_base(pg_cluster, pg_url), tokens) == set(tokens)
        mind.forget(user_id=ALICE, reason="account deleted")
        assert mind.verify().ok
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
    assert _holding(_base(pg_cluster, pg_url), tokens) == {BOB}
    # Nor in hex (as a bytea or an escaped copy would hold them), in either case.
    spelled = tuple(f(t.encode().hex()) for t in (ALICE, THREAD) for f in (str.lower, str.upper))
    assert _holding(_base(pg_cluster, pg_url), spelled) == set()
