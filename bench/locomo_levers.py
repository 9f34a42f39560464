"""One lever at a time on LoCoMo, held out by conversation as ``bench/locomo_cv.py`` folds:
the shipped learned fusion with and without a feature, or with another window list.

    python bench/locomo.py --lists L.json [--prf 5]          # the lists, once (minutes)
    python bench/locomo_levers.py --lists L.json --lever question_answered
    python bench/locomo_levers.py --lists L.json --window prf-rrf    # PRF on the window key

``--lever F`` (repeatable): the shipped features (``locomo_cv.SHIPPED_WITHOUT`` left out)
without and with ``F``, each fitted per fold on the eight training conversations, printed
per fold and per category (R@10 / R@25 / H@10) with every cell that lost. Without a lever:
the shipped fusion alone, per fold and per category, with the window list ``--window``
names (compare runs with ``--window window``). ``--demote-questions``: the shipped fusion
without and with the rule "a question turn never ranks above a turn that is no question and
holds every query word it holds" (issue 22). ``--neighbours``: the shipped fusion without and
with its best hits' neighbouring turns moved up (after position P, the turns next to each
of the top M hits; M and P chosen per fold on the training conversations by R@25). Hybrid
and keyword mode both.

Levers beyond the shipped features (``bench/locomo_stages.py``), each against the shipped
fusion in the same run: ``--lever session_bm25`` / ``session_dense`` / ``session_mass300``
(two-stage recall: the rank of the candidate's session, sessions ranked by BM25 over their
turns, by their mean vector, or by their turns' mass in the 300-deep lists),
``--lever digest --digest-lists D.json`` (the digest ranker's ranks, from ``locomo.py
--digests --lists``), ``--lever rank_shape``; ``--depth N [--deeper RANKER]`` (candidates
from deeper lists; record them with ``locomo.py --depth``), ``--widen S,N`` (items ranked
51..N of the S best sessions by BM25 added), ``--fit-c C`` / ``--unbalanced`` (the fit).
A column that reads the dense ranker is left out of keyword mode.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from locomo import DEFAULT_DATA  # noqa: E402
from locomo_cv import (  # noqa: E402
    FOLDS,
    GROUPS,
    SHIPPED_WITHOUT,
    WINDOW_LISTS,
    Question,
    cross_validate,
    fold_table,
    learned,
    load,
    metric_rows,
)
from locomo_data import CATEGORIES, load_locomo  # noqa: E402
from locomo_stages import (  # noqa: E402
    add_digest_ranks,
    add_rank_shape,
    add_session_ranks,
    learned_extra,
    load_records,
    via,
    widened,
)

from pmm.recall.rerank import is_question_turn, query_terms  # noqa: E402
from pmm.text.stemmer import fts_tokens  # noqa: E402

Fit = Callable[[list[Question]], Any]


def modes(shipped: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The shipped features of hybrid mode and of keyword mode (no dense ranker)."""
    return [("hybrid", list(shipped)), ("keyword", [f for f in shipped if "dense" not in f])]


def compare_report(
    qs: list[Question], title: str, pairs: dict[str, tuple[Fit, Fit]]
) -> dict[str, Any]:
    """Each mode's ``(without, with)`` fits held out, per fold and per category (R@10 /
    R@25 / H@10), and every cell that lost: what adopting the lever buys."""
    out: dict[str, Any] = {}
    metrics = ("R@10", "R@25", "H@10")
    for mode, (before, after) in pairs.items():
        folds = [fold_table(qs, fit) for fit in (before, after)]
        tables = [cross_validate(qs, fit)[0] for fit in (before, after)]
        print(f"\n{title}, {mode}: held out, without -> with")
        for b, a in zip(*folds, strict=True):
            line = "  ".join(f"{m} {b[m]:.3f} -> {a[m]:.3f}" for m in metrics)
            print(f"  fold {','.join(b['held_out']):<16} {line}")
        losses = []
        for cat in ("all", *CATEGORIES.values()):
            if cat not in tables[0]:
                continue
            pair = [(m, tables[0][cat][m], tables[1][cat][m]) for m in metrics]
            line = "  ".join(f"{m} {x:.3f} -> {y:.3f}" for m, x, y in pair)
            print(f"  {cat:<16}       {line}")
            losses += [f"{cat} {m}" for m, x, y in pair if y < x - 1e-9]
        losses += [
            f"fold {','.join(b['held_out'])} {m}"
            for b, a in zip(*folds, strict=True)
            for m in metrics
            if a[m] < b[m] - 1e-9
        ]
        print(f"  losses: {', '.join(losses) if losses else 'none'}")
        out[mode] = {"folds": folds, "tables": tables, "losses": losses}
    return out


def lever_report(
    qs: list[Question], lever: Sequence[str], shipped: Sequence[str]
) -> dict[str, Any]:
    """The shipped fusion without and with the features ``lever``."""
    pairs = {
        mode: (
            learned([f for f in cols if f not in lever]),
            learned([*dict.fromkeys([*cols, *lever])]),
        )
        for mode, cols in modes(shipped)
    }
    return compare_report(qs, f"lever {'+'.join(lever)}", pairs)


def demoted(qs: list[Question], data: Path) -> Callable[[Fit], Fit]:
    """A fit wrapper: the rule "a question turn never ranks above a turn that is no question
    and holds every query word it holds" applied to the fitted ranking."""
    convs = {c.sample_id: c for c in load_locomo(data)}
    held: dict[int, dict[int, tuple[bool, frozenset[str]]]] = {}
    for q in qs:
        texts = {n: t.text for n, t in enumerate(convs[q.conv].turns, start=1)}
        terms = query_terms(q.rec["question"])
        held[id(q)] = {
            i: (is_question_turn(texts[i]), terms.intersection(fts_tokens(texts[i]))) for i in q.ids
        }

    def wrap(fit: Fit) -> Fit:
        def fitted(train: list[Question]) -> Any:
            rank = fit(train)

            def ranked(q: Question) -> list[int]:
                return demote(rank(q), held[id(q)])

            return ranked

        return fitted

    return wrap


def demote(order: list[int], held: dict[int, tuple[bool, frozenset[str]]]) -> list[int]:
    """``order`` with each question that holds query words moved just below the first turn
    that is no question and holds them all (where one is in ``order``)."""
    told = [words for i in order for asks, words in [held[i]] if not asks and words]
    out: list[int] = []
    waiting: list[int] = []
    for i in order:
        asks, words = held[i]
        if asks and words and any(words <= t for t in told):
            waiting.append(i)
            continue
        out.append(i)
        if not asks and words:
            out += [w for w in waiting if held[w][1] <= words]
            waiting = [w for w in waiting if not held[w][1] <= words]
    return out + waiting


NEIGHBOUR_GRID = [(m, p) for m in (1, 2, 3, 5) for p in (5, 10, 15, 20)]
"""``--neighbours``: (M top hits whose neighbours move up, position P they move to)."""


def with_neighbours(order: list[int], top: int, at: int) -> list[int]:
    """``order`` with the turns next to its first ``top`` hits (position ± 1) placed right
    after position ``at``, unless they already rank there or above."""
    head = order[:at]
    seen = set(head)
    moved = []
    for i in order[:top]:
        for n in (i - 1, i + 1):
            if n > 0 and n not in seen:
                seen.add(n)
                moved.append(n)
    return head + moved + [i for i in order[at:] if i not in seen]


def neighboured(fit: Fit) -> Fit:
    """A fit wrapper: the fitted ranking with neighbours moved up, M and P chosen on the
    training questions by R@25 (see :data:`NEIGHBOUR_GRID`)."""

    def fitted(train: list[Question]) -> Any:
        rank = fit(train)
        lists = [rank(q) for q in train]

        def r25(top: int, at: int) -> float:
            moved = [with_neighbours(ids, top, at) for ids in lists]
            return float(metric_rows(train, moved)["all"]["R@25"])

        top, at = max(NEIGHBOUR_GRID, key=lambda mp: r25(*mp))
        print(f"    neighbours: top {top}, after position {at} (training R@25 {r25(top, at):.3f})")

        def ranked(q: Question) -> list[int]:
            return with_neighbours(rank(q), top, at)

        return ranked

    return fitted


EXTRA_LEVERS: dict[str, tuple[str, ...]] = {
    "session_bm25": ("session_bm25_rr5", "session_bm25_top"),
    "session_dense": ("session_dense_rr5", "session_dense_top"),
    "session_stemmed": ("session_stemmed_rr5", "session_stemmed_top"),
    "session_mass300": ("session_mass300_rr5", "session_mass300_top"),
    "session_mass100": ("session_mass100_rr5", "session_mass100_top"),
    "digest": ("digest_rr60", "digest_rr5"),
    "rank_shape": (
        *(f"{r}_{x}" for r in ("turn", "window", "dense") for x in ("in", "rr20")),
        "n_lists",
    ),
}
"""``--lever NAME`` beyond the shipped features (``locomo_stages``, see the docstring)."""


def add_extras(qs: Sequence[Question], lever: Sequence[str], args: Any) -> None:
    """The columns of each ``--lever`` of :data:`EXTRA_LEVERS` on every question."""
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    for q in qs:
        q.rec["_dia"] = [t.dia_id for t in convs[q.conv].turns]
    for name in lever:
        if name.startswith("session_"):
            add_session_ranks(qs, convs, name.removeprefix("session_"), args.cache)
        elif name == "rank_shape":
            add_rank_shape(qs)
        elif name == "digest":
            if args.digest_lists is None:
                raise SystemExit(
                    "--lever digest needs --digest-lists (locomo.py --digests --lists)"
                )
            add_digest_ranks(qs, load_records(args.digest_lists))


def deeper(qs: Sequence[Question], args: Any) -> dict[int, Question]:
    """Each question with deeper candidate lists: ``--depth N`` (every ranker's list, or
    those ``--deeper`` names, N deep) or ``--widen S,N`` (items ranked 51..N kept only where
    their session is among the question's S best sessions by BM25 over sessions)."""
    convs = {c.sample_id: c for c in load_locomo(args.data)}
    other: dict[int, Question] = {}
    for q in qs:
        conv = convs[q.conv]
        position = {t.dia_id: n for n, t in enumerate(conv.turns, start=1)}
        if args.widen:
            top, depth = (int(x) for x in args.widen.split(","))
            add_session_ranks([q], convs, "bm25")
            best = {s for s, r in q.session_rank.items() if r <= top}  # type: ignore[attr-defined]
            session = {t.dia_id: t.session for t in conv.turns}
            rec = widened(q.rec, lambda d, s=session, b=best: s[d] in b, depth)
        else:
            depth = args.depth
            rec = dict(q.rec)
            rec["rankers"] = {
                r: ids[:depth] if not args.deeper or r in args.deeper else ids[:50]
                for r, ids in q.rec["rankers"].items()
            }
        other[id(q)] = Question(rec, conv, position, depth)
    return other


def extra_report(
    qs: list[Question], lever: Sequence[str], shipped: Sequence[str], args: Any
) -> dict[str, Any]:
    """The shipped fusion on recall's lists, against the same with the extra columns of
    ``lever`` (:data:`EXTRA_LEVERS`) and / or deeper candidate lists (:func:`deeper`)."""
    extra = [c for name in lever for c in EXTRA_LEVERS[name]]
    # keyword mode has no dense ranker: no column that reads its list
    keyword_extra = [c for c in extra if not any(x in c for x in ("dense", "mass", "n_lists"))]
    labels = [f"lever {'+'.join(lever)}"] if lever else []
    other: dict[int, Question] | None = None
    if args.depth or args.widen:
        other = deeper(qs, args)
        which = "+".join(args.deeper) if args.deeper else "every"
        labels.append(f"widened by sessions {args.widen}" if args.widen
                      else f"{which} list {args.depth} deep")  # fmt: skip
    add_extras(list(other.values()) if other else qs, lever, args)
    pairs = {}
    c, balanced = float(args.fit_c), not args.unbalanced
    if c != 1.0 or not balanced:
        labels.append(f"fitted with C={c:g}" + (", classes unweighted" if not balanced else ""))
    for mode, cols in modes(shipped):
        fit = learned_extra(cols, extra if mode == "hybrid" else keyword_extra, c, balanced)
        pairs[mode] = (learned(cols), via(other, fit) if other else fit)
    return compare_report(qs, ", ".join(labels), pairs)


def shipped_report(qs: list[Question], shipped: Sequence[str]) -> dict[str, Any]:
    """The shipped fusion (hybrid and keyword) held out: pooled per category and per fold
    (R@10 / R@25 / H@10), one fit per fold (``--shipped-only``, e.g. with ``--window``)."""
    convs = list(dict.fromkeys(q.conv for q in qs))
    out: dict[str, Any] = {}
    metrics = ("R@10", "R@25", "H@10")
    for mode, cols in modes(shipped):
        fit = learned(cols)
        held: list[tuple[Question, list[int]]] = []
        folds = []
        for f in range(FOLDS):
            test = convs[2 * f : 2 * f + 2]
            ranker = fit([q for q in qs if q.conv not in test])
            mine = [(q, ranker(q)) for q in qs if q.conv in test]
            held += mine
            m = metric_rows([q for q, _ in mine], [ids for _, ids in mine])["all"]
            folds.append({"held_out": test, **{k: m[k] for k in metrics}})
        table = metric_rows([q for q, _ in held], [ids for _, ids in held])
        print(f"\nshipped {mode}, held out:")
        for f in folds:
            line = "  ".join(f"{m} {f[m]:.3f}" for m in metrics)
            print(f"  fold {','.join(f['held_out']):<16} {line}")
        for cat in ("all", *CATEGORIES.values()):
            if cat in table:
                line = "  ".join(f"{m} {table[cat][m]:.3f}" for m in metrics)
                print(f"  {cat:<16}      {line}")
        out[mode] = {"folds": folds, "table": table}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lists", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "locomo10.json")
    parser.add_argument(
        "--lever",
        action="append",
        default=[],
        metavar="FEATURE",
        help="compare the shipped fusion with and without these features",
    )
    parser.add_argument(
        "--window",
        choices=WINDOW_LISTS,
        default="window",
        help="the window ranker's list (pseudo-relevance feedback)",
    )
    parser.add_argument(
        "--demote-questions",
        action="store_true",
        help="the rule: a question never above a told turn holding its words",
    )
    parser.add_argument(
        "--neighbours",
        action="store_true",
        help="the best hits' neighbouring turns moved up (M, P chosen per fold)",
    )
    parser.add_argument("--digest-lists", type=Path,
                        help="lists of bench/locomo.py --digests (for --lever digest)")  # fmt: skip
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "pmm-locomo-vectors"
                        / "sentence-transformers_all-MiniLM-L6-v2.npz",
                        help="bench/locomo.py's vectors (--lever session_dense)")  # fmt: skip
    parser.add_argument("--depth", type=int, default=0,
                        help="compare with each ranker's list this deep")  # fmt: skip
    parser.add_argument("--deeper", action="append", default=[], metavar="RANKER",
                        help="with --depth: only this ranker deeper (others 50)")  # fmt: skip
    parser.add_argument("--widen", metavar="S,N",
                        help="compare with the S best sessions' items 51..N added")  # fmt: skip
    parser.add_argument("--fit-c", type=float, default=1.0,
                        help="compare with the logistic regression's C set so")  # fmt: skip
    parser.add_argument("--unbalanced", action="store_true",
                        help="compare with the classes unweighted in the fit")  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    qs = load(args.lists, args.data, args.window, vectors=args.cache)
    print(f"{len(qs)} questions, window list: {args.window}")
    shipped = [f for g in GROUPS.values() for f in g if f not in SHIPPED_WITHOUT]
    if args.demote_questions:
        wrap = demoted(qs, args.data)
        pairs = {mode: (learned(cols), wrap(learned(cols))) for mode, cols in modes(shipped)}
        results = compare_report(qs, "rule: questions below told turns", pairs)
    elif args.neighbours:
        pairs = {mode: (learned(cols), neighboured(learned(cols))) for mode, cols in modes(shipped)}
        results = compare_report(qs, "neighbours of the best hits moved up", pairs)
    elif (
        args.depth
        or args.widen
        or args.fit_c != 1.0
        or args.unbalanced
        or (args.lever and set(args.lever) <= set(EXTRA_LEVERS))
    ):
        results = extra_report(qs, args.lever, shipped, args)
    elif args.lever:
        results = lever_report(qs, args.lever, shipped)
    else:
        results = shipped_report(qs, shipped)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
