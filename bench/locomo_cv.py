"""Choosing recall's fusion and levers on LoCoMo by cross-validation by conversation, from
the lists ``bench/locomo.py --lists`` wrote (no memory is built here: every figure is
computed offline from each ranker's ids). It prints the coefficients
:mod:`pmm.recall.rerank` ships; ``--quick`` changes nothing (the lists are the input).

    python bench/locomo.py --lists /tmp/pmm-locomo/lists.json     # once (minutes)
    python bench/locomo_cv.py --lists /tmp/pmm-locomo/lists.json  # folds, levers (seconds)

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

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from harness import Bench  # noqa: E402
from locomo import DEFAULT_DATA  # noqa: E402
from locomo_data import CATEGORIES, load_locomo, mean_table, scores  # noqa: E402

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

DEPTH = 50
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


class Question:
    """One question's candidates (turn positions), features and labels."""

    def __init__(
        self,
        rec: dict[str, Any],
        conv: Any,
        position: dict[str, int],
        depth: int = DEPTH,
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
    depth: int = DEPTH,
    vectors: Path | None = None,
    drop: tuple[str, ...] = (),
) -> list[Question]:
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
        out.append(Question(rec, conv, position, depth, inputs, drop))
    return out


def metric_rows(qs: Sequence[Question], lists: Sequence[list[int]]) -> dict[str, Any]:
    return mean_table(
        [(q.category, scores(ids, q.evidence)) for q, ids in zip(qs, lists, strict=True)]
    )


def fit_logistic(train: Sequence[Question], cols: list[int]) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([q.x[:, cols] for q in train])
    y = np.concatenate([q.y for q in train])
    model = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")
    model.fit(x, y)
    return np.asarray(model.coef_[0])


def cross_validate(
    qs: list[Question], fit: Callable[[list[Question]], Callable[[Question], list[int]]]
) -> tuple[dict[str, Any], list[Any]]:
    """Pooled held-out table and each fold's fitted choice."""
    convs = list(dict.fromkeys(q.conv for q in qs))
    held: list[tuple[Question, list[int]]] = []
    choices = []
    for f in range(FOLDS):
        test = set(convs[2 * f : 2 * f + 2])
        ranker = fit([q for q in qs if q.conv not in test])
        choices.append(ranker)
        held += [(q, ranker(q)) for q in qs if q.conv in test]
    return metric_rows([q for q, _ in held], [ids for _, ids in held]), choices


def fold_table(qs: list[Question], fit: Any) -> list[dict[str, Any]]:
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


def learned(cols_names: Sequence[str]) -> Callable[[list[Question]], Any]:
    cols = [FEATURES.index(f) for f in cols_names]

    def fit(train: list[Question]) -> Any:
        coef = fit_logistic(train, cols)

        def rank(q: Question) -> list[int]:
            return q.ranked(q.x[:, cols] @ coef)

        rank.label = ", ".join(f"{FEATURES[c]}={w:.3f}" for c, w in zip(cols, coef, strict=True))  # type: ignore[attr-defined]
        rank.coef = dict(zip([FEATURES[c] for c in cols], coef, strict=True))  # type: ignore[attr-defined]
        return rank

    return fit


def engine_fit(mode: str) -> Callable[[list[Question]], Any]:
    def fit(train: list[Question]) -> Any:
        def rank(q: Question) -> list[int]:
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


def main(argv: Sequence[str] | None = None) -> int:
    bench = Bench("locomo_cv", __doc__)
    parser = bench.parser
    parser.add_argument("--lists", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "locomo10.json")
    parser.add_argument("--vectors", type=Path, default=DEFAULT_VECTORS,
                        help="bench/locomo.py's MiniLM vector cache (session_dense)")  # fmt: skip
    args = bench.parse(argv)
    qs = load(args.lists, args.data, vectors=args.vectors)
    # keyword mode's candidates, as recall has them: no dense list
    keyword_qs = load(args.lists, args.data, vectors=None, drop=("dense",))
    convs = {c.sample_id: c for c in load_locomo(args.data)}
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
    bench.finish({"results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
