"""bench/fusion_signals.py: its query-time signals, the gates it scores on top of the
shipped policy, the rule check and the cross-validation, on hand-made ranker lists."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from pmm.text.window_keys import DEFAULT_WINDOW_RADIUS

BENCH = Path(__file__).resolve().parents[2] / "bench"
LEXICAL = "Which cello teacher did Mara hire?"  # 2 stop words of 6
WORDED_OTHERWISE = "How do I get to work these days?"  # 6 stop words of 8


@pytest.fixture(scope="module")
def signals() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("fusion_signals")
    finally:
        sys.path.remove(str(BENCH))


def row(dataset: str, conv: str, kind: str) -> dict[str, Any]:
    """A question of ``kind``: ``lexical`` is found first by both keyword keys and not at
    all by the dense ranker; ``paraphrase`` only by the dense ranker, 6th, and its question
    holds only common words, all in the keyword hits (coverage 1: the shipped policy's
    coverage switch keeps the keyword weights)."""
    keyword = [f"{conv}-k{n}" for n in range(12)]
    dense = [f"{conv}-d{n}" for n in range(10)]
    if kind == "lexical":
        answer, question = f"{conv}-a", LEXICAL
        keyword = [answer, *keyword]
    else:
        answer, question = f"{conv}-p", WORDED_OTHERWISE
        dense = [*dense[:5], answer, *dense[5:]]
    lists = {
        "turn": keyword,
        f"window{DEFAULT_WINDOW_RADIUS}@1": keyword,
        f"window{DEFAULT_WINDOW_RADIUS}@3": keyword,
        "dense": dense,
    }
    ids = dict.fromkeys([*keyword, *dense])
    return {
        "type": kind,
        "question": question,
        "conv": conv,
        "dataset": dataset,
        "answers": {answer},
        "temporal": False,
        "lists": lists,
        "scores": {
            "turn": [10.0 - n / 2 for n in range(len(keyword))],
            "dense": [0.9 - n / 20 for n in range(len(dense))],
        },
        "coverage": 1.0,
        "coverage_idf": 1.0,
        "order": {t: n for n, t in enumerate(ids)},
    }


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return [
        row(dataset, f"{dataset}{n}", kind)
        for dataset in ("chat", "para")
        for n in range(4)
        for kind in ("lexical", "paraphrase")
    ]


def test_signals_read_the_lists_and_the_question(
    signals: ModuleType, rows: list[dict[str, Any]]
) -> None:
    lexical, paraphrase = rows[0], rows[1]
    assert signals.SIGNALS["stop-word share"](lexical) == pytest.approx(2 / 6)
    assert signals.SIGNALS["stop-word share"](paraphrase) == pytest.approx(6 / 8)
    assert signals.SIGNALS["search terms"](paraphrase) == 2  # "work", "days"
    assert signals.SIGNALS["dense top-1 cosine"](lexical) == pytest.approx(0.9)
    assert signals.SIGNALS["dense margin 1-10"](lexical) == pytest.approx(9 / 20)
    assert signals.SIGNALS["dense∩turn top10"](lexical) == 0
    assert signals.SIGNALS["bm25 drop 1-10"](lexical) == pytest.approx(4.5 / 10)
    same = {**lexical, "lists": {**lexical["lists"], "dense": lexical["lists"]["turn"]}}
    assert signals.SIGNALS["dense∩window top10"](same) == 10


def test_a_gate_on_the_question_rescues_what_only_the_dense_ranker_finds(
    signals: ModuleType, rows: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    choose = np.ones(len(rows), dtype=bool)
    names, table, singles = signals.gates(rows, choose, pairs=False)
    kind = np.array([r["type"] for r in rows])
    assert names[0] == "default"
    assert table[kind == "lexical", 0].mean() == 1.0
    assert table[kind == "paraphrase", 0].mean() == 0.0  # 12 keyword hits outrank it
    assert singles["dense"][kind == "paraphrase"].mean() == 1.0
    chat = np.array([r["dataset"] == "chat" for r in rows])
    assert not signals.rule_holds(table[:, 0], rows, chat, singles)
    # a stop-word gate that switches to the dense ranker finds both kinds
    fixed = names.index("stop-word share >= 0.75: semantic")
    assert table[:, fixed].mean() == 1.0
    assert signals.rule_holds(table[:, fixed], rows, chat, singles)
    # ... and is what every fold of the cross-validation picks, or one as good
    signals.cross_validate(names, table, rows, choose, 4)
    out = capsys.readouterr().out
    assert out.count("chose ") == 4 and "chose default" not in out
    assert "held-out mean over folds: chosen 1.0000, default 0.5000" in out
    signals.frontier(names, table, rows, singles, "para")
    assert "para 1.000: " in capsys.readouterr().out
