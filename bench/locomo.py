"""Recall on LoCoMo (real-length conversations, public): PMM's modes and rankers beside
plain BM25, under the shared retrieval protocol (``../shared/data/locomo/README.md``).

    python bench/locomo.py                          # all 10 conversations, 1,536 questions
    python bench/locomo.py --conversations 2 --limit 50      # a short run
    python bench/locomo.py --quick                  # 1 conversation, 20 questions, no MiniLM
    python bench/locomo.py --json out.json --lists /tmp/pmm-locomo/lists.json
    python bench/locomo.py --cv --lists /tmp/pmm-locomo/lists.json   # folds and levers

Each conversation goes into a fresh :class:`pmm.Mind` (a temporary SQLite file, embeddings
on, MiniLM): one event per turn, text ``"{speaker}: {text}"`` (+ ``" [shares {caption}]"``),
the session's date as the event's ``ts`` (recall's date key), one PMM session per LoCoMo
session, the first speaker as ``user`` and the second as ``assistant``, ``dia_id`` in
``meta``. Every question of categories 1-4 is asked across the whole memory
(``session_id=None``). Printed, overall and per category, with recall@k, hit@k, all@k
(k = 1, 5, 10, 25) and MRR (top 50):

- ``bm25``: plain BM25 over the raw turns (``bm25s``, see :class:`PlainBM25`);
- each of ``Mind.recall``'s modes (``hybrid`` is the default with embeddings on);
- each of the engine's rankers alone (``ranker:turn``, ``ranker:window``, ``ranker:dense``)
  as the recaller ranks them (``Recaller.ranker_lists``).

Vectors are cached on disk by text hash (``--cache``, default a folder under the system's
temp dir) so that a second run embeds nothing. ``--lists PATH`` writes every question's
lists (modes and rankers, 100 deep) for ``--cv``, which chooses the fusion and the levers by
cross-validation offline (below). Without ``../shared/data/locomo/`` (or
``--data``) the run is skipped with a message and exits 0.

The data is CC BY-NC 4.0 and stays in ``../shared/data/locomo/``: nothing here copies it.
Protocol (its README): one memory per conversation, one item per turn with the text
``"{speaker}: {text}"`` (+ ``" [shares {blip_caption}]"``), categories 1-4 only, evidence
ids split on ``;``, ``,`` and spaces, normalised (``D:?(\\d+):0*(\\d+)``) and kept only when
the conversation has them: 1,536 questions.

``--cv --lists PATH``: recall's fusion and levers chosen on LoCoMo by cross-validation by
conversation, from the lists ``--lists`` wrote (no memory is built: every figure is computed
offline from each ranker's ids). It prints the coefficients :mod:`pmm.recall.rerank` ships.
Five folds of two conversations (in the file's order). In each fold every configuration
is fitted or chosen on the eight training conversations and scored on the two held out;
the held-out figures are pooled over the five folds (each question is held out once):

- ``engine``: the lists ``Mind.recall`` returned in that run, per mode;
- ``learned:<features>``: logistic regression over :func:`pmm.recall.rerank.candidate_features`
  (a lever is a feature group; each is measured by adding it to the ranks alone and by
  removing it from the full set);
- ``shipped``: :func:`pmm.recall.rerank.rerank` with the coefficients in the code.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from harness import Bench  # noqa: E402

from pmm import Mind  # noqa: E402
from pmm.recall.fusion import EVIDENCE_HITS, lexical_coverage  # noqa: E402
from pmm.recall.recaller import RECALL_MODES, Recaller  # noqa: E402
from pmm.recall.rerank import (  # noqa: E402
    FEATURES,
    RANKED,
    candidate_features,
    query_dates,
    query_names,
    query_terms,
)
from pmm.recall.session_rank import (  # noqa: E402
    SessionTerms,
    ranks_of,
    stemmed_order,
    vector_order,
)
from pmm.recall.sources import query_idf, searchable  # noqa: E402
from pmm.records import NewEvent  # noqa: E402
from pmm.settings import Settings  # noqa: E402
from pmm.text.window_keys import is_temporal  # noqa: E402
from pmm.text.words import words  # noqa: E402

# -- LoCoMo under the protocol, its metrics and the BM25 baseline -------------------------

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
    protocol's baseline (bench/peers.py's passes bm25s' English stopwords and words)."""

    def __init__(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        stopwords: str | list[str] = SMALL_STOPWORDS,
        pattern: str = TOKENS,
    ) -> None:
        import bm25s

        self._bm25s, self.stopwords, self.pattern = bm25s, stopwords, pattern
        self.ids = list(ids)
        self.model = bm25s.BM25(k1=1.2, b=0.75)
        self.model.index(self._tokens(texts), show_progress=False)

    def _tokens(self, texts: Sequence[str]) -> Any:
        return self._bm25s.tokenize(
            list(texts), stopwords=self.stopwords, token_pattern=self.pattern, show_progress=False
        )

    def search(self, query: str, limit: int) -> list[str]:
        tokens = self._tokens([query])
        if not tokens.vocab:
            return []
        docs, found = self.model.retrieve(
            tokens, k=min(limit, len(self.ids)), show_progress=False, n_threads=1
        )
        return [self.ids[int(d)] for d, s in zip(docs[0], found[0], strict=True) if s > 0]


# -- the recall run ---------------------------------------------------------------------
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "locomo"
DEPTH = 100
"""How deep each ranker's list is recorded (for offline fusion at other depths)."""
K = 50
"""The ``k`` each mode is asked for (metrics read the top 50; recall's rankers then read
their default depth, 50)."""
BASELINE = "bm25"


class DiskCachedEmbedder:
    """The model's own vectors, each text embedded once across runs: kept in
    ``folder/<model>.npz`` keyed by the text's sha256 (``folder=None``: in memory, one run)."""

    def __init__(self, inner: Any, folder: Path | None) -> None:
        self.inner = inner
        self.model_name: str = inner.model_name
        self.path = folder / (self.model_name.replace("/", "_") + ".npz") if folder else None
        self.cache: dict[str, npt.NDArray[np.float32]] = {}
        if self.path is not None and self.path.exists():
            with np.load(self.path) as saved:
                self.cache = {k: saved[k] for k in saved.files}
        self.added = 0

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}
        if todo:
            vectors = self.inner.embed(list(todo.values()))
            for key, vector in zip(todo, vectors, strict=True):
                self.cache[key] = np.asarray(vector, dtype=np.float32)
            self.added += len(todo)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.cache[k] for k in keys])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """A recall query's vector through the inner embedder's query encoder (cached
        apart from the model's own vectors when that encoder is not fp32)."""
        encoder = getattr(self.inner, "query_encoder", "fp32")
        if encoder == "fp32":
            return self.embed([text])[0]
        key = f"{encoder}_" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key not in self.cache:
            self.cache[key] = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            self.added += 1
        return self.cache[key]

    def save(self) -> None:
        if self.added and self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, **self.cache)
            tmp.replace(self.path)
            self.added = 0


def ingest(mind: Mind, conv: Conversation) -> dict[int, str]:
    """Every turn into ``mind`` (one transaction per session); event id -> dia_id."""
    first = conv.speakers[0]
    out: dict[int, str] = {}
    for session in sorted({t.session for t in conv.turns}):
        turns = [t for t in conv.turns if t.session == session]
        entries = [
            NewEvent(
                "prompt" if t.speaker == first else "response",
                t.text,
                f"{conv.sample_id}-s{session}",
                "user" if t.speaker == first else "assistant",
                {"dia_id": t.dia_id, "speaker": t.speaker},
                t.date,
            )
            for t in turns
        ]
        for event, turn in zip(mind.remember_many(entries), turns, strict=True):
            out[event.id] = turn.dia_id
    return out


def collect(
    convs: list[Conversation],
    embedder: Any | None,
    limit: int,
    tmp: Path,
    depth: int = DEPTH,
) -> list[dict[str, Any]]:
    """One record per question: its lists (dia_ids, best first) from every mode, every
    ranker and the baseline, the fusion weights the engine chose, and mode latencies.
    ``depth``: how deep each ranker's list is recorded."""
    records: list[dict[str, Any]] = []
    modes = [m for m in RECALL_MODES if embedder is not None or m == "keyword"]
    for conv in convs:
        questions = conv.questions[:limit] if limit else conv.questions
        bm25 = PlainBM25([t.dia_id for t in conv.turns], [t.text for t in conv.turns])
        path = tmp / f"{conv.sample_id}.db"
        with Mind(
            str(path),
            enable_embeddings=embedder is not None,
            summary_mode="deferred",
            embedder=embedder,
        ) as mind:
            to_dia = ingest(mind, conv)
            started = time.perf_counter()
            mind.dream()  # embeds every turn
            embed_s = time.perf_counter() - started
            recaller: Recaller = mind._get_recaller()
            for q in questions:
                rec: dict[str, Any] = {
                    "conversation": conv.sample_id,
                    "question": q.question,
                    "category": q.category,
                    "evidence": list(q.evidence),
                    "modes": {},
                    "ms": {},
                }
                for mode in modes:
                    t0 = time.perf_counter()
                    hits = mind.recall(q.question, k=K, mode=mode)
                    rec["ms"][mode] = (time.perf_counter() - t0) * 1000
                    rec["modes"][mode] = [to_dia[h.event.id] for h in hits]
                lists = recaller.ranker_lists(q.question, depth=depth)
                rec["rankers"] = {r: [to_dia[i] for i in ids] for r, ids in lists.items()}
                rec["modes"][BASELINE] = bm25.search(q.question, depth)
                rec["weights"] = recaller.fusion_weights(q.question)
                rec["temporal"] = is_temporal(words(q.question.lower()))
                top = mind.store.get_many(lists["turn"][:EVIDENCE_HITS]).values()
                rec["coverage"] = lexical_coverage(
                    q.question, (searchable(e) for e in top), query_idf(mind.store, q.question)
                )
                records.append(rec)
        print(f"  {conv.sample_id}: {len(conv.turns)} turns, {len(questions)} questions "
              f"(embedding {embed_s:.1f} s)", flush=True)  # fmt: skip
        if isinstance(embedder, DiskCachedEmbedder):
            embedder.save()
    return records


def systems(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, dict[str, float]]]]:
    """system name -> (category, scores) per question."""
    out: dict[str, list[tuple[int, dict[str, float]]]] = {}
    # a ranker that found nothing anywhere (digest, without digests) is left out
    used = {r for rec in records for r, ids in rec["rankers"].items() if ids}
    for rec in records:
        rankers = {f"ranker:{r}": ids for r, ids in rec["rankers"].items() if r in used}
        named = {**rec["modes"], **rankers}
        for name, ids in named.items():
            out.setdefault(name, []).append((rec["category"], scores(ids, rec["evidence"])))
    order = [BASELINE, *RECALL_MODES]
    return dict(sorted(out.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order
                                                    else len(order), kv[0])))  # fmt: skip


def print_tables(table: dict[str, dict[str, dict[str, float]]]) -> None:
    base = table[BASELINE]["all"]["R@10"]
    cols = [*(f"R@{k}" for k in KS), *(f"H@{k}" for k in KS), "A@10", "MRR"]
    n = int(next(iter(table.values()))["all"]["n"])
    print(f"\nall {n} questions:")
    print(f"{'system':<16}" + "".join(f"{c:>7}" for c in cols) + f"{'R@10/bm25':>11}")
    for name, groups in table.items():
        m = groups["all"]
        print(f"{name:<16}" + "".join(f"{m[c]:7.3f}" for c in cols)
              + f"{m['R@10'] / base if base else float('nan'):10.2f}x")  # fmt: skip
    for metric in ("R@10", "R@25", "H@10", "MRR"):
        print(f"\n{metric} by category (multi-hop also all@10 / all@25):")
        counts = {c: int(g["n"]) for c, g in table[BASELINE].items()}
        head = "".join(f"{f'{c} ({counts[c]})':>22}" for c in CATEGORIES.values() if c in counts)
        print(f"{'system':<16}{'all':>8}{head}")
        for name, groups in table.items():
            cells = []
            for cat in CATEGORIES.values():
                if cat not in groups:
                    continue
                g = groups[cat]
                extra = f" ({g['A@10']:.2f}/{g['A@25']:.2f})" if cat == "multi-hop" else ""
                cells.append(f"{g[metric]:.3f}{extra}")
            print(f"{name:<16}{groups['all'][metric]:8.3f}" + "".join(f"{c:>22}" for c in cells))


# -- cross-validation of the fusion (--cv) ----------------------------------------------
CV_DEPTH = 50
"""Each ranker's list is cut here, as recall cuts it for k <= 50."""
FOLDS = 5
GROUPS: dict[str, tuple[str, ...]] = {
    "ranks": tuple(
        f for f in FEATURES if f.endswith(("_rr60", "_rr5")) and not f.startswith("session_")
    ),
    "policy": tuple(f for f in FEATURES if f.startswith(("temporal_", "lowcov_"))),
    "question": ("question_turn", "question_answered"),
    "subject": ("names_match", "names_miss"),
    "session": ("session_share",),
    "length": ("log_words",),
    "dates": ("date_match", "date_miss"),
    "terms": ("term_share",),
    "session_rank": tuple(
        f for f in FEATURES if f.startswith(("session_stemmed_", "session_dense_"))
    ),
}
"""Feature groups: each lever is one group; ``ranks`` is always in."""
SHIPPED_WITHOUT = ("question_answered",)
"""Measured but not shipped: a question whose words a told turn holds
(issue 22's "What's my dog's name?" asked twice) won +0.003 R@10 held out but lost on some
folds and categories, and its fitted weight does not lift the fact above the question asked
twice (docs/benchmarks/locomo.md)."""


DEFAULT_VECTORS = Path("/tmp/pmm-locomo-vectors/sentence-transformers_all-MiniLM-L6-v2.npz")
"""``bench/locomo.py``'s MiniLM vector cache (turns by text hash, questions as the fp16
query encoder embedded them): the session_dense features read it."""


class SessionInputs:
    """What :class:`pmm.recall.session_rank.SessionRanks` holds of a conversation's
    sessions, built with its own functions: each session's terms
    (:class:`~pmm.recall.session_rank.SessionTerms`) and the sum of its turns' normalised
    vectors; the candidates' sessions are ranked as recall ranks them."""

    def __init__(self, vectors: Path | None) -> None:
        self.vectors: dict[str, np.ndarray] = {}
        if vectors is not None:
            with np.load(vectors) as saved:
                self.vectors = {k: saved[k] for k in saved.files}
        self.convs: dict[str, tuple[dict[str, SessionTerms], dict[str, np.ndarray]]] = {}

    def vector(self, text: str, prefix: str = "") -> np.ndarray:
        import hashlib

        key = prefix + hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key not in self.vectors:
            raise SystemExit(f"no cached vector for {text[:40]!r}: run bench/locomo.py first")
        return self.vectors[key]

    def ranks(self, conv: Any, question: str, sessions: list[str]) -> dict[str, dict[str, int]]:
        if conv.sample_id not in self.convs:
            names = sorted({str(t.session) for t in conv.turns}, key=int)
            terms = {s: SessionTerms.of(t.text for t in conv.turns if str(t.session) == s)
                     for s in names}  # fmt: skip
            sums: dict[str, np.ndarray] = {}
            if self.vectors:
                for s in names:
                    vs = [self.vector(t.text) for t in conv.turns if str(t.session) == s]
                    sums[s] = np.sum([v / (np.linalg.norm(v) or 1.0) for v in vs], axis=0)
            self.convs[conv.sample_id] = (terms, sums)
        terms, sums = self.convs[conv.sample_id]
        out = {"stemmed": ranks_of(stemmed_order({s: terms[s] for s in sessions},
                                                 query_terms(question)))}  # fmt: skip
        if sums:
            q = self.vector(question, "fp16_")
            out["dense"] = ranks_of(vector_order({s: sums[s] for s in sessions}, q))
        return out


class Candidates:
    """One question's candidates (turn positions), features and labels."""

    def __init__(
        self,
        rec: dict[str, Any],
        conv: Any,
        position: dict[str, int],
        depth: int = CV_DEPTH,
        session_inputs: SessionInputs | None = None,
        drop: tuple[str, ...] = (),
    ) -> None:
        self.conv = rec["conversation"]
        self.category = int(rec["category"])
        self.evidence = [position[d] for d in rec["evidence"]]
        self.rec = rec
        self.lists = {
            r: [position[d] for d in ids[:depth]]
            for r, ids in rec["rankers"].items()
            if r not in drop
        }
        texts = {position[t.dia_id]: t.text for t in conv.turns}
        sessions = {position[t.dia_id]: str(t.session) for t in conv.turns}
        dates = {position[t.dia_id]: t.date.isoformat() for t in conv.turns}
        session_ranks = None
        if session_inputs is not None:  # the candidates' sessions, first seen first
            seen = (sessions[i] for r, ids in self.lists.items() if r in RANKED for i in ids)
            candidates = list(dict.fromkeys(seen))
            session_ranks = session_inputs.ranks(conv, rec["question"], candidates)
        self.ids, rows = candidate_features(
            query_names(rec["question"]), self.lists, texts, sessions,
            temporal=bool(rec["temporal"]), coverage=float(rec["coverage"]),
            dates=dates, query_date_set=query_dates(rec["question"]),
            query_term_set=query_terms(rec["question"]), session_ranks=session_ranks,
        )  # fmt: skip
        self.x = np.array(rows, dtype=float).reshape(len(self.ids), len(FEATURES))
        wanted = set(self.evidence)
        self.y = np.array([i in wanted for i in self.ids], dtype=float)

    def ranked(self, s: np.ndarray) -> list[int]:
        """Candidate ids by score ``s``, best first (ties: newer first)."""
        order = np.lexsort((-np.array(self.ids), -s))
        return [self.ids[j] for j in order]


def load(
    lists: Path,
    data: Path,
    depth: int = CV_DEPTH,
    vectors: Path | None = None,
    drop: tuple[str, ...] = (),
) -> list[Candidates]:
    """Every question of ``lists`` (``bench/locomo.py --lists``), each ranker's list cut at
    ``depth`` (recall's own depth, 50, unless a lever reads deeper); the session_dense
    features from the ``vectors`` cache (``bench/locomo.py``'s, holding every turn and
    question of ``data``; None, or a file that is not there: left at 0).
    ``drop``: rankers whose lists are left out (``dense`` for keyword mode, whose
    candidates and candidates' sessions hold no dense-only turn, as in recall)."""
    convs = {c.sample_id: c for c in load_locomo(data)}
    if vectors is not None and not vectors.exists():
        print(f"no vector cache at {vectors}: the session_dense features are left at 0")
        vectors = None
    inputs = SessionInputs(vectors)
    records = json.loads(lists.read_text(encoding="utf-8"))
    out = []
    for rec in records:
        conv = convs[rec["conversation"]]
        position = {t.dia_id: n for n, t in enumerate(conv.turns, start=1)}
        out.append(Candidates(rec, conv, position, depth, inputs, drop))
    return out


def metric_rows(qs: Sequence[Candidates], lists: Sequence[list[int]]) -> dict[str, Any]:
    return mean_table(
        [(q.category, scores(ids, q.evidence)) for q, ids in zip(qs, lists, strict=True)]
    )


def fit_logistic(train: Sequence[Candidates], cols: list[int]) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([q.x[:, cols] for q in train])
    y = np.concatenate([q.y for q in train])
    model = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")
    model.fit(x, y)
    return np.asarray(model.coef_[0])


def cross_validate(
    qs: list[Candidates], fit: Callable[[list[Candidates]], Callable[[Candidates], list[int]]]
) -> tuple[dict[str, Any], list[Any]]:
    """Pooled held-out table and each fold's fitted choice."""
    convs = list(dict.fromkeys(q.conv for q in qs))
    held: list[tuple[Candidates, list[int]]] = []
    choices = []
    for f in range(FOLDS):
        test = set(convs[2 * f : 2 * f + 2])
        ranker = fit([q for q in qs if q.conv not in test])
        choices.append(ranker)
        held += [(q, ranker(q)) for q in qs if q.conv in test]
    return metric_rows([q for q, _ in held], [ids for _, ids in held]), choices


def fold_table(qs: list[Candidates], fit: Any) -> list[dict[str, Any]]:
    """Per fold: the held-out conversations, their R@10 / R@25 / H@10."""
    convs = list(dict.fromkeys(q.conv for q in qs))
    out = []
    for f in range(FOLDS):
        test = convs[2 * f : 2 * f + 2]
        tq = [q for q in qs if q.conv in test]
        ranker = fit([q for q in qs if q.conv not in test])
        m = metric_rows(tq, [ranker(q) for q in tq])["all"]
        out.append({"held_out": test, "choice": getattr(ranker, "label", ""),
                    **{k: m[k] for k in ("R@10", "R@25", "H@10", "MRR")}})  # fmt: skip
    return out


def learned(cols_names: Sequence[str]) -> Callable[[list[Candidates]], Any]:
    cols = [FEATURES.index(f) for f in cols_names]

    def fit(train: list[Candidates]) -> Any:
        coef = fit_logistic(train, cols)

        def rank(q: Candidates) -> list[int]:
            return q.ranked(q.x[:, cols] @ coef)

        rank.label = ", ".join(f"{FEATURES[c]}={w:.3f}" for c, w in zip(cols, coef, strict=True))  # type: ignore[attr-defined]
        rank.coef = dict(zip([FEATURES[c] for c in cols], coef, strict=True))  # type: ignore[attr-defined]
        return rank

    return fit


def engine_fit(mode: str) -> Callable[[list[Candidates]], Any]:
    def fit(train: list[Candidates]) -> Any:
        def rank(q: Candidates) -> list[int]:
            pos = {d: n for n, d in enumerate(q.rec["_order"], start=1)}
            lists = q.rec["modes"] if mode in q.rec["modes"] else q.rec["rankers"]
            return [pos[d] for d in lists[mode][:50]]

        rank.label = f"engine {mode}"  # type: ignore[attr-defined]
        return rank

    return fit


def row(name: str, table: dict[str, Any]) -> str:
    a = table["all"]
    cats = " ".join(f"{table[c]['R@10']:.3f}" for c in CATEGORIES.values() if c in table)
    mh = table.get("multi-hop", {}).get("A@10", float("nan"))
    return (f"{name:<34}{a['R@10']:7.3f}{a['R@25']:7.3f}{a['H@10']:7.3f}{a['MRR']:7.3f}"
            f"  {cats}  {mh:.3f}")  # fmt: skip


def check_rules(results: dict[str, Any], default: str, keyword: str) -> None:
    """The issue's rule, held out: the default never below a single ranker or the
    keyword-only mode on any category (R@10, R@25, H@10)."""
    rivals = ["engine keyword", "engine semantic", "engine bm25", keyword]
    rivals += ["engine turn", "engine window", "engine dense"]
    rivals += [n for n in results if n.startswith("learned: ranks") and n != default]
    print(f"\nrule check, held out: {default} against single modes / rankers per category")
    mine = results[default]["table"]
    for rival in rivals:
        if rival not in results:
            continue
        theirs = results[rival]["table"]
        worse = [
            f"{cat} {m} {mine[cat][m]:.3f} < {theirs[cat][m]:.3f}"
            for cat in mine
            for m in ("R@10", "R@25", "H@10")
            if mine[cat][m] < theirs[cat][m] - 1e-9
        ]
        print(f"  vs {rival:<28} " + ("never below" if not worse else "; ".join(worse)))


def cross_validation(args: Any, path: Path) -> dict[str, Any]:
    """Every configuration held out, fold by fold, and the coefficients fitted on all."""
    qs = load(args.lists, path, vectors=args.vectors)
    # keyword mode's candidates, as recall has them: no dense list
    keyword_qs = load(args.lists, path, vectors=None, drop=("dense",))
    convs = {c.sample_id: c for c in load_locomo(path)}
    for q in [*qs, *keyword_qs]:
        q.rec["_order"] = {t.dia_id: None for t in convs[q.conv].turns}
    print(f"{len(qs)} questions, {len({q.conv for q in qs})} conversations, "
          f"{FOLDS} folds of 2 (held-out figures pooled)")  # fmt: skip
    head = "R@10 by category: " + " ".join(CATEGORIES.values())
    print(f"\n{'configuration':<34}{'R@10':>7}{'R@25':>7}{'H@10':>7}{'MRR':>7}  {head}  MH A@10")
    results: dict[str, Any] = {}
    full = [f for g in GROUPS.values() for f in g]
    shipped = [f for f in full if f not in SHIPPED_WITHOUT]
    systems: dict[str, Any] = {}
    for mode in ("bm25", "keyword", "semantic", "hybrid", "turn", "window", "dense"):
        systems[f"engine {mode}"] = engine_fit(mode)
    systems["learned: ranks"] = learned(GROUPS["ranks"])
    for name, group in GROUPS.items():
        if name != "ranks":
            systems[f"learned: ranks + {name}"] = learned([*GROUPS["ranks"], *group])
    for name, group in GROUPS.items():
        if name != "ranks":
            systems[f"learned: all - {name}"] = learned([f for f in full if f not in group])
    systems["learned: all"] = learned(full)
    systems["learned: shipped"] = learned(shipped)
    no_dense = [f for f in shipped if "dense" not in f]
    systems["learned keyword: shipped"] = learned(no_dense)
    systems["learned keyword: all"] = learned([f for f in full if "dense" not in f])
    systems["learned keyword: ranks"] = learned([f for f in GROUPS["ranks"] if "dense" not in f])
    for name, fit in systems.items():
        table, _ = cross_validate(keyword_qs if name.startswith("learned keyword") else qs, fit)
        results[name] = {"table": table}
        print(row(name, table), flush=True)
    for name in ("learned: shipped", "learned keyword: shipped"):
        a = results[name]["table"]["all"]
        print(f"\n{name}, held out: R@10 {a['R@10']:.4f}  R@25 {a['R@25']:.4f}  "
              f"H@10 {a['H@10']:.4f}")  # fmt: skip
    print("\nper fold (held-out R@10 / R@25 / H@10), the shipped fusion and the RRF default:")
    for name in ("learned: shipped", "engine hybrid"):
        folds = fold_table(qs, systems[name])
        results[name]["folds"] = folds
        for f in folds:
            print(f"  {name:<16} {','.join(f['held_out']):<16} {f['R@10']:.3f} / {f['R@25']:.3f}"
                  f" / {f['H@10']:.3f}   {f['choice']}")  # fmt: skip
    check_rules(results, "learned: shipped", "learned keyword: shipped")
    print("\ncoefficients fitted on all conversations (what pmm.recall.rerank ships):")
    for name, cols, on in (("hybrid", shipped, qs), ("keyword", no_dense, keyword_qs)):
        coef = fit_logistic(on, [FEATURES.index(f) for f in cols])
        shipped = {f: round(float(w), 3) for f, w in zip(cols, coef, strict=True)}
        results[f"coefficients {name}"] = shipped
        print(f"  {name!r}: {shipped},")
    return {"results": results}


def main(argv: Sequence[str] | None = None, embedder: Any | None = None) -> int:
    """``embedder``: use this one instead of MiniLM (tests pass a small one)."""
    bench = Bench("locomo", __doc__)
    parser = bench.parser
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="folder holding locomo10.json, or the file")  # fmt: skip
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument("--limit", type=int, default=0, help="only N questions per conversation")
    parser.add_argument("--no-dense", action="store_true", help="no embeddings: keyword only")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "pmm-locomo-vectors")  # fmt: skip
    parser.add_argument("--lists", type=Path, help="write every question's lists here")
    parser.add_argument("--cv", action="store_true", help="cross-validate on --lists' lists")
    parser.add_argument("--vectors", type=Path, default=DEFAULT_VECTORS,
                        help="with --cv: locomo.py's MiniLM vectors (session_dense)")  # fmt: skip
    parser.add_argument("--depth", type=int, default=DEPTH,
                        help="how deep each ranker's list is recorded (the ceiling)")  # fmt: skip
    parser.add_argument("--query-encoder", default=Settings().query_encoder,
                        choices=("fp32", "fp16", "int8"),
                        help="PMM_QUERY_ENCODER: the model that embeds questions")  # fmt: skip
    args = bench.parse(argv)
    if args.quick:
        args.conversations, args.limit = args.conversations or 1, args.limit or 20
        args.no_dense = True

    path = args.data / "locomo10.json" if args.data.is_dir() else args.data
    if not path.is_file():
        print(
            f"LoCoMo is not here ({path}): skipped. It is CC BY-NC 4.0 and never copied "
            f"into the repository; put locomo10.json in {DEFAULT_DATA} or pass --data."
        )
        return 0
    if args.cv:
        if args.lists is None:
            parser.error("--cv reads the lists of --lists PATH")
        bench.finish(cross_validation(args, path))
        return 0
    convs = load_locomo(path)
    if args.conversations:
        convs = convs[: args.conversations]
    cached: DiskCachedEmbedder | None = None
    if embedder is None and not args.no_dense:
        from pmm.embed.sentence import SentenceEmbedder

        model = SentenceEmbedder(query_encoder=args.query_encoder)
        embedder = cached = DiskCachedEmbedder(model, args.cache)
    n_turns = sum(len(c.turns) for c in convs)
    print(f"LoCoMo ({path}): {len(convs)} conversations, {n_turns} turns; "
          f"embedder {embedder.model_name if embedder is not None else 'none'}, "
          f"queries {args.query_encoder}")  # fmt: skip
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pmm-locomo-") as tmp:
        try:
            records = collect(convs, embedder, args.limit, Path(tmp), args.depth)
        finally:
            if cached is not None:
                cached.save()
    seconds = time.perf_counter() - started
    table = {name: mean_table(rows) for name, rows in systems(records).items()}
    print_tables(table)
    latency = {mode: statistics.median(r["ms"][mode] for r in records) for mode in records[0]["ms"]}
    print("\nrecall p50 (ms, k=50, whole conversation): "
          + ", ".join(f"{m} {v:.1f}" for m, v in latency.items()))  # fmt: skip
    print(f"({seconds:.0f} s for {len(records)} questions)")
    bench.finish({"data": path.name, "questions": len(records), "tables": table,
                  "latency_p50_ms": latency})  # fmt: skip
    if args.lists:
        args.lists.parent.mkdir(parents=True, exist_ok=True)
        args.lists.write_text(json.dumps(records) + "\n", encoding="utf-8")
        print(f"wrote {args.lists}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
