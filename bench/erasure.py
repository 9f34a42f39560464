"""Seconds to erase one user's threads from a 100,000-event SQLite file, the old way (one
request per session, each rebuilding every full-text index and vacuuming the file) beside
the new one (one request for all of them: only the erased rows and their sessions' windows
leave the indexes, the segments are merged, one VACUUM), on copies of the same file.

    python bench/erasure.py                      # 100,000 events, no vectors (the default)
    python bench/erasure.py --vectors 384        # with a 384-dim vector per turn (MiniLM's)
    python bench/erasure.py --events 20000 --sessions 1 3
    python bench/erasure.py --quick              # 6,000 events

The file: turns of 50 per thread, 3 threads per user, made-up Zipf-distributed words,
each turn digested (summary and keywords), as ``pmm dream`` leaves a file. Each run checks
that no byte of the erased threads' secrets is left in the .db and -wal files, that every
other thread's secret is, and that the chain verifies. Target (issue 20): erasing one user
(3 threads) of a 100,000-event file in at most 5 s.

With ``--secure-delete-check``, last, why the scrub still ends with a VACUUM (about 100 s
on the development machine): a plain SQLite table of 20,000 rows, updated
so that rows move between pages, then 50 sessions' rows erased with ``secure_delete`` on
from the start and no VACUUM: the share of erased rows whose text is still in the file
(rebalanced pages keep copies of moved rows in their unallocated space).
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import Bench  # noqa: E402

from pmm.records import NewEvent  # noqa: E402
from pmm.retention.erasure import file_bytes  # noqa: E402
from pmm.storage.sqlite import EventStore  # noqa: E402
from pmm.storage.sqlite.search import SearchIndex  # noqa: E402

PER_THREAD = 50
THREADS = 3
TARGET_S = 5.0


def secret(session: int) -> str:
    return f"zq{session:06d}passportx"


def build(path: Path, events: int, dim: int, seed: int) -> None:
    rng = random.Random(seed)
    syllables = "ka lo mi ra ten sor vel dan pri mo lu shi ber gan tor el an is or um".split()
    vocab = sorted(
        {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(30_000)}
    )
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.07
    cumulative = np.cumsum(weights / weights.sum())
    draw = np.random.default_rng(seed)
    with EventStore(path) as store:
        batch: list[NewEvent] = []
        for session in range(events // PER_THREAD):
            name = f"user{session // THREADS}/thread{session % THREADS}"
            for turn in range(PER_THREAD):
                picks = np.searchsorted(cumulative, draw.random(rng.randint(8, 40)))
                text = " ".join(vocab[min(i, len(vocab) - 1)] for i in picks).capitalize() + "."
                if turn == 7:
                    text += f" My passport number is {secret(session)}."
                user = turn % 2 == 0
                batch.append(
                    NewEvent(
                        "prompt" if user else "response",
                        text,
                        name,
                        "user" if user else "assistant",
                        None,
                        None,
                    )
                )
            if len(batch) >= 5000:
                _store(store, batch, dim, draw)
                batch = []
        _store(store, batch, dim, draw)
        store.sync_search_index()


def _store(store: EventStore, batch: list[NewEvent], dim: int, draw: np.random.Generator) -> None:
    if not batch:
        return
    stored = store.append_many(batch)
    store.set_digests(
        [(e.id, (e.content or "")[:80], (e.content or "").split()[:4], "rules") for e in stored]
    )
    if dim:
        vectors = draw.standard_normal((len(stored), dim)).astype(np.float32)
        store.put_embeddings(
            "bench", dim, [(e.id, v.tobytes()) for e, v in zip(stored, vectors, strict=True)]
        )


@contextmanager
def old_path() -> Iterator[None]:
    """The erasure before issue 20: every index rebuilt from the whole log."""
    new = SearchIndex.erase_search_terms

    def rebuild(
        self: SearchIndex, conn: object, placed: object, erase_text: Callable[[], object]
    ) -> None:
        erase_text()
        self.rebuild_search_indexes(conn)  # type: ignore[arg-type]

    SearchIndex.erase_search_terms = rebuild  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        SearchIndex.erase_search_terms = new  # type: ignore[method-assign]


PHASES = (
    ("rows, index entries", ("SELECT", "UPDATE", "DELETE", "INSERT")),
    ("turn index merge", ("INSERT INTO events_fts(events_fts) VALUES ('optimize')",)),
    ("turn index rebuild", ("INSERT INTO events_fts(events_fts) VALUES ('rebuild')",)),
    (
        "window index merge",
        ("INSERT INTO events_window_fts(events_window_fts) VALUES ('optimize')",),
    ),
    ("VACUUM", ("VACUUM",)),
    ("wal checkpoint", ("PRAGMA wal_checkpoint",)),
)
"""Phases of an erasure, named by the SQL statement that opens each (the longest prefix
wins); the time until the next top-level statement (FTS5's own statements, and Python's
work between statements, included) is the phase's."""


def _phase(sql: str) -> str:
    best, length = "other", 0
    for name, prefixes in PHASES:
        for prefix in prefixes:
            if sql.startswith(prefix) and len(prefix) > length:
                best, length = name, len(prefix)
    return best


@contextmanager
def phases(store: EventStore, into: dict[str, float]) -> Iterator[None]:
    """Add each phase's seconds (see :data:`PHASES`) of what runs on ``store`` to ``into``."""
    current = ["other", time.perf_counter()]

    def trace(sql: str) -> None:
        if sql.startswith("--"):  # a statement FTS5 runs for the one in progress
            return
        now = time.perf_counter()
        into[str(current[0])] = into.get(str(current[0]), 0.0) + now - float(current[1])
        current[0], current[1] = _phase(sql.lstrip()), now

    store._conn.set_trace_callback(trace)
    try:
        yield
    finally:
        store._conn.set_trace_callback(None)
        trace("end")


def erase(
    base: Path, folder: Path, sessions: list[int], old: bool, spent: dict[str, float]
) -> tuple[float, int, int]:
    """Seconds, bytes before and after erasing ``sessions`` from a copy of ``base``; the
    phases' seconds are added to ``spent``."""
    path = folder / "copy.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    shutil.copy(base, path)
    names = [f"user{s // THREADS}/thread{s % THREADS}" for s in sessions]
    with EventStore(path) as store:
        before = file_bytes(str(path))
        started = time.perf_counter()
        with phases(store, spent):
            if old:
                with old_path():
                    for name in names:
                        store.forget(session_id=name, reason="bench")
            else:
                store.forget(session_ids=names, reason="bench")
        seconds = time.perf_counter() - started
        assert store.verify().ok
        after = file_bytes(str(path))
    data = b"".join(
        Path(str(path) + s).read_bytes() for s in ("", "-wal") if Path(str(path) + s).exists()
    )
    assert not [s for s in sessions if secret(s).encode() in data], "erased text left"
    assert secret(max(sessions) + 1).encode() in data  # and the other threads kept theirs
    return seconds, before, after


def secure_delete_only(folder: Path, seed: int) -> tuple[int, int]:
    """``(erased rows, rows whose text is still in the file)`` after erasing 50 of 500
    sessions of a 20,000-row table with ``secure_delete`` on all along and no VACUUM."""
    import sqlite3

    path = folder / "secure.db"
    rng = random.Random(seed)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("CREATE TABLE ev(id INTEGER PRIMARY KEY, s TEXT, content TEXT, summary TEXT)")
        rows = 20_000
        for i in range(rows):
            text = f"tok{i:06d}zz " + "x" * rng.randint(10, 600)
            conn.execute("INSERT INTO ev VALUES (?, ?, ?, NULL)", (i, f"s{i % 500}", text))
        for i in rng.sample(range(rows), rows // 2):  # digests: rows grow and move
            conn.execute("UPDATE ev SET summary = ? WHERE id = ?", ("y" * rng.randint(10, 400), i))
        victims = set(rng.sample(range(500), 50))
        conn.execute("BEGIN")
        for v in victims:
            conn.execute("UPDATE ev SET content = NULL, summary = NULL WHERE s = ?", (f"s{v}",))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    data = path.read_bytes()
    erased = [i for i in range(rows) if i % 500 in victims]
    return len(erased), sum(1 for i in erased if f"tok{i:06d}zz".encode() in data)


def main(argv: list[str] | None = None) -> int:
    bench = Bench("erasure", __doc__)
    parser = bench.parser
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--vectors", type=int, default=0, metavar="DIM", help="0 = none")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--secure-delete-check", action="store_true")
    args = bench.parse(argv)
    if args.quick:
        args.events = 6000
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="pmm-erasure-") as tmp:
        base = Path(tmp) / "base.db"
        started = time.perf_counter()
        build(base, args.events, args.vectors, args.seed)
        size = file_bytes(str(base))
        print(
            f"{args.events:,} events ({args.events // PER_THREAD:,} threads of {PER_THREAD}, "
            f"{args.vectors or 'no'} vectors), {size:,} B, built in "
            f"{time.perf_counter() - started:.0f} s"
        )
        print(
            f"{'erase':<22}{'old s':>9}{'new s':>9}{'speedup':>9}{'bytes before':>16}"
            f"{'bytes after (old)':>19}{'bytes after (new)':>19}"
        )
        user = random.Random(args.seed).randrange(args.events // PER_THREAD // THREADS - 2)
        for count in args.sessions:
            sessions = [user * THREADS + t for t in range(count)]
            old_phases: dict[str, float] = {}
            new_phases: dict[str, float] = {}
            old_s, before, old_after = erase(base, Path(tmp), sessions, True, old_phases)
            new_s, _, new_after = erase(base, Path(tmp), sessions, False, new_phases)
            label = f"{count} thread{'s' if count > 1 else ''} of a user"
            figures[label] = {"old_s": old_s, "new_s": new_s, "bytes_after_new": new_after}
            print(
                f"{label:<22}{old_s:>9.2f}{new_s:>9.2f}{old_s / new_s:>8.1f}x{before:>16,}"
                f"{old_after:>19,}{new_after:>19,}"
            )
            for name in [*(n for n, _ in PHASES), "other"]:
                if name in old_phases or name in new_phases:
                    print(
                        f"  {name:<20}{old_phases.get(name, 0.0):>9.2f}"
                        f"{new_phases.get(name, 0.0):>9.2f}"
                    )
            if count == THREADS:
                verdict = "met" if new_s <= TARGET_S else "MISSED"
                print(
                    f"target: one user ({THREADS} threads) <= {TARGET_S:.0f} s: "
                    f"{new_s:.2f} s, {verdict}"
                )
        if args.secure_delete_check:
            erased, left = secure_delete_only(Path(tmp), args.seed)
            print(
                f"secure_delete on, no VACUUM: {left} of {erased:,} erased rows still readable "
                "in the file"
            )
    bench.finish({"events": args.events, "erase": figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
