"""The chat benchmark dataset (bench/data/make_chat_dataset.py) and bench/recall.py on it."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pmm.testing.doubles import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
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
    asked = [(q["conversation"], q["question"]) for q in dataset["questions"]]
    assert len(asked) == len(set(asked))  # no question asked twice of one conversation
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


def test_recall_harness_runs_on_a_tiny_generated_subset(
    generator: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = tmp_path / "small.json"
    data = generator.build(seed=11, conversations=2)
    for c in data["conversations"]:  # a few sessions each keep the test fast
        c["sessions"] = c["sessions"][:4]
    kept = {t["id"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]}
    data["questions"] = [q for q in data["questions"] if set(q["answer_ids"]) <= kept]
    small.write_text(json.dumps(data), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("bench_recall", ROOT / "bench" / "recall.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out_json = tmp_path / "out.json"
    argv = ["--data", str(small), "--json", str(out_json)]
    assert bench.main(argv, embedder=HashEmbedder()) == 0
    assert "by question type" in capsys.readouterr().out
    results = json.loads(out_json.read_text(encoding="utf-8"))
    summary = results["summary"]
    assert "bm25|-" in summary and "hybrid|no" in summary and "hybrid|yes" in summary
    assert any(name.startswith("ranker:") for name in summary)
    assert summary["bm25|-"]["ratio_r10"] == pytest.approx(1.0)
    for row in summary.values():
        assert 0.0 <= row["R@1"] <= row["R@5"] <= row["R@10"] <= row["R@25"] <= 1.0
        assert row["H@10"] >= row["R@10"]
    assert results["bench"] == "bench/recall.py" and results["commit"]


def test_committed_recall_dataset_is_its_generators_output() -> None:
    """bench/data/make_recall_dataset.py rebuilds bench/data/recall_dataset.json byte for byte."""
    sys.path.insert(0, str(DATA))
    try:
        recall = importlib.import_module("make_recall_dataset")
    finally:
        sys.path.remove(str(DATA))
    committed = (DATA / "recall_dataset.json").read_text(encoding="utf-8")
    assert committed == json.dumps(recall.build(), indent=1, ensure_ascii=False) + "\n"
