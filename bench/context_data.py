"""Data, metric and reports of bench/context.py: dialogs (LoCoMo or generated), the
long-message variant, "evidence in context" and "answer in context", packing lines into a
budget, the tables of records and the cross-validation by conversation.

    from context_data import load_dialogs, generated_dialogs, long_messages, Evidence, pack

    dialogs = load_dialogs(Path("../shared/data/locomo/locomo10.json"), questions=40)
    dialog = dialogs[0]                  # Dialog(id='conv-26', turns=[...], questions=[...])
    long = long_messages(dialog)         # runs of one speaker in a session: one message
    ev = Evidence(dialog.turns)          # each turn's unique 8-grams, computed once
    ev.share(("D1:3", "D2:8"), context_text)     # 0.5: one of the two turns is shown
    answer_in(dialog.questions[0].answer, context_text)   # True / False / None (no answer)
    text, tokens = pack(lines, budget, counter.count)     # lines that fit, never over
    summary(records)["thread"]["pmm"][1000]["evidence"]  # records of Runner.evaluate
    cross_validate(runner, dialogs, ["thread"], [1000], parse_grid("recall_k=5,10"), {})

The metric (issue 37): a turn's words are its text after the speaker label (the stored
protocol text ``"{speaker}: {text}"`` plus ``" [shares {caption}]"``), lowercased, with
punctuation dropped (deleted: ``don't`` -> ``dont``; the context is normalised the same way).
A turn counts as in the context when any run of :data:`NGRAM` consecutive words of it that
no other turn of the conversation holds occurs there; a turn of fewer words counts when all
of it occurs (as a run of whole words). A turn of :data:`NGRAM` words or more with no unique
run (a repeated turn) can never count: :attr:`Evidence.unmatchable` lists them.

LoCoMo is CC BY-NC 4.0 and is read where it lies (``../shared/data/locomo/``): nothing here
copies it. :func:`generated_dialogs` makes a small made-up dataset of the same shape (for
tests, and for ``--quick`` where LoCoMo is absent).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from locomo import CATEGORIES, clean_evidence, load_locomo

NGRAM = 8
SYSTEMS = ("pmm", "buffer", "half", "bm25", "recall", "mem0", "langgraph")
_PUNCT = re.compile(r"[^\w\s]+")


@dataclass(frozen=True)
class Item:
    """One stored message: a turn (or, in the long variant, a run of turns)."""

    id: str
    speaker: str
    role: str  # "user" (the first speaker) or "assistant"
    session: int
    date: datetime
    text: str  # what is stored: "{speaker}: {text}" (+ caption)
    turns: tuple[str, ...]  # the dia_ids it holds


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str


@dataclass(frozen=True)
class Dialog:
    id: str
    speakers: tuple[str, str]
    turns: list[Item]
    """Every turn, chronological (the unit of the metric)."""
    questions: list[Question]
    items: list[Item] | None = None
    """What is stored: ``turns`` (default) or the long variant's messages."""

    @property
    def stored(self) -> list[Item]:
        return self.items if self.items is not None else self.turns


def normal_words(text: str) -> list[str]:
    """Lowercased words with punctuation deleted (the metric's normalisation)."""
    return _PUNCT.sub("", text.lower()).split()


def body(text: str, speaker: str) -> str:
    """A stored turn's text after its speaker label."""
    prefix = f"{speaker}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


class Evidence:
    """Each turn's unique :data:`NGRAM`-grams (or, under :data:`NGRAM` words, its words),
    computed once per conversation; :meth:`share` scores one context."""

    def __init__(self, turns: Sequence[Item]) -> None:
        self.words = {t.id: normal_words(body(t.text, t.speaker)) for t in turns}
        grams = {tid: _grams(ws) for tid, ws in self.words.items()}
        held = Counter(g for gs in grams.values() for g in gs)
        self.unique = {tid: {g for g in gs if held[g] == 1} for tid, gs in grams.items()}
        self.unmatchable = sorted(
            tid for tid, ws in self.words.items() if len(ws) >= NGRAM and not self.unique[tid]
        )

    def found(self, turn_id: str, context: ContextText) -> bool:
        words = self.words[turn_id]
        if len(words) < NGRAM:
            return bool(words) and f" {' '.join(words)} " in context.joined
        return not self.unique[turn_id].isdisjoint(context.grams)

    def share(self, evidence: Sequence[str], context: ContextText | str) -> float:
        ctx = context if isinstance(context, ContextText) else ContextText(context)
        return sum(self.found(t, ctx) for t in evidence) / len(evidence)


class ContextText:
    """A context normalised once: its word string and its set of n-grams."""

    def __init__(self, text: str) -> None:
        words = normal_words(text)
        self.joined = f" {' '.join(words)} "
        self.grams = _grams(words)


def _grams(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


def answer_in(answer: str, context: ContextText | str) -> bool | None:
    """Whether the normalised ``answer`` occurs (as whole words) in the normalised context;
    None when the answer has no words."""
    words = normal_words(answer)
    if not words:
        return None
    ctx = context if isinstance(context, ContextText) else ContextText(context)
    return f" {' '.join(words)} " in ctx.joined


def pack(
    lines: Sequence[str], budget: int, count: Callable[[str], int], *, contiguous: bool = False
) -> tuple[list[str], int]:
    """The lines, in order, that fit ``budget`` tokens together (a line that does not fit is
    skipped and the next tried, or with ``contiguous`` packing stops there); returns the
    kept lines and the count of their joined text, which is never over ``budget``."""
    kept: list[str] = []
    spent = 0
    for line in lines:
        cost = count(line) + (1 if kept else 0)  # the newline before it
        if spent + cost > budget:
            if contiguous:
                break
            continue
        kept.append(line)
        spent += cost
    total = count("\n".join(kept))
    while kept and total > budget:  # a merge at a join (never seen, but checked)
        kept.pop()
        total = count("\n".join(kept))
    return kept, total


def load_dialogs(path: Path, questions: int = 0, conversations: int = 0) -> list[Dialog]:
    """LoCoMo's conversations under the shared protocol (:func:`locomo.load_locomo`),
    each question with its ``answer``; the first ``questions`` of categories 1-4 (with valid
    evidence) per conversation in file order, the first ``conversations`` (0 = all)."""
    convs = load_locomo(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for conv, sample in zip(convs, raw, strict=True):
        known = {t.dia_id for t in conv.turns}
        answers = [
            str(qa.get("answer", ""))
            for qa in sample["qa"]
            if qa.get("category") in CATEGORIES and clean_evidence(qa.get("evidence") or [], known)
        ]
        assert len(answers) == len(conv.questions)
        first = conv.speakers[0]
        turns = [
            Item(
                t.dia_id,
                t.speaker,
                "user" if t.speaker == first else "assistant",
                t.session,
                t.date,
                t.text,
                (t.dia_id,),
            )
            for t in conv.turns
        ]
        qs = [
            Question(q.question, q.category, q.evidence, a)
            for q, a in zip(conv.questions, answers, strict=True)
        ]
        out.append(
            Dialog(conv.sample_id, conv.speakers, turns, qs[:questions] if questions else qs)
        )
    return out[:conversations] if conversations else out


def long_messages(dialog: Dialog, span: int = 0) -> Dialog:
    """The long-message variant: each run of consecutive turns by one speaker in a session
    stored as one message (``"{speaker}: "`` once, then the turns' texts joined by a space);
    the turns, the questions and their evidence turns stay as they were. LoCoMo's speakers
    strictly alternate, so there its runs are single turns (nothing changes): ``span`` > 0
    joins every ``span`` consecutive turns of a session instead, whoever says them, under
    the first one's speaker and role."""
    items: list[Item] = []
    count = 0
    for turn in dialog.turns:
        last = items[-1] if items else None
        if span:
            joins = last is not None and last.session == turn.session and count < span
        else:
            joins = last is not None and last.speaker == turn.speaker
            joins = joins and last.session == turn.session
        if last is not None and joins:
            text = f"{last.text} {body(turn.text, turn.speaker)}"
            items[-1] = Item(
                last.id,
                last.speaker,
                last.role,
                last.session,
                last.date,
                text,
                (*last.turns, turn.id),
            )
            count += 1
        else:
            items.append(turn)
            count = 1
    return Dialog(dialog.id, dialog.speakers, dialog.turns, dialog.questions, items)


VOCAB = (
    "garden violin harbour lantern pottery marathon kayak bakery orchard telescope chess "
    "canyon festival library bicycle volcano meadow recipe quilt museum lighthouse ferry "
    "cello tulip saddle glacier parrot compass workshop novel puzzle tractor"
).split()
FILLER = "really quite just maybe always often then also still very so well".split()


def generated_dialogs(
    n: int = 2, sessions: int = 4, turns: int = 12, seed: int = 1
) -> list[Dialog]:
    """``n`` made-up dialogs of LoCoMo's shape (two speakers, dated sessions, questions of
    categories 1-4 with evidence turns and answers): each turn names a thing from
    :data:`VOCAB` and an activity, with a unique number word, so its 8-grams are its own."""
    rng = random.Random(seed)
    out = []
    for c in range(n):
        names = ("Ann", "Bob") if c % 2 == 0 else ("Cleo", "Dan")
        start = datetime(2023, 1, 1) + timedelta(days=30 * c)
        items: list[Item] = []
        for s in range(1, sessions + 1):
            date = start + timedelta(days=7 * s, hours=rng.randint(8, 20))
            for t in range(1, turns + 1):
                speaker = names[(t - 1) % 2]
                thing, other = rng.sample(VOCAB, 2)
                fill = " ".join(rng.sample(FILLER, 3))
                text = (
                    f"{speaker}: I {fill} liked the {thing} near the {other} on day "
                    f"{s * 100 + t} and we talked about it for hours."
                )
                if t % 5 == 0:
                    text = f"{speaker}: Nice, see you!"  # short turns, some shared
                items.append(
                    Item(
                        f"D{s}:{t}",
                        speaker,
                        "user" if speaker == names[0] else "assistant",
                        s,
                        date,
                        text,
                        (f"D{s}:{t}",),
                    )
                )
        qs = []
        long_turns = [it for it in items if "day" in it.text]
        for q in range(12):
            picks = rng.sample(long_turns, 1 + q % 2)
            thing = picks[0].text.split(" the ")[1].split(" near")[0]
            qs.append(
                Question(
                    f"When did {picks[0].speaker} like the {thing}?",
                    1 + q % 4,
                    tuple(p.id for p in picks),
                    thing,
                )
            )
        out.append(Dialog(f"gen-{c + 1}", names, items, qs))
    return out


# -- summaries of records ---------------------------------------------------------------


def pctl(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def summary(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """mode -> system -> budget -> evidence (overall and per category), answer, tokens
    (mean, max, violations), ms (p50, p99), n."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[r["mode"], r["system"], r["budget"]].append(r)
    out: dict[str, Any] = {}
    for (mode, system, budget), rs in sorted(groups.items()):
        answers = [r["answer"] for r in rs if r["answer"] is not None]
        cats = {
            name: statistics.fmean(r["evidence"] for r in rs if r["category"] == c)
            for c, name in CATEGORIES.items()
            if any(r["category"] == c for r in rs)
        }
        out.setdefault(mode, {}).setdefault(system, {})[budget] = {
            "n": len(rs),
            "evidence": statistics.fmean(r["evidence"] for r in rs),
            "by_category": cats,
            "answer": statistics.fmean(answers) if answers else None,
            "tokens_mean": statistics.fmean(r["tokens"] for r in rs),
            "tokens_max": max(r["tokens"] for r in rs),
            "over_budget": sum(r["over"] for r in rs),
            "ms_p50": pctl([r["ms"] for r in rs], 0.5),
            "ms_p99": pctl([r["ms"] for r in rs], 0.99),
        }
    return out


def score(records: Iterable[dict[str, Any]]) -> float:
    """Mean evidence in context of the ``pmm`` records (pooled over questions, budgets, modes)."""
    values = [r["evidence"] for r in records if r["system"] == "pmm"]
    return statistics.fmean(values) if values else 0.0


def print_tables(bench: Any, table: dict[str, Any], title: str) -> None:
    for mode, systems in table.items():
        names = [s for s in SYSTEMS if s in systems]
        budgets = sorted(systems["pmm"] if "pmm" in systems else next(iter(systems.values())))
        rows = [[b, *(systems[s][b]["evidence"] for s in names)] for b in budgets]
        bench.table(["budget", *names], rows, f"\n{title}, mode {mode}: evidence in context")
        rows = [
            [
                b,
                *(
                    systems[s][b]["answer"] if systems[s][b]["answer"] is not None else "-"
                    for s in names
                ),
            ]
            for b in budgets
        ]
        bench.table(["budget", *names], rows, f"{title}, mode {mode}: answer in context")
        rows = [
            [
                b,
                *(
                    f"{systems[s][b]['tokens_mean']:.0f}/{systems[s][b]['tokens_max']}"
                    f"/{systems[s][b]['over_budget']}"
                    for s in names
                ),
            ]
            for b in budgets
        ]
        bench.table(
            ["budget", *names], rows, f"{title}, mode {mode}: tokens mean/max/over-budget count"
        )
        if "pmm" in systems:
            cats = list(CATEGORIES.values())
            rows = [
                [
                    b,
                    *(systems["pmm"][b]["by_category"].get(c, "-") for c in cats),
                    systems["pmm"][b]["ms_p50"],
                    systems["pmm"][b]["ms_p99"],
                ]
                for b in budgets
            ]
            bench.table(
                ["budget", *cats, "p50 ms", "p99 ms"],
                rows,
                f"{title}, mode {mode}: PMM by category, context latency",
            )


# -- cross-validation by conversation ----------------------------------------------------

FOLDS = 5


def folds(ids: Sequence[str], n: int = FOLDS) -> list[list[str]]:
    """``n`` folds of consecutive conversations in the file's order (as bench/locomo.py --cv:
    fold f holds conversations 2f and 2f+1 of 10)."""
    size = max(1, len(ids) // n)
    return [list(ids[f * size : (f + 1) * size]) for f in range(min(n, len(ids)))]


def parse_grid(text: str) -> list[dict[str, str]]:
    """``'a=1,2;b=x'`` -> every combination: ``[{'a': '1', 'b': 'x'}, {'a': '2', 'b': 'x'}]``."""
    axes = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, _, values = part.partition("=")
        if not values:
            raise SystemExit(f"--grid: {part!r} is not name=v1,v2")
        axes.append([(name.strip(), v.strip()) for v in values.split(",")])
    return [dict(combo) for combo in itertools.product(*axes)]


def cross_validate(
    runner: Any,
    dialogs: Sequence[Dialog],
    modes: Sequence[str],
    budgets: Sequence[int],
    grid: Sequence[dict[str, str]],
    fixed: dict[str, str],
) -> dict[str, Any]:
    """Every grid point's ``pmm`` records on every conversation (the same stored files where
    the point changes only context-time settings), then per fold the point with the best
    training score, its held-out score, and the pooled held-out score."""
    per_point: list[list[dict[str, Any]]] = []
    for point in grid:
        recs: list[dict[str, Any]] = []
        for dialog in dialogs:
            for mode in modes:
                recs += runner.evaluate(dialog, mode, budgets, {**fixed, **point}, ("pmm",))
        per_point.append(recs)
        if runner.log:
            print(f"  grid {point}: {score(recs):.3f}", flush=True)
    chosen = []
    held: list[dict[str, Any]] = []
    for f, test in enumerate(folds([d.id for d in dialogs])):
        train = [
            statistics.fmean([r["evidence"] for r in recs if r["conversation"] not in test])
            if any(r["conversation"] not in test for r in recs)
            else 0.0
            for recs in per_point
        ]
        best = max(range(len(grid)), key=lambda i: (train[i], -i))
        out = [r for r in per_point[best] if r["conversation"] in test]
        held += out
        chosen.append(
            {
                "fold": f,
                "held_out": test,
                "choice": grid[best],
                "train": train[best],
                "held_out_score": score(out),
            }
        )
    return {
        "fixed": fixed,
        "folds": chosen,
        "held_out": score(held),
        "held_out_table": summary(held),
        "points": [
            {"point": p, "all": score(recs)} for p, recs in zip(grid, per_point, strict=True)
        ],
    }


def overrides_of(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if not value:
            raise SystemExit(f"--set: {pair!r} is not name=value")
        out[name.strip()] = value.strip()
    return out
