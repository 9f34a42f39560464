"""LoCoMo for bench/locomo.py: loading under the shared protocol, the metrics, and plain
BM25 over raw turns (``bm25s``).

    from locomo_data import load_locomo, scores, mean_table

    convs = load_locomo(Path("../shared/data/locomo/locomo10.json"))
    convs[0].turns[0]          # Turn(dia_id='D1:1', speaker='Caroline', session=1, ...)
    convs[0].questions[0]      # Question(question=..., category=2, evidence=('D1:3',))
    scores(["D1:3", "D1:1"], ("D1:3",))["R@1"]   # 1.0

The data is CC BY-NC 4.0 and stays in ``../shared/data/locomo/``: nothing here copies it.
Protocol (its README): one memory per conversation, one item per turn with the text
``"{speaker}: {text}"`` (+ ``" [shares {blip_caption}]"``), categories 1-4 only, evidence
ids split on ``;``, ``,`` and spaces, normalised (``D:?(\\d+):0*(\\d+)``) and kept only when
the conversation has them: 1,536 questions.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

KS = (1, 5, 10, 25)
METRICS = (*(f"R@{k}" for k in KS), *(f"H@{k}" for k in KS), *(f"A@{k}" for k in KS), "MRR")
"""recall@k, hit@k, all@k and MRR (first evidence turn in the top 50, else 0)."""
MRR_DEPTH = 50
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"^D:?(\d+):0*(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    session: int
    date: datetime
    text: str
    """As the protocol stores it: ``"{speaker}: {text}"`` (+ the image caption)."""


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]


def parse_date(text: str) -> datetime:
    """LoCoMo's session time (``"1:56 pm on 8 May, 2023"``) as a naive datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def turn_text(turn: Mapping[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def clean_evidence(evidence: Sequence[str], known: set[str]) -> tuple[str, ...]:
    """The README's three steps: split, normalise, drop ids the conversation lacks."""
    out: list[str] = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", item):
            m = _EVIDENCE.match(part.strip())
            if m:
                dia = f"D{int(m.group(1))}:{int(m.group(2))}"
                if dia in known and dia not in out:
                    out.append(dia)
    return tuple(out)


def load_locomo(path: Path) -> list[Conversation]:
    """Every conversation with its turns (chronological, session by session) and its
    category 1-4 questions that keep at least one valid evidence turn."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = sample["conversation"]
        sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)))
        turns = [
            Turn(
                t["dia_id"],
                t["speaker"],
                n,
                parse_date(conv[f"session_{n}_date_time"]),
                turn_text(t),
            )
            for n in sessions
            for t in conv[f"session_{n}"]
        ]
        known = {t.dia_id for t in turns}
        questions = []
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = clean_evidence(qa.get("evidence") or [], known)
            if evidence:
                questions.append(Question(qa["question"], int(qa["category"]), evidence))
        out.append(
            Conversation(
                sample["sample_id"], (conv["speaker_a"], conv["speaker_b"]), turns, questions
            )
        )
    return out


def scores(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """The metrics of one ranked list of turn ids against the evidence turns.

    >>> s = scores(["a", "x", "b"], ["a", "b"])
    >>> s["R@1"], s["H@1"], s["A@1"], s["A@5"], s["MRR"]
    (0.5, 1.0, 0.0, 1.0, 1.0)
    """
    wanted = set(evidence)
    out: dict[str, float] = {}
    for k in KS:
        found = len(wanted.intersection(ranked[:k]))
        out[f"R@{k}"] = found / len(wanted)
        out[f"H@{k}"] = 1.0 if found else 0.0
        out[f"A@{k}"] = 1.0 if found == len(wanted) else 0.0
    first = next((r for r, t in enumerate(ranked[:MRR_DEPTH], 1) if t in wanted), None)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


def mean_table(rows: Sequence[tuple[int, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """``(category, scores)`` rows -> {"all" | category name: {metric: mean, "n": count}}."""
    groups: dict[str, list[Mapping[str, float]]] = {"all": [r for _, r in rows]}
    for cat, name in CATEGORIES.items():
        groups[name] = [r for c, r in rows if c == cat]
    return {
        name: {"n": float(len(rs)), **{m: statistics.fmean(r[m] for r in rs) for m in METRICS}}
        for name, rs in groups.items()
        if rs
    }


SMALL_STOPWORDS = (
    "a an the and or of to in on at for with is are was were be been do did does i you he "
    "she it we they my your his her what when where who how which that this"
).split()
"""The baseline's small stopword list (with it, ``bm25s`` gives the README's reference
figures: R@1 0.288, R@5 0.500, R@10 0.567 over the 1,536 questions)."""
TOKENS = r"(?u)\b\w+\b"


class PlainBM25:
    """Plain BM25 over one conversation's raw turn texts with ``bm25s`` (k1 1.2, b 0.75,
    lower-cased alphanumeric tokens, :data:`SMALL_STOPWORDS`, no stemming): the
    protocol's baseline."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        import bm25s

        self._bm25s = bm25s
        self.ids = list(ids)
        self.model = bm25s.BM25(k1=1.2, b=0.75)
        self.model.index(self._tokens(texts), show_progress=False)

    def _tokens(self, texts: Sequence[str]) -> Any:
        return self._bm25s.tokenize(
            list(texts), stopwords=SMALL_STOPWORDS, token_pattern=TOKENS, show_progress=False
        )

    def search(self, query: str, limit: int) -> list[str]:
        tokens = self._tokens([query])
        if not tokens.vocab:
            return []
        docs, found = self.model.retrieve(
            tokens, k=min(limit, len(self.ids)), show_progress=False, n_threads=1
        )
        return [self.ids[int(d)] for d, s in zip(docs[0], found[0], strict=True) if s > 0]
