"""One user's export imported among other users: the published suite
(:mod:`pmm.testing.conformance.import_user`) on PMM's backends, and the redacted text kept
out of a PostgreSQL database's rows."""

from __future__ import annotations

from pathlib import Path

from pmm import Mind
from pmm.testing.conformance.import_user import *  # noqa: F403
from pmm.testing.conformance.import_user import _source, _target


def test_a_rebased_import_keeps_the_redacted_text_out_of_postgresql(
    pg_url: str, tmp_path: Path
) -> None:
    src = _source(tmp_path / "db1.db")
    _target(pg_url)
    with Mind(pg_url) as mind:
        assert mind.import_events(src["file"]).ok
    import psycopg

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM events WHERE content LIKE %s", ("%4471 zebra%",)
        ).fetchone()
        assert rows is not None and rows[0] == 0
