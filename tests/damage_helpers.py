"""A SQLite log with a damaged page, for the tests of what PMM does once it sees damage.

damaged_log(tmp_path / "pmm.db")   # 300 events; a full scan of them raises
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from pmm.storage.sqlite import EventStore

TEXT = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 20


def damaged_log(path: Path, n: int = 300) -> None:
    """A log of ``n`` events whose middle leaf page of the events table is garbage (a full
    scan of the events raises; the full-text pages and the newest rows stay readable)."""
    with EventStore(path) as store:
        for i in range(n):
            store.append("prompt", f"turn {i} {TEXT}", session_id=f"s{i % 3}", role="user")
        store.sync_search_index()
    overwrite_middle_leaf(path, lambda size: b"\xa5" * size)


def overwrite_middle_leaf(path: Path, garbage: Callable[[int], bytes]) -> None:
    """``garbage(page_size)`` written over the middle leaf page of the events table (after
    a checkpoint, so the page is in the file itself)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [
        r[0]
        for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno"
        )
    ]
    conn.close()
    with open(path, "r+b") as f:
        f.seek((leaves[len(leaves) // 2] - 1) * page_size)
        f.write(garbage(page_size))
