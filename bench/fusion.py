"""Which recall keys and fusion policy to ship: per-ranker recall, k-fold
cross-validation (by conversation) of weighted reciprocal rank fusion policies, and the
shipped defaults measured exactly as :meth:`pmm.recall.recaller.Recaller.recall` fuses.

    python bench/fusion.py --data bench/data/chat_dataset.json \\
        --data bench/data/recall_dataset.json --cache-dir bench/results

Each conversation is ingested into a fresh file with its turns' dates as ``ts=``, embedded
with MiniLM and (a second copy) digested by the heuristic digester. For every question it
records each ranker's list (depth 50): ``turn`` (BM25 over the turn), ``content`` (BM25
over the raw text only), ``turn+d`` and ``digest`` (the digested copy: BM25 over turn +
digest, over summary + keywords alone), ``window`` at radius 1..3 with the date column
weighted 1 or TEMPORAL_DATE_WEIGHT, and ``dense`` (MiniLM over the single turn).

A fusion policy (:class:`pmm.recall.recaller.FusionPolicy`) is a set of weights, an override for
temporal questions, and a switch to dense-led weights when the top turn-BM25 hits hold
few of the query's words; policies are searched on a grid, offline, by
``bench/fusion_grid.py``. Folds hold out every ``folds``-th conversation of each dataset
together; the policy best on the other folds (mean over datasets of the mean recall@10
over question kinds) is scored on the held-out conversations. Printed: per-kind
recall@10 of every single ranker, the folds, the best policies on all the data, then
recall@1/5/10/25 and MRR of the rankers, the old defaults and the shipped ones (with and
without digests), and the rule "on every kind the default is not below its best single
ranker", for hybrid and keyword mode. ``bench/fusion_signals.py`` searches further
query-time signals on the same cached rankings.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from pmm.embed.backfill import embed_pending
from pmm.embed.index import VectorIndex
from pmm.embed.sentence import SentenceEmbedder
from pmm.recall.recaller import TEMPORAL_DATE_WEIGHT
from pmm.records import NewEvent
from pmm.storage.sqlite import EventStore
from pmm.text.window_keys import is_temporal
from pmm.text.words import words

DEPTH = 50
TURN_KINDS = ("prompt", "response")
RADII = (1, 2, 3)


def load(path: Path) -> dict[str, Any]:

    return dict(json.loads(path.read_text(encoding="utf-8")))


def ingest(store: EventStore, conversation: dict[str, Any]) -> dict[int, str]:
    entries = []
    ids = []
    for session in conversation["sessions"]:
        for turn in session["turns"]:
            role = turn.get("role") or "user"
            entries.append(
                NewEvent(
                    "prompt" if role == "user" else "response",
                    turn["text"],
                    session["id"],
                    role,
                    None,
                    turn.get("date") or session.get("date"),
                )
            )
            ids.append(turn["id"])
    events = store.append_many(entries)
    return {e.id: t for e, t in zip(events, ids, strict=True)}


def rankings(data_path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per question: type, conversation, answers and every ranker's list of turn ids;
    with the data, plus the digested copy's searchable text of every turn."""
    from pmm.digest.heuristic import HeuristicDigester

    data = load(data_path)
    data["digested_text"] = {}
    embedder = SentenceEmbedder("", device="cpu")
    digester = HeuristicDigester()
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in data["questions"]:
        by_conv[q["conversation"]].append(q)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pmm-fusion-") as tmp:
        for conv in data["conversations"]:
            path = Path(tmp) / f"{conv['id']}.db"
            with EventStore(path, window_radius=RADII[0]) as store:
                to_turn = ingest(store, conv)
                embed_pending(store, embedder, kinds=TURN_KINDS, batch_size=64)
                events = store.events(kinds=TURN_KINDS)
                digests = digester.digest_many([e.text for e in events], [e.role for e in events])
                dpath = Path(tmp) / f"{conv['id']}-d.db"
                with EventStore(dpath) as dstore:
                    ingest(dstore, conv)
                    dstore.set_digests(
                        (e.id, d.summary, d.keywords, d.method)
                        for e, d in zip(events, digests, strict=True)
                    )
                    for e, d in zip(events, digests, strict=True):
                        text = " ".join([e.text, d.summary or "", *d.keywords])
                        data["digested_text"][to_turn[e.id]] = text
                    qs = by_conv[conv["id"]]
                    for q in qs:
                        row = {
                            "type": q.get("type", "?"),
                            "question": q["question"],
                            "conv": conv["id"],
                            "answers": set(q["answer_ids"]),
                            "temporal": is_temporal(words(q["question"].lower())),
                            "lists": {},
                            "scores": {},
                        }
                        for key in ("turn", "content"):
                            found = store.search_text(q["question"], limit=DEPTH, key=key)
                            row["lists"][key] = [to_turn[i] for i, _ in found]
                            row["scores"][key] = [s for _, s in found]
                        for key, name in (("turn", "turn+d"), ("digest", "digest")):
                            found = dstore.search_text(q["question"], limit=DEPTH, key=key)
                            row["lists"][name] = [to_turn[i] for i, _ in found]
                            row["scores"][name] = [s for _, s in found]
                        rows.append(row)
                index = VectorIndex(store, embedder.model_name, embedder.dim)
                vectors = embedder.embed([q["question"] for q in qs])
                for row, vec in zip(rows[-len(qs) :], vectors, strict=True):
                    found = index.search(np.asarray(vec), DEPTH, kinds=TURN_KINDS)
                    row["lists"]["dense"] = [to_turn[i] for i, _ in found]
                    row["scores"]["dense"] = [s for _, s in found]
            for radius in RADII:
                with EventStore(path, window_radius=radius) as store:
                    for row, q in zip(rows[-len(qs) :], qs, strict=True):
                        for dw in (1.0, TEMPORAL_DATE_WEIGHT):
                            found = store.search_text(
                                q["question"], limit=DEPTH, key="window", date_weight=dw
                            )
                            name = f"window{radius}@{dw:g}"
                            row["lists"][name] = [to_turn[i] for i, _ in found]
                            row["scores"][name] = [s for _, s in found]
            print(f"  {conv['id']}: {len(qs)} questions", flush=True)
    return rows, data


# -- scoring -------------------------------------------------------------------------------

KS = (1, 5, 10, 25)


def idf_tables(data: dict[str, Any], digests: bool) -> dict[str, dict[str, float]]:
    """Per conversation: the inverse document frequency of every question word, from
    :meth:`EventStore.document_frequencies` of a keyword-only copy of the conversation
    (its turns' digested text when ``digests``), as the engine reads it."""
    from pmm.recall.fusion import inverse_document_frequencies
    from pmm.text.words import search_terms

    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="pmm-idf-") as tmp:
        for conv in data["conversations"]:
            if digests:
                text = data["digested_text"]
                sessions = [
                    {**s, "turns": [{**t, "text": text[t["id"]]} for t in s["turns"]]}
                    for s in conv["sessions"]
                ]
                conv = {**conv, "sessions": sessions}
            qwords = {
                w
                for q in data["questions"]
                if q["conversation"] == conv["id"]
                for w in search_terms(q["question"])
            }
            with EventStore(Path(tmp) / f"{conv['id']}.db") as store:
                ingest(store, conv)
                store.sync_search_index()
                out[conv["id"]] = inverse_document_frequencies(
                    store.document_frequencies(sorted(qwords)), store.search_index_upto()
                )
    return out


def prepare(path: Path, cache_dir: Path | None) -> list[dict[str, Any]]:
    """The rows of one dataset (rankings cached in ``cache_dir``), with the coverage of
    each question over its top turn hits, with and without digests, plain and weighted
    by inverse document frequency."""
    from pmm.recall.fusion import EVIDENCE_HITS, lexical_coverage

    cache = cache_dir / f"fusion-{path.stem}.pkl" if cache_dir else None
    if cache and cache.exists():
        rows, data = pickle.loads(cache.read_bytes())
    else:
        rows, data = rankings(path)
        if cache:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_bytes(pickle.dumps((rows, data)))
    idf_cache = cache_dir / f"fusion-idf-{path.stem}.pkl" if cache_dir else None
    if idf_cache and idf_cache.exists():
        idf, idf_d = pickle.loads(idf_cache.read_bytes())
    else:
        idf, idf_d = idf_tables(data, False), idf_tables(data, True)
        if idf_cache:
            idf_cache.write_bytes(pickle.dumps((idf, idf_d)))
    raw = {t["id"]: t["text"] for c in data["conversations"] for s in c["sessions"]
           for t in s["turns"]}  # fmt: skip
    order = {tid: n for n, tid in enumerate(raw)}
    for row in rows:
        row["dataset"] = path.stem.removesuffix("_dataset")
        row["order"] = order
        top = row["lists"]["turn"][:EVIDENCE_HITS]
        texts = [raw[t] for t in top]
        row["coverage"] = lexical_coverage(row["question"], texts)
        row["coverage_idf"] = lexical_coverage(row["question"], texts, idf[row["conv"]])
        top = row["lists"]["turn+d"][:EVIDENCE_HITS]
        texts = [data["digested_text"][t] for t in top]
        row["coverage_d"] = lexical_coverage(row["question"], texts)
        row["coverage_idf_d"] = lexical_coverage(row["question"], texts, idf_d[row["conv"]])
    return rows


def fused(row: dict[str, Any], policy: Any, digests: bool = False) -> list[str]:
    """The row's ranking under ``policy``, fused as Recaller.recall fuses."""
    from fusion_grid import COLUMNS, column_lists, coverage_key

    from pmm.recall.recaller import rrf_fuse

    coverage = row[coverage_key(policy, digests)] if policy.needs_coverage else None
    weights = policy.weights_for(temporal=row["temporal"], coverage=coverage)
    order = row["order"]
    lists = {
        c: [order[t] for t in ids]
        for c, ids in zip(COLUMNS, column_lists(row, digests), strict=True)
        if weights.get(c, 0) > 0
    }
    by_order = {order[t]: t for ids in column_lists(row, digests) for t in ids}
    return [by_order[i] for i, _, _ in rrf_fuse(lists, weights=weights)]


def metrics(ranked: list[str], answers: set[str]) -> dict[str, float]:
    out = {f"R@{k}": len(answers.intersection(ranked[:k])) / len(answers) for k in KS}
    first = next((n for n, t in enumerate(ranked, 1) if t in answers), None)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


def figures(rows: list[dict[str, Any]], ranked_of: Any) -> dict[str, dict[str, float]]:
    """Per kind (and ``all``): the mean of each metric."""
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    for row in rows:
        m = metrics(ranked_of(row), row["answers"])
        per[row["type"]].append(m)
        per["all"].append(m)
    return {
        kind: {name: float(np.mean([m[name] for m in ms])) for name in ms[0]}
        for kind, ms in sorted(per.items(), key=lambda kv: (kv[0] == "all", kv[0]))
    }


def contenders() -> dict[str, tuple[Any, bool]]:
    """Name -> (ranked_of(row) or a policy, with digests) for the summary tables."""
    from pmm.recall.fusion import FusionPolicy
    from pmm.recall.recaller import DEFAULT_KEYWORD_POLICY, DEFAULT_POLICY

    single = {
        "turn BM25 (baseline)": FusionPolicy({"turn": 1.0}),
        "window": FusionPolicy({"window": 1.0}),
        "dense (semantic)": FusionPolicy({"dense": 1.0}),
        "turn + digests": FusionPolicy({"turn": 1.0}),
        "digest alone": FusionPolicy({"digest": 1.0}),
        "old hybrid (turn=dense=1)": FusionPolicy({"turn": 1.0, "dense": 1.0}),
        "v1 hybrid (0.25/1.5/0.3)": FusionPolicy({"turn": 0.25, "window": 1.5, "dense": 0.3}),
        "v1 keyword (0.25/1.5)": FusionPolicy({"turn": 0.25, "window": 1.5}),
        "previous hybrid (coverage<0.5)": FusionPolicy(
            DEFAULT_POLICY.weights, DEFAULT_POLICY.temporal, DEFAULT_POLICY.low_evidence, 0.5
        ),
        "NEW hybrid default": DEFAULT_POLICY,
        "NEW keyword default": DEFAULT_KEYWORD_POLICY,
        "NEW hybrid + digests": DEFAULT_POLICY,
        "NEW keyword + digests": DEFAULT_KEYWORD_POLICY,
        "hybrid + digest key 0.5": FusionPolicy(
            {**DEFAULT_POLICY.weights, "digest": 0.5},
            DEFAULT_POLICY.temporal,
            DEFAULT_POLICY.low_evidence,
            DEFAULT_POLICY.threshold,
            DEFAULT_POLICY.idf,
            DEFAULT_POLICY.blend,
        ),
    }
    return {name: (p, "digest" in name) for name, p in single.items()}


def report(rows: list[dict[str, Any]]) -> None:
    """The summary tables and the rule, per dataset, for the shipped defaults."""

    for dataset in sorted({r["dataset"] for r in rows}):
        mine = [r for r in rows if r["dataset"] == dataset]
        kinds = sorted({r["type"] for r in mine})
        table = {
            name: figures(mine, lambda r, p=p, d=d: fused(r, p, d))
            for name, (p, d) in contenders().items()
        }
        print(f"\n== {dataset}: recall@10 per kind ({len(mine)} questions)")
        print(f"{'':<32}" + "".join(f"{k:>12}" for k in [*kinds, "all"]) + "   x turn")
        base = table["turn BM25 (baseline)"]["all"]["R@10"]
        for name, figs in table.items():
            cells = "".join(f"{figs[k]['R@10']:>12.3f}" for k in [*kinds, "all"])
            print(f"{name:<32}{cells}{figs['all']['R@10'] / base:>9.2f}")
        print(f"\n== {dataset}: all questions")
        print(f"{'':<32}" + "".join(f"{m:>8}" for m in [*(f"R@{k}" for k in KS), "MRR"]))
        for name, figs in table.items():
            print(f"{name:<32}" + "".join(f"{v:>8.3f}" for v in figs["all"].values()))
        for mode, singles in (
            ("hybrid", ("turn BM25 (baseline)", "window", "dense (semantic)")),
            ("keyword", ("turn BM25 (baseline)", "window")),
        ):
            name = f"NEW {mode} default"
            for kind in kinds:
                best = max(singles, key=lambda s: table[s][kind]["R@10"])
                mine_r, best_r = table[name][kind]["R@10"], table[best][kind]["R@10"]
                flag = "ok" if mine_r >= best_r - 1e-9 else "BELOW"
                print(f"  rule {mode} {kind}: {mine_r:.3f} vs best single {best} "
                      f"{best_r:.3f}: {flag}")  # fmt: skip


def main() -> int:
    from fusion_grid import cross_validate, hybrid_grid, keyword_grid, label, recall_table

    from pmm.recall.fusion import FusionPolicy

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, action="append", required=True)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--cache-dir", type=Path, help="where rankings are cached (reused)")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = [row for path in args.data for row in prepare(path, args.cache_dir)]
    print(f"rankings of {len(rows)} questions in {time.perf_counter() - started:.0f} s")
    for dataset in sorted({r["dataset"] for r in rows}):
        mine = [r for r in rows if r["dataset"] == dataset]
        kinds = sorted({r["type"] for r in mine})
        print(f"\n== {dataset}: recall@10 per kind, single rankers")
        print(f"{'ranker':<14}" + "".join(f"{k:>12}" for k in [*kinds, "all"]))
        for name in mine[0]["lists"]:
            figs = figures(mine, lambda r, n=name: r["lists"][n])
            print(f"{name:<14}" + "".join(f"{figs[k]['R@10']:>12.3f}" for k in [*kinds, "all"]))
    for what, grid in (
        ("hybrid, plain coverage", hybrid_grid(idf=False)),
        ("hybrid, idf-weighted coverage", hybrid_grid(idf=True)),
        ("hybrid, either coverage", hybrid_grid()),
        ("keyword (no embeddings)", keyword_grid()),
    ):
        table = recall_table(rows, grid)
        baselines = {"turn BM25": len(grid), "v1": len(grid) + 1}
        extra = [
            FusionPolicy({"turn": 1.0}),
            FusionPolicy({"turn": 0.25, "window": 1.5, "dense": 0.3 if "hybrid" in what else 0}),
        ]
        table = np.hstack([table, recall_table(rows, extra)])
        print(f"\n{args.folds}-fold cross-validation by conversation, {what}, {len(grid)} policies")
        cross_validate(table, rows, grid + extra, args.folds, baselines)
        from fusion_grid import kinds_mean

        everything = kinds_mean(table[:, : len(grid)], rows, np.ones(len(rows), dtype=bool))
        print("best 8 policies on all data (mean over datasets of the mean R@10 over kinds):")
        for i in np.argsort(-everything)[:8]:
            print(f"  {everything[i]:.3f}  {label(grid[i])}")
    report(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
