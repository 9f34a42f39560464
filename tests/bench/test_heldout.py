"""The held-out chat dataset (bench/data/make_heldout_dataset.py): deterministic, its
self-checks hold and catch bad evidence, and the committed file is its output."""

from __future__ import annotations

import copy
import importlib
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    sys.path.insert(0, str(DATA))
    try:
        return importlib.import_module("make_heldout_dataset")
    finally:
        sys.path.remove(str(DATA))


@pytest.fixture(scope="module")
def small(generator: ModuleType) -> dict[str, Any]:
    return generator.build(seed=11, conversations=2)  # type: ignore[no-any-return]


def test_same_seed_same_bytes_other_seed_other_data(
    generator: ModuleType, small: dict[str, Any]
) -> None:
    assert json.dumps(generator.build(seed=11, conversations=2)) == json.dumps(small)
    assert json.dumps(generator.build(seed=12, conversations=2)) != json.dumps(small)


def test_slice_has_the_promised_shape(small: dict[str, Any]) -> None:
    assert len(small["conversations"]) == 2
    for conv in small["conversations"]:
        turns = [t for s in conv["sessions"] for t in s["turns"]]
        assert len(conv["sessions"]) >= 15
        assert 300 <= len(turns) <= 700
        dates = [s["date"] for s in conv["sessions"]]
        assert dates == sorted(dates)
        assert sum(len(t["text"].split()) <= 6 for t in turns) / len(turns) > 0.5
    kinds = Counter(q["type"] for q in small["questions"])
    assert set(kinds) == {"single", "multi", "temporal", "commonsense"}


def test_self_check_passes_and_catches_wrong_evidence(
    generator: ModuleType, small: dict[str, Any]
) -> None:
    generator.check(small)
    text = {
        t["id"]: t["text"].lower()
        for c in small["conversations"]
        for s in c["sessions"]
        for t in s["turns"]
    }
    for q in small["questions"]:  # the guarantee, checked independently of check()
        joined = " ".join(text[i] for i in q["answer_ids"])
        assert q["answer_ids"] and all(k.lower() in joined for k in q["keys"])
    broken = copy.deepcopy(small)
    opener = broken["conversations"][0]["sessions"][0]["turns"][0]["id"]
    broken["questions"][0]["answer_ids"] = [opener]
    with pytest.raises(ValueError, match="evidence lacks"):
        generator.check(broken)
    broken["questions"][0]["answer_ids"] = []
    with pytest.raises(ValueError, match="no evidence"):
        generator.check(broken)
    broken = copy.deepcopy(small)
    multi = next(q for q in broken["questions"] if q["type"] == "multi")
    multi["answer_ids"] = multi["answer_ids"][-1:]
    multi["keys"] = [text[multi["answer_ids"][0]].split()[0]]  # keys hold; sessions do not
    with pytest.raises(ValueError, match="one session"):
        generator.check(broken)


def test_committed_file_is_the_generators_output(generator: ModuleType) -> None:
    committed = (DATA / "heldout_dataset.json").read_text(encoding="utf-8")
    expected = json.dumps(generator.build(), indent=0, ensure_ascii=False) + "\n"
    assert committed == expected
    data = json.loads(committed)
    assert len(data["conversations"]) >= 10 and len(data["questions"]) >= 1000
