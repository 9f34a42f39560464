"""Fault injection for `pmm recover`: random damage at random offsets of a real 3,000-event
log, many seeded trials, and a report that never under-reports.

Each trial damages a copy of the same file (a whole page at a page boundary, or 512 random
bytes at an unaligned offset; anywhere in the file, or within the events table's pages),
runs ``pmm recover`` and checks, against reads of the damaged file itself:

- every id that ``SELECT * FROM events WHERE id = ?`` still returns is in the new file;
- the new file's ids and the listed lost ids are, together, every id 1..3,000 (the highest
  the file knows: its chains' heads), with no id in both;
- the printed "lost ids" line names exactly those ids ("none" only when none is missing).

Before this test, a range read ending early at a damaged interior page silently dropped a
tail of the log ("lost ids: none" with 65 to 2,856 events missing, in 8 of 30 copies).
The source file is built once per test session; the trials take about 30 s on 2 cores.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from pmm.cli import main
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore

EVENTS = 3_000
TRIALS = 16  # of each of the two kinds (aligned pages, unaligned bytes)
PAGE = 4096


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("PMM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real 3,000-event log: four users' chains and user-less events, short turns and
    long ones (overflow pages), indexed for search, checkpointed into one file."""
    path = tmp_path_factory.mktemp("recover-faults") / "pmm.db"
    rng = random.Random(36)
    words = "lisbon harbour tram pastel nata fado river bridge castle tile".split()
    with EventStore(path) as store:
        for start in range(0, EVENTS, 100):
            batch = []
            for i in range(start, start + 100):
                user = None if i % 5 == 4 else f"user-{i % 4}"
                size = 6_000 if i % 97 == 0 else rng.randint(20, 400)
                text = f"turn {i}: " + " ".join(rng.choice(words) for _ in range(size // 6))
                session = f"{user or 'shared'}/thread-{i % 7}"
                batch.append(NewEvent("prompt", text, session, "user", None, None, user))
            store.append_many(batch)
        store.sync_search_index()
        assert store.count() == EVENTS and store.verify().ok
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE
    conn.close()
    yield path


def _events_pages(path: Path) -> list[int]:
    """The pages (0-based) of the events table's b-tree: interior and leaf pages."""
    conn = sqlite3.connect(path)
    pages = [r[0] - 1 for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'events'")]
    conn.close()
    return pages


def _damage(path: Path, rng: random.Random, *, aligned: bool, pages: list[int]) -> str:
    """Write random bytes into ``path``: a whole page or 512 unaligned bytes, at a random
    place of the whole file (after its first page, the schema) or of the events table."""
    size = path.stat().st_size
    within_events = rng.random() < 0.5
    if aligned:
        page = rng.choice(pages) if within_events else rng.randrange(1, size // PAGE)
        offset, length = page * PAGE, PAGE
    else:
        if within_events:
            offset = rng.choice(pages) * PAGE + rng.randrange(1, PAGE - 1)
        else:
            offset = rng.randrange(PAGE + 1, size - 512)
        offset += offset % PAGE == 0  # never on a page boundary
        length = 512
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(rng.randbytes(length))
    return f"{length} bytes at {offset}"


def _point_readable(path: Path) -> set[int]:
    """The ids that a read of each id on its own still returns in the damaged file."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = bytes
    found: set[int] = set()
    for id_ in range(1, EVENTS + 1):
        try:
            if conn.execute("SELECT * FROM events WHERE id = ?", (id_,)).fetchone():
                found.add(id_)
        except sqlite3.Error:
            continue
    conn.close()
    return found


def _ids_of(text: str) -> set[int]:
    """The ids of a "lost ids: 3-5, 9 (4 ids in all)" line."""
    listed = text.split(" (", 1)[0]
    if listed == "none":
        return set()
    ids: set[int] = set()
    for part in listed.split(", "):
        first, _, last = part.partition("-")
        ids.update(range(int(first), int(last or first) + 1))
    return ids


@pytest.mark.parametrize("aligned", [True, False], ids=["whole-pages", "unaligned-bytes"])
def test_recover_never_under_reports(
    source: Path,
    tmp_path: Path,
    aligned: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pages = _events_pages(source)
    rng = random.Random(f"recover-{aligned}")
    short = 0  # trials whose damage hid rows from a read of the whole range
    for trial in range(TRIALS):
        broken, new = tmp_path / f"broken{trial}.db", tmp_path / f"new{trial}.db"
        shutil.copyfile(source, broken)
        where = _damage(broken, rng, aligned=aligned, pages=pages)
        readable = _point_readable(broken)
        code = main(["recover", str(broken), str(new)])
        captured = capsys.readouterr()
        out = captured.out
        if "cannot be read at all" in captured.err:  # the schema's pages were hit
            assert code == 1 and readable == set() and not new.exists(), captured.err
            continue
        conn = sqlite3.connect(new)
        salvaged = {r[0] for r in conn.execute("SELECT id FROM events")}
        conn.close()
        context = f"trial {trial} ({where}):\n{out}"
        assert readable <= salvaged, context + f"\nmissed: {sorted(readable - salvaged)[:20]}"
        lost_line = re.search(r"^lost ids: (.*)$", out, re.M)
        top_line = re.search(r"^highest id the damaged file knows: (\d+)", out, re.M)
        assert lost_line and top_line, context
        lost = _ids_of(lost_line.group(1))
        assert int(top_line.group(1)) == EVENTS, context
        if "more runs" not in lost_line.group(1):
            assert lost == set(range(1, EVENTS + 1)) - salvaged, context
        total = re.search(r"\((\d+) ids in all", lost_line.group(1))
        assert int(total.group(1) if total else 0) == EVENTS - len(salvaged), context
        assert not lost & salvaged, context
        assert (lost_line.group(1) == "none") == (salvaged == set(range(1, EVENTS + 1)))
        complete = (
            all(line in out for line in ("lost ids: none", "no longer verify: none", "cut: none"))
            and "could not be read" not in out
        )
        assert code == (0 if complete else 1), context
        conn = sqlite3.connect(f"file:{broken}?mode=ro", uri=True)
        try:
            intact = conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        except sqlite3.Error:
            intact = False
        # the report names what SQLite finds damaged: "none found" only for an intact file
        assert ("(integrity_check): none found" in out) == intact, context
        try:
            conn.execute("SELECT id FROM events WHERE id BETWEEN 1 AND ?", (EVENTS,)).fetchall()
            whole = len(conn.execute("SELECT id FROM events").fetchall())
        except sqlite3.Error:
            whole = -1
        finally:
            conn.close()
        short += whole != len(readable)
    # the damage reached the events table in enough trials to matter
    assert short >= 3, f"only {short} of {TRIALS} trials damaged the events table"


def _small_log(path: Path, n: int) -> None:
    """``n`` events of two users, each with a vector and an edge to the one before."""
    with EventStore(path) as store:
        store.append_many(
            NewEvent("prompt", f"turn {i} word{i}x " + "filler " * 60, f"u{i % 2}/t", "user",
                     None, None, f"u{i % 2}")
            for i in range(1, n + 1)
        )  # fmt: skip
        store.put_embeddings("m", 4, [(i, bytes(16)) for i in range(1, n + 1)])
        store.add_edges((i, i - 1, "FOLLOWS") for i in range(2, n + 1))
        store.sync_search_index()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _leaf_pages(path: Path) -> list[int]:
    """The events table's leaf pages (numbered from 1), in id order."""
    conn = sqlite3.connect(path)
    leaves = [
        r[0]
        for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY path"
        )
    ]
    conn.close()
    return leaves


def _smash(path: Path, page: int) -> None:
    with open(path, "r+b") as f:
        f.seek((page - 1) * PAGE)
        f.write(random.Random(page).randbytes(PAGE))


def test_the_highest_id_comes_from_the_chain_heads_when_the_last_page_is_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    _small_log(db, 400)
    last_leaf = _leaf_pages(db)[-1]
    _smash(db, last_leaf)
    assert main(["recover", str(db), "new.db", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    conn = sqlite3.connect(tmp_path / "new.db")
    salvaged = {r[0] for r in conn.execute("SELECT id FROM events")}
    conn.close()
    assert 400 in report["lost"] and salvaged | set(report["lost"]) == set(range(1, 401))
    assert report["top"] == 400 and report["top_sources"]["chains.head_id"] == 400
    assert report["lost_ranges"][-1][1] == 400 and not salvaged & set(report["lost"])
    assert report["damaged"]  # integrity_check names what it found damaged
    assert main(["recover", str(db), "new2.db"]) == 1
    out = capsys.readouterr().out
    assert "lost ids: none" not in out and f"-400 ({len(report['lost'])} ids in all)" in out


def test_the_report_is_true_about_derived_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "pmm.db"
    _small_log(db, 400)
    leaves = _leaf_pages(db)
    _smash(db, leaves[len(leaves) // 2])
    assert main(["recover", str(db), "new.db", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    conn = sqlite3.connect(tmp_path / "new.db")
    salvaged = {r[0] for r in conn.execute("SELECT id FROM events")}
    vectors = {r[0] for r in conn.execute("SELECT event_id FROM embeddings")}
    edges = conn.execute("SELECT src, dst FROM edges").fetchall()
    heads = dict(conn.execute("SELECT chain, head_id FROM chains").fetchall())
    conn.close()
    assert report["lost"] and salvaged | set(report["lost"]) == set(range(1, 401))
    # vectors and edges of salvaged events are copied, those of lost events are not
    assert vectors == salvaged and report["embeddings"] == len(salvaged)
    assert set(edges) == {(i, i - 1) for i in salvaged if i - 1 in salvaged}
    assert report["edges"] == len(edges)
    assert f"embeddings: {len(salvaged)} of 400 read were copied" in " ".join(report["derived"])
    assert f"edges: {len(edges)} of 399 read were copied" in " ".join(report["derived"])
    # each chain's head is its newest salvaged row; the secrets came along
    assert heads == {u: max(i for i in salvaged if i % 2 == int(u[1])) for u in ("u0", "u1")}
    assert "chain secrets: 2 of 2 read were copied" in " ".join(report["derived"])
    # the full-text index was rebuilt from the salvaged rows
    kept, gone = min(salvaged), min(report["lost"])
    with EventStore(tmp_path / "new.db") as store:
        assert [i for i, _ in store.search_text(f"word{kept}x")] == [kept]
        assert store.search_text(f"word{gone}x") == []
