"""bench/peers.py's harness on tiny generated data: its metrics, its LoCoMo reading and
every installed system really run (PMM, LangGraph's stores, bm25s; mem0 where installed),
so that the peers bench cannot silently break."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["Ana", "Ben"]
THINGS = ["zorblat", "quexo", "flimbar", "drovnik", "plusket", "warbly"]
FILLER = [
    "haha yes",
    "ok see you later",
    "how was your day",
    "pretty good thanks",
    "same as always",
    "lol true",
    "sounds fun",
    "talk tomorrow",
]


@pytest.fixture(scope="module")
def peers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_peers", ROOT / "bench" / "peers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class WordHashEmbedder:
    """Each word a fixed random direction: texts that share words are near (no model)."""

    model_name = "test/word-hash"
    dim = 64

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rng = np.random.default_rng(zlib.crc32(word.encode()))
                out[row] += rng.standard_normal(self.dim)
            out[row, 0] += 1e-3
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


def chat_data() -> dict[str, Any]:
    """Two conversations of three sessions: small talk, plus one fact per made-up word
    (``"{speaker} got a {thing}"``). Questions naming the thing are ``found``; questions
    whose answer is a small-talk turn sharing no word with them are ``lost`` (no keyword
    system can find those)."""
    conversations, questions = [], []
    for c in range(2):
        cid = f"c{c}"
        sessions = []
        for s in range(3):
            turns = []
            for t in range(12):
                speaker = NAMES[t % 2]
                text = FILLER[(t + s + c) % len(FILLER)]
                if t == 5:
                    thing = THINGS[(3 * c + s) % len(THINGS)]
                    text = f"guess what, I got a {thing} today"
                turn = {"id": f"{cid}-{s}-{t}", "speaker": speaker, "text": text}
                turns.append({**turn, "role": "user" if t % 2 == 0 else "assistant"})
            date = f"2024-0{s + 1}-0{c + 1}T10:00:00Z"
            sessions.append({"id": f"{cid}-{s}", "date": date, "turns": turns})
        conversations.append({"id": cid, "sessions": sessions})
        for s in range(3):
            thing = THINGS[(3 * c + s) % len(THINGS)]
            questions.append(
                {"id": f"{cid}-q{s}", "conversation": cid, "type": "found",
                 "question": f"Who got a {thing}?", "answer_ids": [f"{cid}-{s}-5"]}
            )  # fmt: skip
        questions.append(
            {"id": f"{cid}-lost", "conversation": cid, "type": "lost",
             "question": "Which pet is green?", "answer_ids": [f"{cid}-0-0"]}
        )  # fmt: skip
    return {"name": "tiny", "conversations": conversations, "questions": questions}


def locomo_data() -> list[dict[str, Any]]:
    """One LoCoMo-shaped sample with the README's quirks (packed and misspelt evidence,
    an unknown id, a category-5 question, a session without date key, image captions)."""
    turns1 = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a zorblat"},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "wow", "blip_caption": "a photo of a cat"},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "see you"},
    ]
    turns2 = [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "I painted a quexo"},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "nice"},
    ]
    qa = [
        {"question": "What did Ana adopt?", "evidence": ["D1:1"], "category": 4},
        {"question": "What did Ben paint and share?", "evidence": ["D:2:01; D1:2"], "category": 1},
        {"question": "Did Ben adopt a quexo?", "evidence": ["D2:1"], "category": 5},
        {"question": "When did Ana leave?", "evidence": ["D9:9", "D"], "category": 2},
    ]
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1": turns1,
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_2": turns2,
        "session_3_date_time": "2:00 pm on 9 May, 2023",  # a date without turns
    }
    return [{"sample_id": "conv-t", "conversation": conversation, "qa": qa}]


def test_score_summarize_and_percentile(peers: ModuleType) -> None:
    percentile, score, summarize = peers.percentile, peers.score, peers.summarize

    assert score(["a", "b", "a", "c"], ["c", "x"]) == {"R@10": 0.5, "R@25": 0.5, "H@10": 1.0}
    deep = [f"t{i}" for i in range(30)]
    assert score(deep, ["t12", "t3"]) == {"R@10": 0.5, "R@25": 1.0, "H@10": 1.0}
    assert score(deep, ["t20"]) == {"R@10": 0.0, "R@25": 1.0, "H@10": 0.0}
    with pytest.raises(ValueError):
        score(deep, [])
    rows = [{"category": "x", **score(deep, ["t0"])}, {"category": "y", **score(deep, ["t29"])}]
    means = summarize(rows)
    assert means["all"]["R@10"] == 0.5 and means["x"]["R@10"] == 1.0 and means["y"]["R@25"] == 0
    assert means["all"]["n"] == 2
    assert (
        percentile([5.0, 1.0, 3.0], 50) == 3.0
        and percentile(list(map(float, range(100))), 99) == 98
    )


def test_locomo_reading_follows_the_protocol(peers: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(locomo_data()), encoding="utf-8")
    data = peers.load_locomo(path)
    texts = [t.text for t in data.conversations[0].turns]
    assert texts[1] == "Ben: wow [shares a photo of a cat]" and texts[3] == "Ben: I painted a quexo"
    assert [t.role for t in data.conversations[0].turns[:2]] == ["user", "assistant"]
    assert data.conversations[0].turns[0].date is not None
    assert data.conversations[0].turns[3].date is None  # session 2 has no date key
    # category 5 and the question whose evidence is all unknown ids are left out
    assert [(q.category, q.evidence) for q in data.questions] == [
        ("single-hop", ("D1:1",)),
        ("multi-hop", ("D2:1", "D1:2")),
    ]


def run(peers: ModuleType, tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "peers.json"
    cache = tmp_path / "cache.sqlite"
    argv = ["--json", str(out), "--embed-cache", str(cache), *args]
    assert peers.main(argv, embedder=WordHashEmbedder()) == 0
    return json.loads(out.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def check_figures(result: dict[str, Any], messages: int) -> None:
    assert result["messages"] == messages
    assert result["ingest_ms_per_message"] > 0
    assert 0 < result["search_p50_ms"] <= result["search_p99_ms"]
    if result["bytes_measure"] == "files":
        assert result["bytes_per_message"] > 50  # the memory's files were measured


SYSTEMS = ["pmm", "pmm-keyword", "langgraph-memory", "langgraph-sqlite", "bm25"]


def test_every_installed_system_runs_on_a_generated_chat(
    peers: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("langgraph.store.sqlite")
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(chat_data()), encoding="utf-8")
    report = run(
        peers, tmp_path, "--datasets", "chat", "--chat", str(data), "--systems", ",".join(SYSTEMS)
    )
    results = report["datasets"]["chat"]["systems"]
    assert report["datasets"]["chat"]["questions"] == 8
    for name in SYSTEMS:
        r = results[name]
        assert "error" not in r, (name, r.get("error"))
        check_figures(r, 72)
        assert r["questions"] == 8
        assert r["cache_misses"] == 0  # embeds the item texts and questions only
        # the made-up word is in the question and in the one answer turn only
        assert r["by_category"]["found"]["R@10"] == 1.0, name
    for name in ("pmm-keyword", "bm25"):  # no shared word: keyword search cannot find it
        assert results[name]["by_category"]["lost"]["R@25"] == 0.0
        assert results[name]["R@10"] == 0.75
    assert results["langgraph-memory"]["bytes_measure"] == "rss"
    tiny = chat_data()
    texts = {f"{t['speaker']}: {t['text']}" for c in tiny["conversations"]
             for s in c["sessions"] for t in s["turns"]}  # fmt: skip
    texts |= {q["question"] for q in tiny["questions"]}
    assert report["embedding"]["cache_added"] == len(texts)  # each text embedded once
    assert report["embedding"]["cache_misses"] == 0  # every system embedded item texts only
    printed = capsys.readouterr().out
    assert report["bench"] == "bench/peers.py" and report["commit"] and report["machine"]
    assert "== chat: 2 conversations, 72 messages, 8 questions ==" in printed
    # a second run reads the vectors from the cache file instead of embedding them again
    again = run(peers, tmp_path, "--datasets", "chat", "--chat", str(data), "--systems", "bm25")
    assert "embedding" not in again  # no dense system: no model at all
    again = run(peers, tmp_path, "--datasets", "chat", "--chat", str(data), "--systems", "pmm")
    assert again["embedding"]["cache_added"] == 0


def test_locomo_shaped_file_and_a_missing_system_are_reported(
    peers: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(locomo_data()), encoding="utf-8")
    real = peers._importable
    monkeypatch.setattr(peers, "_importable", lambda m: m != "bm25s" and real(m))
    report = run(
        peers, tmp_path, "--datasets", "locomo", "--locomo", str(path),
        "--systems", "pmm-keyword,bm25",
    )  # fmt: skip
    results = report["datasets"]["locomo"]["systems"]
    assert results["bm25"]["error"].startswith("not installed: pip install bm25s")
    keyword = results["pmm-keyword"]
    check_figures(keyword, 5)
    assert set(keyword["by_category"]) == {"single-hop", "multi-hop"}
    assert keyword["by_category"]["single-hop"]["R@10"] == 1.0


def test_mem0_runs_offline_without_an_llm(peers: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("mem0")
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(chat_data()), encoding="utf-8")
    report = run(peers, tmp_path, "--datasets", "chat", "--chat", str(data), "--systems", "mem0")
    mem0 = report["datasets"]["chat"]["systems"]["mem0"]
    assert "error" not in mem0, mem0.get("error")
    check_figures(mem0, 72)
    assert mem0["by_category"]["found"]["R@10"] == 1.0


def test_no_locomo_is_a_clear_skip(
    peers: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "locomo10.json"
    assert peers.main(["--datasets", "locomo", "--locomo", str(missing)]) == 0
    out = capsys.readouterr().out
    assert f"LoCoMo not found at {missing}: skipped" in out
    assert "nothing measured" in out
