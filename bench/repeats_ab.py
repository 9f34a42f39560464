"""What the repeat rule costs recall (issue 22: repeats do not reinforce): keyword recall
(k = 50) of LoCoMo questions on one memory, with and without the collapse of repeated
utterances (:func:`pmm.recall.sources.one_copy` and the hits' collapse in
:func:`pmm.recall.sources.fused_hits`), alternating in one process so that both see the
same machine load. The window keys are built with the rule either way.

    python bench/repeats_ab.py                      # conv-26, 150 questions x 6 rounds
    python bench/repeats_ab.py --conversations 2 --rounds 4

Without ``../shared/data/locomo/`` (or ``--data``) the run is skipped with a message.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from locomo import DEFAULT_DATA  # noqa: E402
from locomo_data import load_locomo  # noqa: E402

import pmm.recall.sources as sources  # noqa: E402
from pmm import Mind  # noqa: E402
from pmm.records import NewEvent  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA / "locomo10.json")
    parser.add_argument("--conversations", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"LoCoMo is not here ({args.data}): skipped.")
        return 0
    convs = load_locomo(args.data)[: args.conversations]
    collapse = (sources.one_copy, sources.utterance)

    def use(on: bool) -> None:
        if on:
            sources.one_copy, sources.utterance = collapse
        else:  # every candidate its own utterance: the lists and hits as they come
            sources.one_copy = lambda rankings, events: {r: list(f) for r, f in rankings.items()}
            sources.utterance = lambda event: None

    times: dict[str, list[float]] = {"with": [], "without": []}
    with (
        tempfile.TemporaryDirectory() as tmp,
        Mind(str(Path(tmp) / "m.db"), enable_embeddings=False) as mind,
    ):
        for conv in convs:
            first = conv.turns[0].speaker
            mind.remember_many(
                [
                    NewEvent(
                        "prompt" if t.speaker == first else "response",
                        t.text,
                        session_id=f"{conv.sample_id}-{t.session}",
                        role="user" if t.speaker == first else "assistant",
                        ts=t.date,
                    )
                    for t in conv.turns
                ]
            )
        questions = [q.question for c in convs for q in c.questions]
        for q in questions[:20]:  # warm: the index in step, the caches filled
            mind.recall(q, k=50)
        try:
            for n in range(args.rounds):
                for name in ("with", "without") if n % 2 == 0 else ("without", "with"):
                    use(name == "with")
                    for q in questions:
                        start = time.perf_counter()
                        mind.recall(q, k=50)
                        times[name].append(time.perf_counter() - start)
        finally:
            use(True)
    print(f"keyword recall, k=50, {len(questions)} questions x {args.rounds} rounds, "
          f"{sum(len(c.turns) for c in convs)} turns:")  # fmt: skip
    for name, found in times.items():
        print(f"  {name:<7} the repeat collapse: p50 {statistics.median(found) * 1e3:.2f} ms,"
              f" mean {statistics.mean(found) * 1e3:.2f} ms")  # fmt: skip
    ratio = statistics.median(times["with"]) / statistics.median(times["without"])
    print(f"  p50 ratio with / without: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
