"""Write bench/data/heldout_dataset.json: a held-out chat benchmark for recall.

Written independently of make_chat_dataset.py (own arcs, own small talk) so that recall
settings tuned on the chat dataset can be checked on data they were not shaped on. Two
people chat over 15-20 dated sessions; story arcs (heldout_arcs.py) are woven into small
talk (heldout_talk.py). Same JSON layout as chat_dataset.json, so
``python bench/recall.py --data bench/data/heldout_dataset.json`` and
``python bench/fusion.py --data bench/data/heldout_dataset.json`` load it unchanged.

    python bench/data/make_heldout_dataset.py                 # writes the default file
    python bench/data/make_heldout_dataset.py --conversations 2 --out /tmp/h.json

Seeded and deterministic, stdlib only. ``build`` runs ``check`` on its output: every
question has evidence turns, and those turns contain the answer's key words.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_talk as talk
from heldout_arcs import ARCS, Beat, Ctx, Person

OUT = Path(__file__).resolve().parent / "heldout_dataset.json"
SEED = 7919
PAIRS = [
    ("siblings", ("Noor", "f"), ("Idris", "m")),
    ("coworkers", ("Beatriz", "f"), ("Callum", "m")),
    ("old classmates", ("Yara", "f"), ("Desmond", "m")),
    ("couple", ("Priya", "f"), ("Mateo", "m")),
    ("neighbours", ("Hollis", "m"), ("Agnes", "f")),
    ("mentor", ("Rosalind", "f"), ("Emeka", "m")),
    ("cousins", ("Leontine", "f"), ("Soren", "m")),
    ("roommates past", ("Farah", "f"), ("Juno", "f")),
    ("gym buddies", ("Teodor", "m"), ("Wesley", "m")),
    ("friends", ("Ximena", "f"), ("Annika", "f")),
    ("siblings", ("Rafferty", "m"), ("Delphine", "f")),
    ("coworkers", ("Kwame", "m"), ("Signe", "f")),
]


def session_dates(rng: random.Random, n: int) -> list[date]:
    day = date(2024, 1, 8) + timedelta(days=rng.randint(0, 150))
    out = []
    for _ in range(n):
        out.append(day)
        day += timedelta(days=rng.randint(5, 17))
    return out


def weave(
    rng: random.Random, beats: list[tuple[int, Beat]], relation: str
) -> list[tuple[str, str, tuple[int, str] | None]]:
    """One session's turns: opener, the beats in random order with small talk between, a
    closer. Each turn is (slot A/B, text, (arc index, tag) or None)."""
    rng.shuffle(beats)
    out: list[tuple[str, str, tuple[int, str] | None]] = [(s, t, None) for s, t in talk.opener(rng)]
    gaps = [0] * (len(beats) + 1)
    for _ in range(rng.randint(3, 7)):
        gaps[rng.randrange(len(gaps))] += 1
    seen: set[str] = set()
    for i in range(len(beats) + 1):
        for _ in range(gaps[i]):
            lines = talk.exchange(rng, relation)
            for _retry in range(4):  # the same snippet twice in one session reads wrong
                if lines[0][1] not in seen:
                    break
                lines = talk.exchange(rng, relation)
            seen.add(lines[0][1])
            out += [(s, talk.typo(t, rng), None) for s, t in lines]
        if i < len(beats):
            arc, beat = beats[i]
            for slot, text, tag in beat.lines:
                if rng.random() < 0.3 and not text.startswith("["):
                    text = text.lower()
                out.append((slot, text, (arc, tag) if tag else None))
            if rng.random() < 0.3:
                last = beat.lines[-1][0]
                out.append(("B" if last == "A" else "A", talk.reaction(rng), None))
    out += [(s, t, None) for s, t in talk.closer(rng)]
    return out


def conversation(
    rng: random.Random, n: int, relation: str, a: Person, b: Person
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cid = f"held{n:02d}"
    dates = session_dates(rng, rng.randint(16, 20))
    ctx = Ctx(rng, {"A": a, "B": b}, dates, used={repr(a), repr(b)})
    plan = [(arc, owner) for arc in ARCS for owner in "AB"]
    rng.shuffle(plan)
    per_session: dict[int, list[tuple[int, Beat]]] = {}
    questions = []
    for k, (arc, owner) in enumerate(plan[: rng.randint(19, 22)]):
        beats, qs = arc(ctx, owner)
        for beat in beats:
            slots = {"X": owner, "Y": "B" if owner == "A" else "A"}
            beat.lines = [(slots[s], t, g) for s, t, g in beat.lines]
            per_session.setdefault(beat.session, []).append((k, beat))
        questions += [(k, q) for q in qs]
    tag_ids: dict[tuple[int, str], str] = {}
    sessions = []
    for si, day in enumerate(dates):
        sid = f"{cid}-{si + 1}"
        start = datetime(day.year, day.month, day.day, rng.randint(8, 22), rng.randint(0, 59))
        turns = []
        for ti, (slot, text, tag) in enumerate(weave(rng, per_session.get(si, []), relation), 1):
            start += timedelta(seconds=rng.randint(8, 240))
            tid = f"{sid}-{ti:03d}"
            if tag:
                tag_ids[tag] = tid
            who = a if slot == "A" else b
            turns.append(
                {
                    "id": tid,
                    "speaker": who.name,
                    "role": "user" if slot == "A" else "assistant",
                    "date": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "text": text,
                }
            )
        sessions.append(
            {"id": sid, "date": f"{day.isoformat()}T{turns[0]['date'][11:]}", "turns": turns}
        )
    out_q = []
    for qi, (k, q) in enumerate(questions, 1):
        out_q.append(
            {
                "id": f"{cid}-q{qi:03d}",
                "conversation": cid,
                "type": q.kind,
                "question": q.question,
                "answer_ids": sorted({tag_ids[(k, t)] for t in q.tags},
                                     key=lambda i: [int(n) for n in i.split("-")[1:]]),
                "answer": q.answer,
                "keys": q.keys,
            },
        )  # fmt: skip
    conv = {
        "id": cid,
        "relation": relation,
        "speakers": {"user": a.name, "assistant": b.name},
        "sessions": sessions,
    }
    return conv, out_q


def build(seed: int = SEED, conversations: int = len(PAIRS)) -> dict[str, Any]:
    rng = random.Random(seed)
    convs, questions = [], []
    for n, (relation, a, b) in enumerate(PAIRS[:conversations], 1):
        conv, qs = conversation(random.Random(rng.random()), n, relation, Person(*a), Person(*b))
        convs.append(conv)
        questions += qs
    data = {
        "name": "pmm-heldout-v1",
        "description": "Held-out casual chats between two people (siblings, coworkers, a couple, "
        "neighbours, a mentor and student...) over 16-20 dated sessions; story arcs woven into "
        "small talk, plans that change, photo captions, pronouns. Written independently of "
        "make_chat_dataset.py for evaluation only. Speaker A has role 'user', B 'assistant'. "
        "Question types: single, multi, temporal, commonsense; 'keys' are words the evidence "
        f"turns contain. Generated by bench/data/make_heldout_dataset.py with seed {seed}.",
        "seed": seed,
        "conversations": convs,
        "questions": questions,
    }
    check(data)
    return data


def check(data: dict[str, Any]) -> None:
    """Raise ValueError unless every question has evidence turns in its own conversation
    that contain all of its key words (case-insensitive), and every ``multi`` question's
    evidence spans two or more sessions."""
    text = {
        t["id"]: (c["id"], t["text"].lower())
        for c in data["conversations"]
        for s in c["sessions"]
        for t in s["turns"]
    }
    for q in data["questions"]:
        if not q["answer_ids"]:
            raise ValueError(f"{q['id']}: no evidence turns")
        if any(text[i][0] != q["conversation"] for i in q["answer_ids"]):
            raise ValueError(f"{q['id']}: evidence outside its conversation")
        joined = " ".join(text[i][1] for i in q["answer_ids"])
        missing = [k for k in q["keys"] if k.lower() not in joined]
        if not q["keys"] or missing:
            raise ValueError(f"{q['id']}: evidence lacks {missing or 'keys'}")
        if q["type"] == "multi" and len({i.rsplit("-", 1)[0] for i in q["answer_ids"]}) < 2:
            raise ValueError(f"{q['id']}: multi question with evidence in one session")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--conversations", type=int, default=len(PAIRS))
    args = parser.parse_args(argv)
    data = build(args.seed, args.conversations)
    args.out.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"wrote {args.out}: {len(data['conversations'])} conversations, "
        f"{len(data['questions'])} questions"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
