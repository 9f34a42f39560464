"""The chat benchmark dataset (bench/data/make_chat_dataset.py) and bench/recall.py on it."""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    sys.path.insert(0, str(DATA))
    try:
        return importlib.import_module("make_chat_dataset")
    finally:
        sys.path.remove(str(DATA))


@pytest.fixture(scope="module")
def dataset(generator: ModuleType) -> dict[str, Any]:
    return generator.build()  # type: ignore[no-any-return]


def test_same_seed_same_bytes_other_seed_other_data(generator: ModuleType) -> None:
    first = json.dumps(generator.build(seed=5, conversations=2))
    assert json.dumps(generator.build(seed=5, conversations=2)) == first
    assert json.dumps(generator.build(seed=6, conversations=2)) != first


def test_committed_file_is_the_generators_output(
    generator: ModuleType, dataset: dict[str, Any]
) -> None:
    committed = (DATA / "chat_dataset.json").read_text(encoding="utf-8")
    assert committed == json.dumps(dataset, indent=0, ensure_ascii=False) + "\n"


def test_size_limits_of_issue_8(generator: ModuleType, dataset: dict[str, Any]) -> None:
    assert generator.check(dataset) == []
    convs = dataset["conversations"]
    assert len(convs) >= 10
    for c in convs:
        assert len(c["sessions"]) >= 15
        assert 300 <= sum(len(s["turns"]) for s in c["sessions"]) <= 700
        dates = [s["date"] for s in c["sessions"]]
        assert dates == sorted(dates) and len(set(dates)) == len(dates)
    kinds = Counter(q["type"] for q in dataset["questions"])
    assert len(dataset["questions"]) >= 1000
    assert set(kinds) == {"single", "multi", "temporal", "commonsense"}


def test_every_evidence_turn_exists_in_its_own_conversation(dataset: dict[str, Any]) -> None:
    turns = {
        c["id"]: {t["id"] for s in c["sessions"] for t in s["turns"]}
        for c in dataset["conversations"]
    }
    ids = [q["id"] for q in dataset["questions"]]
    assert len(ids) == len(set(ids))
    for q in dataset["questions"]:
        assert q["answer_ids"], q["id"]
        assert set(q["answer_ids"]) <= turns[q["conversation"]], q["id"]
        assert q["question"].endswith("?") and q["answer"], q["id"]


def test_check_reports_broken_evidence_and_one_session_multi(
    generator: ModuleType, dataset: dict[str, Any]
) -> None:
    broken = json.loads(json.dumps(dataset))
    broken["questions"][0]["answer_ids"] = ["nope-1-001"]
    multi = next(q for q in broken["questions"] if q["type"] == "multi")
    multi["answer_ids"] = multi["answer_ids"][:1]
    problems = generator.check(broken)
    assert any("nope-1-001" in p for p in problems)
    assert any(multi["id"] in p and "one session" in p for p in problems)


def test_looks_like_chat_between_two_people(dataset: dict[str, Any]) -> None:
    for c in dataset["conversations"]:
        turns = [t for s in c["sessions"] for t in s["turns"]]
        speakers = {t["speaker"]: t["role"] for t in turns}
        assert speakers == {c["speakers"]["user"]: "user", c["speakers"]["assistant"]: "assistant"}
        short = sum(len(t["text"].split()) <= 6 for t in turns)
        assert short / len(turns) > 0.4  # mostly short small talk, not essays
        assert any(t["text"].startswith("[shares a photo: ") for t in turns)
