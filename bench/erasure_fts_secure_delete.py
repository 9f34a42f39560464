"""What FTS5's ``secure-delete`` option (SQLite 3.42+) would save an erasure: one user (3
threads) of a 100,000-event file erased as PMM does (the indexes' segments merged with
``optimize``), beside the same erasure with ``secure-delete`` set on both full-text indexes
and no ``optimize`` (FTS5 then removes a deleted row's entries from the segments in place),
on copies of the same file, with the same byte checks as ``bench/erasure.py``.

    python bench/erasure_fts_secure_delete.py          # needs pysqlite3-binary (bench extra)

Python's own sqlite3 here is 3.40 (no ``secure-delete``): this bench runs PMM on
pysqlite3's SQLite instead (``sys.modules["sqlite3"]`` replaced before PMM is imported),
for both runs. Not a PMM code path: a measurement for choosing one.
"""

from __future__ import annotations

import sys

import pysqlite3.dbapi2 as sqlite3  # type: ignore[import-not-found]

sys.modules["sqlite3"] = sqlite3

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from erasure import PER_THREAD, THREADS, build, secret  # noqa: E402

from pmm.storage.sqlite import EventStore  # noqa: E402
from pmm.storage.sqlite.search import SearchIndex  # noqa: E402


class _NoOptimize:
    """The write connection, less the two ``optimize`` statements."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> Any:
        return None if "VALUES ('optimize')" in sql else self._conn.execute(sql, *args)


def erase(base: Path, folder: Path, sessions: list[int], secure: bool) -> float:
    path = folder / "copy.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    shutil.copy(base, path)
    names = [f"user{s // THREADS}/thread{s % THREADS}" for s in sessions]
    original = SearchIndex.erase_search_terms
    with EventStore(path) as store:
        if secure:
            for table in ("events_fts", "events_window_fts"):
                store._conn.execute(
                    f"INSERT INTO {table}({table}, rank) VALUES ('secure-delete', 1)"
                )

            def erase_terms(self: SearchIndex, conn: Any, placed: Any, erase_text: Any) -> None:
                original(self, _NoOptimize(conn), placed, erase_text)

            SearchIndex.erase_search_terms = erase_terms  # type: ignore[method-assign]
        try:
            started = time.perf_counter()
            store.forget(session_ids=names, reason="bench")
            seconds = time.perf_counter() - started
        finally:
            SearchIndex.erase_search_terms = original  # type: ignore[method-assign]
        assert store.verify().ok
        store._conn.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
        assert not store.search_text(secret(sessions[0]))
    data = b"".join(
        Path(str(path) + s).read_bytes() for s in ("", "-wal") if Path(str(path) + s).exists()
    )
    assert not [s for s in sessions if secret(s).encode() in data], "erased text left"
    assert secret(max(sessions) + 1).encode() in data
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pmm-fts-secure-") as tmp:
        base = Path(tmp) / "base.db"
        build(base, args.events, 0, 1)
        user = args.events // PER_THREAD // THREADS // 2  # a user in the middle of the log
        sessions = [user * THREADS + t for t in range(THREADS)]
        print(
            f"SQLite {sqlite3.sqlite_version}, {args.events:,} events, one user ({THREADS} threads)"
        )
        for n in range(args.repeat):
            merged = erase(base, Path(tmp), sessions, secure=False)
            secure = erase(base, Path(tmp), sessions, secure=True)
            print(
                f"run {n + 1}: optimize {merged:.2f} s, secure-delete {secure:.2f} s "
                f"({merged / secure:.1f}x); no erased byte left in either"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
