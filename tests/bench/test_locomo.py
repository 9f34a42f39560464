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
def bench() -> Iterator[tuple[ModuleType, ModuleType]]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("locomo"), importlib.import_module("locomo_data")
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


def test_metrics_of_a_known_ranking(bench: tuple[ModuleType, ModuleType]) -> None:
    _, data = bench
    s = data.scores(["x", "a", "y", "b", "z"], ["a", "b", "c"])
    assert s["R@1"] == 0 and s["H@1"] == 0
    assert s["R@5"] == pytest.approx(2 / 3) and s["H@5"] == 1.0 and s["A@5"] == 0.0
    assert s["MRR"] == 0.5
    assert data.scores(["a", "c", "b"], ["a", "b", "c"])["A@5"] == 1.0
    table = data.mean_table([(1, {m: 1.0 for m in data.METRICS}),
                             (4, {m: 0.0 for m in data.METRICS})])  # fmt: skip
    assert table["all"]["R@10"] == 0.5 and table["multi-hop"]["R@10"] == 1.0
    assert table["single-hop"]["n"] == 1 and "temporal" not in table


def test_protocol_cleaning(bench: tuple[ModuleType, ModuleType], tmp_path: Path) -> None:
    _, data = bench
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
    bench: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locomo, _ = bench
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
    bench: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locomo, _ = bench
    assert locomo.main(["--data", str(tmp_path / "nowhere"), "--no-dense"]) == 0
    assert "skipped" in capsys.readouterr().out


def test_refit_on_the_same_lists_changes_nothing(
    bench: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/locomo_refit.py on ten tiny conversations (its five folds of two): the same lists
    before and after give the same three rows and no changed question; lists of other
    questions are refused."""
    locomo, _ = bench
    refit = importlib.import_module("locomo_refit")
    convs = []
    for n in range(10):
        [conv] = tiny_locomo()
        convs.append({**conv, "sample_id": f"conv-{n}"})
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps(convs), encoding="utf-8")
    lists = tmp_path / "lists.json"
    assert (
        locomo.main(["--data", str(data), "--lists", str(lists)], embedder=WordHashEmbedder()) == 0
    )
    capsys.readouterr()
    assert refit.main(["--before", str(lists), "--after", str(lists), "--data", str(data)]) == 0
    printed = capsys.readouterr().out
    for mode in ("hybrid", "keyword"):
        block = printed.split(f"{mode} (")[1].split("\n\n")[0].splitlines()
        rows = [
            line.split(maxsplit=1)[1]
            for line in block
            if line.strip().startswith(("before", "after"))
        ]
        assert len(rows) == 3 and len(set(rows)) == 1, block
    assert "R@25 " not in printed.replace("R@10/R@25/H@10", "")  # no question changed
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(json.loads(lists.read_text(encoding="utf-8"))[::-1]), encoding="utf-8"
    )
    with pytest.raises(SystemExit, match="different questions"):
        refit.main(["--before", str(lists), "--after", str(other), "--data", str(data)])
    assert refit.main(["--before", str(lists), "--after", str(lists),
                       "--data", str(tmp_path / "nowhere.json")]) == 0  # fmt: skip
    assert "skipped" in capsys.readouterr().out


def test_repeats_ab_times_recall_with_and_without_the_collapse(
    bench: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/repeats_ab.py on the tiny file: both sides timed, and the collapse is back on
    after the run (recall shows a repeated utterance once)."""
    import pmm.recall.sources as sources

    ab = importlib.import_module("repeats_ab")
    collapse = (sources.one_copy, sources.utterance)
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps(tiny_locomo()), encoding="utf-8")
    assert ab.main(["--data", str(data), "--rounds", "2"]) == 0
    printed = capsys.readouterr().out
    assert "2 questions x 2 rounds, 5 turns" in printed
    assert "with    the repeat collapse: p50" in printed and "p50 ratio" in printed
    assert (sources.one_copy, sources.utterance) == collapse


def test_slot_variants_are_what_they_say_and_leave_the_shipped_slots(
    bench: tuple[ModuleType, ModuleType], tmp_path: Path
) -> None:
    """bench/locomo_slots.py: each variant's slots; a run (here skipped: no data) puts
    PMM's own slots back."""
    from pmm.recall import slots

    variants = importlib.import_module("locomo_slots")
    shipped = dict(slots.SLOTS)
    broad = variants.variant("broad")
    assert set(broad) == {"job", "home", "pet"}
    assert all(not s.attributes for s in variants.variant("broad-words").values())
    assert all(not s.words and s.idiom is None for s in variants.variant("broad-facts").values())
    assert broad["job"].asks.search("What career path has Caroline decided to pursue?")
    assert not slots.asked_slots("What career path has Caroline decided to pursue?")
    assert variants.main(["--variant", "broad", "--data", str(tmp_path / "none")]) == 0
    assert shipped == slots.SLOTS
    with pytest.raises(SystemExit):
        variants.variant("nope")


def test_ceiling_splits_the_evidence_three_ways(
    bench: tuple[ModuleType, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/locomo_ceiling.py on ten tiny conversations: the dense ranker lists all five
    turns, so the union of the lists holds every evidence turn at depth 10, the hybrid
    fusion loses none to the candidate cut, and each mode's three shares add up to 1."""
    locomo, _ = bench
    ceiling = importlib.import_module("locomo_ceiling")
    convs = [{**tiny_locomo()[0], "sample_id": f"conv-{n}"} for n in range(10)]
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps(convs), encoding="utf-8")
    lists = tmp_path / "lists.json"
    argv = ["--data", str(data), "--lists", str(lists), "--depth", "300"]
    assert locomo.main(argv, embedder=WordHashEmbedder()) == 0
    capsys.readouterr()
    assert ceiling.main(["--lists", str(lists), "--data", str(data)]) == 0
    printed = capsys.readouterr().out
    cells = {
        line.split()[0]: [float(x) for x in line.split()[1:]]
        for line in printed.splitlines()
        if line.startswith("  union@") or line.startswith("  dense@")
    }
    assert cells["union@10"][0] == 1.0 and cells["dense@10"][0] == 1.0
    for mode in ("hybrid", "keyword"):
        block = printed.split(f"fusion, {mode}")[1].split("\n\n")[0].splitlines()
        shares = [float(line[24:].split()[0]) for line in block[2:5]]  # the 'all' column
        assert sum(shares) == pytest.approx(1.0), block
        if mode == "hybrid":
            assert shares[2] == 0.0, block  # in no list
    assert "0 of 30 evidence turns" in printed  # 3 per conversation


def test_sessions_ranked_by_their_turns(bench: tuple[ModuleType, ModuleType]) -> None:
    """Two-stage recall's first stage (bench/locomo_stages.py): BM25 over each session's
    concatenated turns puts the session holding the question's rare words first."""
    _, data = bench
    stages = importlib.import_module("locomo_stages")
    conv = data.Conversation("c", ("Ann", "Bob"), [
        data.Turn("D1:1", "Ann", 1, data.parse_date("1:56 pm on 8 May, 2023"), "Ann: kiln bowl"),
        data.Turn("D2:1", "Bob", 2, data.parse_date("1:56 pm on 9 May, 2023"), "Bob: greyhound"),
        data.Turn("D2:2", "Ann", 2, data.parse_date("1:56 pm on 9 May, 2023"), "Ann: Zephyr"),
    ], [])  # fmt: skip
    assert stages.session_order_bm25(conv, "Is Zephyr a greyhound?") == [2]
    assert stages.session_order_bm25(conv, "the kiln") == [1]
    # the same under PMM's own words (stemmed: "greyhounds" finds "greyhound")
    assert stages.session_order_stemmed(conv, "Are there greyhounds?") == [2]
    assert stages.session_order_stemmed(conv, "kilns and bowls") == [1]
    assert stages.session_of(conv) == {1: 1, 2: 2, 3: 2}
