"""bench/locomo.py on a tiny LoCoMo-shaped file written here (never the real data, which
is CC BY-NC and stays outside the repository): the protocol's cleaning and the metrics
come out as computed by hand, and a missing data folder is a skip, not a failure."""

from __future__ import annotations

import importlib
import json
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

pytest.importorskip("bm25s")


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("locomo")
    finally:
        sys.path.remove(str(BENCH))


class WordHashEmbedder:
    """Each word a fixed random direction: the dense paths run without a model."""

    model_name = "test/word-hash"
    dim = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row] += np.random.default_rng(zlib.crc32(word.encode())).standard_normal(
                    self.dim
                )
            out[row, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def tiny_locomo() -> list[dict[str, Any]]:
    s1 = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob! How was the weekend?"},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Great, I adopted a greyhound called Zephyr."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "Lovely. I started pottery classes.",
         "blip_caption": "a photo of a clay bowl", "img_url": ["x"]},
    ]  # fmt: skip
    s2 = [
        {"speaker": "Bob", "dia_id": "D2:1", "text": "Zephyr ran the marathon course with me."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "My kiln cracked the bowl, sadly."},
    ]
    qa = [
        # single-hop: only D1:2 holds "greyhound"
        {"question": "Which greyhound did Bob adopt?", "answer": "Zephyr", "category": 4,
         "evidence": ["D1:2"]},
        # multi-hop, evidence packed in one string and with a typo'd id
        {"question": "What happened to the clay bowl?", "answer": "cracked", "category": 1,
         "evidence": ["D1:3; D:2:02"]},
        # an id the conversation lacks is dropped; nothing left: not evaluated
        {"question": "Where?", "answer": "x", "category": 2, "evidence": ["D9:9"]},
        # category 5 is never evaluated
        {"question": "Which greyhound did Ann adopt?", "adversarial_answer": "Zephyr",
         "category": 5, "evidence": ["D1:2"]},
    ]  # fmt: skip
    conv = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1": s1, "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_2": s2, "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_3_date_time": "10:00 am on 9 July, 2023",  # a date key without a session
    }  # fmt: skip
    return [{"sample_id": "conv-t", "conversation": conv, "qa": qa, "observation": {},
             "session_summary": {}, "event_summary": {}}]  # fmt: skip


def test_metrics_of_a_known_ranking(bench: ModuleType) -> None:
    data = bench
    s = data.scores(["x", "a", "y", "b", "z"], ["a", "b", "c"])
    assert s["R@1"] == 0 and s["H@1"] == 0
    assert s["R@5"] == pytest.approx(2 / 3) and s["H@5"] == 1.0 and s["A@5"] == 0.0
    assert s["MRR"] == 0.5
    assert data.scores(["a", "c", "b"], ["a", "b", "c"])["A@5"] == 1.0
    table = data.mean_table([(1, {m: 1.0 for m in data.METRICS}),
                             (4, {m: 0.0 for m in data.METRICS})])  # fmt: skip
    assert table["all"]["R@10"] == 0.5 and table["multi-hop"]["R@10"] == 1.0
    assert table["single-hop"]["n"] == 1 and "temporal" not in table


def test_protocol_cleaning(bench: ModuleType, tmp_path: Path) -> None:
    data = bench
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(tiny_locomo()), encoding="utf-8")
    [conv] = data.load_locomo(path)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert (
        conv.turns[2].text
        == "Ann: Lovely. I started pottery classes. [shares a photo of a clay bowl]"
    )
    assert conv.turns[3].date.month == 6
    assert [(q.category, q.evidence) for q in conv.questions] == [
        (4, ("D1:2",)), (1, ("D1:3", "D2:2"))
    ]  # fmt: skip


def test_run_on_a_tiny_file(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locomo = bench
    (tmp_path / "locomo10.json").write_text(json.dumps(tiny_locomo()), encoding="utf-8")
    out, lists = tmp_path / "out.json", tmp_path / "lists.json"
    argv = ["--data", str(tmp_path), "--json", str(out), "--lists", str(lists)]
    assert locomo.main(argv, embedder=WordHashEmbedder()) == 0
    printed = capsys.readouterr().out
    assert "2 questions" in printed and "hybrid" in printed
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["questions"] == 2
    tables = result["tables"]
    assert set(tables) >= {"bm25", "hybrid", "keyword", "semantic", "ranker:turn",
                           "ranker:window", "ranker:dense"}  # fmt: skip
    # "greyhound" is in one turn only: the turn's own BM25 finds it first (the window
    # key finds its neighbours as well)
    for system in ("bm25", "ranker:turn"):
        assert tables[system]["single-hop"]["R@1"] == 1.0, system
        assert tables[system]["single-hop"]["MRR"] == 1.0, system
    assert tables["keyword"]["single-hop"]["H@5"] == 1.0
    # "bowl" is in both multi-hop evidence turns: keyword systems hold both in the top 5
    for system in ("bm25", "keyword"):
        assert tables[system]["multi-hop"]["A@5"] == 1.0, system
    # five turns in all: the dense ranker lists every one, so its modes do too
    records = json.loads(lists.read_text(encoding="utf-8"))
    for system in ("hybrid", "semantic"):
        assert tables[system]["multi-hop"]["A@5"] == 1.0, system
        assert sorted(records[1]["modes"][system]) == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert tables["hybrid"]["all"]["n"] == 2


def test_missing_data_is_a_skip(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locomo = bench
    assert locomo.main(["--data", str(tmp_path / "nowhere"), "--no-dense"]) == 0
    assert "skipped" in capsys.readouterr().out


def test_cv_fits_the_shipped_features_on_ten_tiny_conversations(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/locomo.py --cv on ten tiny conversations (its five folds of two): every
    configuration is scored held out and the shipped coefficients are fitted."""
    pytest.importorskip("sklearn")
    locomo = bench
    convs = [{**tiny_locomo()[0], "sample_id": f"conv-{n}"} for n in range(10)]
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps(convs), encoding="utf-8")
    lists = tmp_path / "lists.json"
    argv = ["--data", str(data), "--lists", str(lists)]
    assert locomo.main(argv, embedder=WordHashEmbedder()) == 0
    capsys.readouterr()
    out = tmp_path / "cv.json"
    argv = ["--lists", str(lists), "--data", str(data), "--json", str(out)]
    assert locomo.main(["--cv", *argv, "--vectors", str(tmp_path / "no-cache.npz")]) == 0
    printed = capsys.readouterr().out
    assert "learned: shipped, held out: R@10" in printed and "never below" in printed
    record = json.loads(out.read_text(encoding="utf-8"))
    assert set(record["results"]["coefficients hybrid"]) and record["commit"]
