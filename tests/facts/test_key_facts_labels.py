"""The committed key-fact labels (docs/benchmarks/data/key-facts-labels.json) hold ids, never
LoCoMo's text, and give the precision the benchmark page prints."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "docs" / "benchmarks" / "data" / "key-facts-labels.json"
PAGE = ROOT / "docs" / "benchmarks" / "key-facts.md"
KEYS = {
    "conversation",
    "speaker",
    "dia_id",
    "attribute",
    "value_sha256_12",
    "builds",
    "correct",
    "why",
}


def test_labels_hold_ids_only() -> None:
    facts = json.loads(LABELS.read_text("utf-8"))["facts"]
    for row in facts:
        assert set(row) == KEYS
        assert re.fullmatch(r"conv-\d+", row["conversation"]) and row["speaker"] in {"a", "b"}
        assert re.fullmatch(r"D\d+:\d+", row["dia_id"])
        assert re.fullmatch(r"[0-9a-f]{12}", row["value_sha256_12"])
        assert row["correct"] in {0, 1} and set(row["builds"]) <= {"old", "new"}
        assert row["why"] in {"ok", "pointing", "fragment", "first-person", "not-user"}
        assert (row["why"] == "ok") == bool(row["correct"])
    ids = [tuple(row[k] for k in sorted(KEYS - {"builds", "correct", "why"})) for row in facts]
    assert len(ids) == len(set(ids)), "a fact labelled twice"


def test_the_page_prints_the_labels_precision() -> None:
    facts = json.loads(LABELS.read_text("utf-8"))["facts"]
    page = PAGE.read_text("utf-8")
    for build, first_cell in (("old", "old (`a200e3d`)"), ("new", "new")):
        rows = [r for r in facts if build in r["builds"]]
        correct = sum(r["correct"] for r in rows)
        assert len(rows) == 100
        assert f"| {first_cell} | {len(rows)} | {correct} | **{correct / len(rows):.2f}**" in page
