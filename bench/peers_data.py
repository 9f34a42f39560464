"""Datasets and metrics of bench/peers.py: LoCoMo and the chat dataset in one shape, and
the scoring every system gets.

    from peers_data import load_locomo, load_chat, score, summarize

    data = load_locomo(Path("../shared/data/locomo/locomo10.json"), conversations=2)
    data.conversations[0].turns[0].text      # 'Caroline: Hey Mel! Good to see you!'
    row = score(["D1:3", "D2:8"], ("D2:8",))  # {'R@10': 1.0, 'R@25': 1.0, 'H@10': 1.0}
    summarize([{"category": "single-hop", **row}])["all"]["R@10"]   # 1.0

LoCoMo follows the retrieval-only protocol of ../shared/data/locomo/README.md: one item per
turn, ``"{speaker}: {text}"`` plus ``" [shares {blip_caption}]"`` when the turn shares an
image; questions of categories 1-4 whose evidence (normalised: split on ``;``, ``,`` and
spaces, ``D:?(s):0*(t)`` -> ``Ds:t``, ids not in the conversation dropped) is not empty;
1,536 questions over the 10 conversations. The data is read where it lies (CC BY-NC 4.0):
never copied into the repository.

The chat dataset (bench/data/chat_dataset.json) gets the same item text, ``"{speaker}:
{text}"`` (its turns carry no name), and its question types as categories.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

KS = (10, 25)
"""Recall cut-offs reported (R@10, R@25); H@10 (any evidence turn in the top 10) too."""
DEPTH = max(KS)

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA_ID = re.compile(r"^D:?(\d+):0*(\d+)$")


@dataclass(frozen=True, slots=True)
class Turn:
    """One memory item: ``id`` is the dataset's turn id (LoCoMo ``dia_id``)."""

    id: str
    speaker: str
    role: str  # user or assistant (the conversation's first / second speaker)
    text: str  # the item text every system stores
    session: str
    date: datetime | None


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    conversation: str
    text: str
    evidence: tuple[str, ...]
    category: str


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]

    @property
    def n_turns(self) -> int:
        return sum(len(c.turns) for c in self.conversations)

    def questions_of(self, conversation: str) -> list[Question]:
        return [q for q in self.questions if q.conversation == conversation]

    def texts(self) -> list[str]:
        """Every item text and question (what a dense system embeds)."""
        out = [t.text for c in self.conversations for t in c.turns]
        return out + [q.text for q in self.questions]


def _locomo_date(text: str) -> datetime | None:
    try:  # "1:56 pm on 8 May, 2023"
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def normalise_evidence(raw: Iterable[str], known: set[str]) -> tuple[str, ...]:
    """LoCoMo evidence ids cleaned as its README says (order kept, duplicates dropped).

    >>> normalise_evidence(["D8:6; D9:17", "D:1:3", "D30:05", "D"], {"D8:6", "D1:3", "D30:5"})
    ('D8:6', 'D1:3', 'D30:5')
    """
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _DIA_ID.match(part.strip())
            if match:
                dia = f"D{int(match[1])}:{int(match[2])}"
                if dia in known and dia not in out:
                    out.append(dia)
    return tuple(out)


def load_locomo(path: Path, conversations: int = 0, limit: int = 0) -> Dataset:
    """LoCoMo under the protocol above: the first ``conversations`` (0 = all), at most
    ``limit`` questions of each (0 = all)."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    if conversations > 0:
        samples = samples[:conversations]
    convs: list[Conversation] = []
    questions: list[Question] = []
    for sample in samples:
        cid = sample["sample_id"]
        conv = sample["conversation"]
        roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
        numbers = sorted(
            int(m[1])
            for key, value in conv.items()
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(value, list)
        )
        turns: list[Turn] = []
        for n in numbers:
            when = _locomo_date(conv.get(f"session_{n}_date_time", ""))
            for raw in conv[f"session_{n}"]:
                text = f"{raw['speaker']}: {raw['text']}"
                if raw.get("blip_caption"):
                    text += f" [shares {raw['blip_caption']}]"
                role = roles.get(raw["speaker"], "user")
                turns.append(Turn(raw["dia_id"], raw["speaker"], role, text, f"s{n}", when))
        known = {t.id for t in turns}
        kept = 0
        for number, qa in enumerate(sample["qa"]):
            category = LOCOMO_CATEGORIES.get(int(qa.get("category", 0)))
            evidence = normalise_evidence(qa.get("evidence") or [], known)
            if category is None or not evidence or (limit and kept >= limit):
                continue
            kept += 1
            questions.append(Question(f"{cid}-q{number}", cid, qa["question"], evidence, category))
        convs.append(Conversation(cid, tuple(turns)))
    return Dataset("locomo", tuple(convs), tuple(questions))


def load_chat(path: Path, conversations: int = 0, limit: int = 0) -> Dataset:
    """The generated chat dataset (the shape bench/recall.py reads), same options."""
    data = json.loads(path.read_text(encoding="utf-8"))
    raw_convs = (
        data["conversations"][:conversations] if conversations > 0 else data["conversations"]
    )
    convs: list[Conversation] = []
    for c in raw_convs:
        turns = []
        for s in c["sessions"]:
            for t in s["turns"]:
                when = t.get("date") or s.get("date")
                date = datetime.fromisoformat(when.replace("Z", "+00:00")) if when else None
                role = t.get("role") or "user"
                text = f"{t['speaker']}: {t['text']}"
                turns.append(Turn(t["id"], t["speaker"], role, text, s["id"], date))
        convs.append(Conversation(c["id"], tuple(turns)))
    kept_ids = {c.id for c in convs}
    known = {t.id for c in convs for t in c.turns}
    per_conv: dict[str, int] = defaultdict(int)
    questions = []
    for q in data["questions"]:
        if q["conversation"] not in kept_ids or (limit and per_conv[q["conversation"]] >= limit):
            continue
        missing = [i for i in q["answer_ids"] if i not in known]
        if missing:
            raise SystemExit(f"{path}: question {q['id']} names unknown turns {missing}")
        per_conv[q["conversation"]] += 1
        questions.append(
            Question(q["id"], q["conversation"], q["question"], tuple(q["answer_ids"]), q["type"])
        )
    return Dataset("chat", tuple(convs), tuple(questions))


# -- metrics -------------------------------------------------------------------------------


def score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """R@k = share of the evidence turns in the top k (k in ``KS``) of ``ranked`` (turn ids,
    best first; duplicates after the first are ignored), H@10 = any evidence in the top 10.

    >>> score(["a", "b", "a", "c"], ["c", "x"])
    {'R@10': 0.5, 'R@25': 0.5, 'H@10': 1.0}
    """
    if not evidence:
        raise ValueError("a question without evidence cannot be scored")
    unique = list(dict.fromkeys(ranked))
    wanted = set(evidence)
    out = {f"R@{k}": len(wanted & set(unique[:k])) / len(wanted) for k in KS}
    out["H@10"] = float(bool(wanted & set(unique[:10])))
    return out


METRICS = (*(f"R@{k}" for k in KS), "H@10")


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Macro means of each metric over ``rows`` (each a :func:`score` dict with
    ``category``): under ``"all"`` and under each category, with ``n``."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups["all"].append(row)
        groups[row["category"]].append(row)
    return {
        name: {"n": float(len(g)), **{m: sum(r[m] for r in g) / len(g) for m in METRICS}}
        for name, g in groups.items()
    }


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``, nearest-rank.

    >>> percentile([4.0, 1.0, 3.0, 2.0], 50), percentile([4.0, 1.0, 3.0, 2.0], 99)
    (2.0, 4.0)
    """
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (what the system left on disk)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except FileNotFoundError:  # a temp file removed while we walk
                continue
    return total


def rss_bytes() -> int:
    """This process's resident memory now (Linux /proc; 0 where it cannot be read)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")
