"""Which recall keys and fusion weights to ship: per-ranker recall and k-fold
cross-validation (by conversation) of weighted reciprocal rank fusion.

    python bench/fusion.py --data bench/data/chat_dataset.json --folds 4
    python bench/fusion.py --data bench/data/recall_dataset.json --folds 4

Each conversation is ingested into a fresh file with its turns' dates as ``ts=``, embedded
with MiniLM and (a second copy) digested by the heuristic digester. For every question it
records each ranker's list (depth 50): ``turn`` (BM25 over the turn), ``content`` (BM25
over the raw text only), ``digest`` (BM25 over summary + keywords), ``window`` at radius
1..3 with the date column weighted 1 or TEMPORAL_DATE_WEIGHT, and ``dense`` (MiniLM over
the single turn). Fusion weights are then searched on a grid, offline: for each fold the
best weights on the other folds (mean recall@10 over question kinds) are scored on the
held-out conversations. Printed: per-kind recall@10 of every single ranker, the folds,
and the weights chosen on all the data with their per-kind figures; the rule "on every
kind the chosen fusion is not below its best single ranker" is checked and reported.
"""

from __future__ import annotations

import argparse
import itertools
import os
import pickle
import statistics
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
from pmm.recall import RRF_K, TEMPORAL_DATE_WEIGHT
from pmm.records import NewEvent
from pmm.store import EventStore
from pmm.text import words
from pmm.window_keys import is_temporal

DEPTH = 50
TURN_KINDS = ("prompt", "response")
RADII = (1, 2, 3)
GRID = {
    "turn": (0.0, 0.25, 0.5, 1.0),
    "window": (0.0, 0.5, 1.0, 1.5, 2.0),
    "dense": (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0),
    "digest": (0.0, 0.5),
}
BOOSTS = (1.0, 1.5, 2.0)
"""Factors on the window weight for temporal questions."""


def load(path: Path) -> dict[str, Any]:
    import json

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


def rankings(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per question: type, conversation, answers and every ranker's list of turn ids."""
    from pmm.digest.heuristic import HeuristicDigester

    data = load(args.data)
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
                    qs = by_conv[conv["id"]]
                    for q in qs:
                        row = {
                            "type": q.get("type", "?"),
                            "conv": conv["id"],
                            "answers": set(q["answer_ids"]),
                            "temporal": is_temporal(words(q["question"].lower())),
                            "lists": {},
                        }
                        for key in ("turn", "content"):
                            found = store.search_text(q["question"], limit=DEPTH, key=key)
                            row["lists"][key] = [to_turn[i] for i, _ in found]
                        for key, name in (("turn", "turn+d"), ("digest", "digest")):
                            found = dstore.search_text(q["question"], limit=DEPTH, key=key)
                            row["lists"][name] = [to_turn[i] for i, _ in found]
                        rows.append(row)
                index = VectorIndex(store, embedder.model_name, embedder.dim)
                vectors = embedder.embed([q["question"] for q in qs])
                for row, vec in zip(rows[-len(qs) :], vectors, strict=True):
                    found = index.search(np.asarray(vec), DEPTH, kinds=TURN_KINDS)
                    row["lists"]["dense"] = [to_turn[i] for i, _ in found]
            for radius in RADII:
                with EventStore(path, window_radius=radius) as store:
                    for row, q in zip(rows[-len(qs) :], qs, strict=True):
                        for dw in (1.0, TEMPORAL_DATE_WEIGHT):
                            found = store.search_text(
                                q["question"], limit=DEPTH, key="window", date_weight=dw
                            )
                            row["lists"][f"window{radius}@{dw:g}"] = [to_turn[i] for i, _ in found]
            print(f"  {conv['id']}: {len(qs)} questions", flush=True)
    return rows, data


def recall_at(ranked: list[str], answers: set[str], k: int = 10) -> float:
    return len(answers.intersection(ranked[:k])) / len(answers)


def score_matrix(row: dict[str, Any]) -> tuple[list[str], np.ndarray]:
    """Candidates of one question and their ``1 / (RRF_K + rank)`` in each column of
    :data:`COLUMNS` (0 where a ranker does not list them)."""
    dw = TEMPORAL_DATE_WEIGHT if row["temporal"] else 1.0
    lists = [row["lists"][c if not c.startswith("window") else f"{c}@{dw:g}"] for c in COLUMNS]
    cands = sorted({t for ids in lists for t in ids})
    where = {t: i for i, t in enumerate(cands)}
    m = np.zeros((len(cands), len(COLUMNS)))
    for j, ids in enumerate(lists):
        for rank, tid in enumerate(ids, 1):
            m[where[tid], j] = 1.0 / (RRF_K + rank)
    return cands, m


def by_kind(rows: list[dict[str, Any]], ranked_of: Any) -> dict[str, float]:
    per: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        per[row["type"]].append(recall_at(ranked_of(row), row["answers"]))
    out = {k: statistics.fmean(v) for k, v in sorted(per.items())}
    out["all"] = statistics.fmean(x for v in per.values() for x in v)
    out["kinds"] = statistics.fmean(out[k] for k in per)
    return out


def configs() -> list[tuple[dict[str, float], int, float]]:
    out = []
    for t, w, d, g in itertools.product(*GRID.values()):
        if t == 0 and w == 0 and g == 0:
            continue
        for radius in RADII if w > 0 else (RADII[0],):
            for boost in BOOSTS if w > 0 else (1.0,):
                out.append(({"turn": t, "window": w, "dense": d, "digest": g}, radius, boost))
    return out


COLUMNS = ("turn", "dense", "digest", *(f"window{r}" for r in RADII))


def config_matrix(grid: list[tuple[dict[str, float], int, float]], temporal: bool) -> np.ndarray:
    w = np.zeros((len(COLUMNS), len(grid)))
    for j, (weights, radius, boost) in enumerate(grid):
        w[0, j], w[1, j], w[2, j] = weights["turn"], weights["dense"], weights["digest"]
        w[3 + RADII.index(radius), j] = weights["window"] * (boost if temporal else 1.0)
    return w


def recall_table(rows: list[dict[str, Any]], grid: list[Any]) -> np.ndarray:
    """recall@10 of every question (rows) under every configuration (columns)."""
    mats = {t: config_matrix(grid, t) for t in (False, True)}
    out = np.zeros((len(rows), len(grid)))
    for i, row in enumerate(rows):
        cands, m = score_matrix(row)
        if not cands:
            continue
        scores = m @ mats[row["temporal"]]  # candidates x configs
        top = np.argsort(-scores, axis=0, kind="stable")[:10]
        hit = np.array([t in row["answers"] for t in cands], dtype=float)
        alive = np.take_along_axis(scores, top, axis=0) > 0
        out[i] = (hit[top] * alive).sum(axis=0) / len(row["answers"])
    return out


def kind_means(table: np.ndarray, rows: list[dict[str, Any]], mask: np.ndarray) -> dict[str, Any]:
    kinds = sorted({r["type"] for r in rows})
    types = np.array([r["type"] for r in rows])
    per = {k: table[mask & (types == k)].mean(axis=0) for k in kinds}
    per["all"] = table[mask].mean(axis=0)
    per["kinds"] = np.mean([per[k] for k in kinds], axis=0)
    return per


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--cache", type=Path, help="pickle of the rankings (reused if present)")
    parser.add_argument("--show", action="append", default=[], help="a configuration label")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.cache and args.cache.exists():
        rows, data = pickle.loads(args.cache.read_bytes())
    else:
        rows, data = rankings(args)
        if args.cache:
            args.cache.write_bytes(pickle.dumps((rows, data)))
    print(f"rankings of {len(rows)} questions in {time.perf_counter() - started:.0f} s\n")
    kinds = sorted({r["type"] for r in rows})
    head = f"{'ranker':<22}" + "".join(f"{k:>12}" for k in [*kinds, "all", "kinds"])
    print("recall@10 per kind, single rankers\n" + head)
    singles = {}
    for name in rows[0]["lists"]:
        figs = by_kind(rows, lambda r, n=name: r["lists"][n])
        singles[name] = figs
        print(f"{name:<22}" + "".join(f"{figs[k]:>12.3f}" for k in [*kinds, "all", "kinds"]))
    grid = configs()
    table = recall_table(rows, grid)
    convs = [c["id"] for c in data["conversations"]]
    folds = [convs[i :: args.folds] for i in range(args.folds)]
    conv_of = np.array([r["conv"] for r in rows])
    turn_only = grid.index(({"turn": 1.0, "window": 0.0, "dense": 0.0, "digest": 0.0}, 1, 1.0))

    def label(cfg: tuple[dict[str, float], int, float]) -> str:
        w, radius, boost = cfg
        return ",".join(f"{k}={v:g}" for k, v in w.items()) + f" r={radius} boost={boost:g}"

    for without_dense in (True, False):
        cross_validate(table, rows, grid, folds, conv_of, turn_only, kinds, label, without_dense)
    return summarise(table, rows, grid, kinds, label, head, singles, args)


def cross_validate(
    table: np.ndarray,
    rows: list[dict[str, Any]],
    grid: list[Any],
    folds: list[list[str]],
    conv_of: np.ndarray,
    turn_only: int,
    kinds: list[str],
    label: Any,
    without_dense: bool,
) -> None:
    allowed = np.array([not without_dense or c[0]["dense"] == 0 for c in grid])
    what = "keyword rankers only (no embeddings)" if without_dense else "all rankers"
    print(f"\n{len(folds)}-fold cross-validation by conversation, {what}")
    held = []
    for n, test in enumerate(folds, 1):
        train_mask = ~np.isin(conv_of, test)
        train = np.where(allowed, kind_means(table, rows, train_mask)["kinds"], -1.0)
        best = int(np.argmax(train))
        figs = kind_means(table, rows, ~train_mask)
        held.append(figs["kinds"][best])
        print(
            f"fold {n} (test {','.join(test)}): chose {label(grid[best])}; "
            f"test R@10 {figs['kinds'][best]:.3f} vs turn BM25 {figs['kinds'][turn_only]:.3f}; "
            + " ".join(f"{k}={figs[k][best]:.3f}" for k in kinds)
        )
    print(f"held-out mean R@10 (mean over kinds): {statistics.fmean(held):.3f}")


def summarise(
    table: np.ndarray,
    rows: list[dict[str, Any]],
    grid: list[Any],
    kinds: list[str],
    label: Any,
    head: str,
    singles: dict[str, Any],
    args: argparse.Namespace,
) -> int:
    everything = kind_means(table, rows, np.ones(len(rows), dtype=bool))
    order = np.argsort(-everything["kinds"])
    print("\nbest 10 configurations on all data (mean R@10 over kinds | all):")
    for i in order[:10]:
        print(f"  {everything['kinds'][i]:.3f} | {everything['all'][i]:.3f}  {label(grid[i])}")
    for text in args.show:
        i = next(j for j, c in enumerate(grid) if label(c) == text)
        print(f"  {everything['kinds'][i]:.3f} | {everything['all'][i]:.3f}  {text} (asked)")
    for text in args.show or [label(grid[int(order[0])])]:
        chosen_i = next(j for j, c in enumerate(grid) if label(c) == text)
        check_rule(everything, grid[chosen_i], chosen_i, kinds, label, head, singles)
    return 0


def check_rule(
    everything: dict[str, Any],
    chosen: Any,
    chosen_i: int,
    kinds: list[str],
    label: Any,
    head: str,
    singles: dict[str, Any],
) -> None:
    print("\nchosen: " + label(chosen))
    print(head)
    print(
        f"{'fused (chosen)':<22}"
        + "".join(f"{everything[k][chosen_i]:>12.3f}" for k in [*kinds, "all", "kinds"])
    )
    used = [
        n
        for n, w in (
            ("turn", chosen[0]["turn"]),
            (f"window{chosen[1]}@1", chosen[0]["window"]),
            ("dense", chosen[0]["dense"]),
            ("digest", chosen[0]["digest"]),
        )
        if w > 0
    ]
    for kind in kinds:
        best_single = max(singles[n][kind] for n in used)
        fused = everything[kind][chosen_i]
        flag = "ok" if fused >= best_single - 1e-9 else "BELOW"
        print(f"  rule {kind}: fused {fused:.3f} vs best single {best_single:.3f}: {flag}")


if __name__ == "__main__":
    raise SystemExit(main())
