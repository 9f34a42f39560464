"""Helpers of the consolidation tests (importable by the subprocesses they start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pmm import Mind
from pmm.dream.consolidation import SUMMARY_KIND


def dream_worker(path: str, barrier: Any, results: Any) -> None:
    """Open a Mind on ``path``, wait for the others, dream, and report what it wrote."""
    from pmm import Mind

    with Mind(
        path,
        enable_summary=True,
        summarizer="heuristic",
        summary_mode="deferred",
        dream_on_close=False,
    ) as mind:
        barrier.wait(timeout=60)
        report = mind.dream()
        results.put(report.summaries)


TURNS = [
    ("Hi, I'm Maya. I work nights as a nurse at Leeds General.", "Nice to meet you, Maya."),
    ("I signed up for the Leeds Half Marathon in May.", "Great, let's build a plan."),
    ("My longest run was 8 km last Sunday.", "Add about 1 km a week."),
    ("My shifts are four nights on, three off.", "Long runs go on your second day off."),
    ("I prefer running by the canal, it's flat.", "The canal path is ideal for easy runs."),
]


def deferred_mind(path: Path, **kw: Any) -> Mind:
    options: dict[str, Any] = {
        "enable_summary": True,
        "summarizer": "heuristic",
        "summary_mode": "deferred",
        "dream_on_close": False,
    }
    options.update(kw)
    return Mind(str(path), **options)


def fill(mind: Mind, turns: list[tuple[str, str]] = TURNS, session: str = "maya") -> list[int]:
    ids: list[int] = []
    for user, ai in turns:
        a, b = mind.remember_turn(user, ai, session_id=session)
        ids += [a.id, b.id]
    return ids


def summaries(mind: Mind, session: str = "maya") -> list[Any]:
    return mind.store.events(session_id=session, kinds=(SUMMARY_KIND,))


LONG = [
    (f"Week {i}: I ran {10 + i} km along the {place} and my knee felt {feel}.", "Noted, well done.")
    for i, (place, feel) in enumerate(
        [
            ("canal", "fine"),
            ("river Aire", "sore"),
            ("Roundhay park", "stiff"),
            ("Kirkstall abbey", "fine"),
            ("Meanwood valley", "great"),
            ("Otley road", "sore"),
            ("Temple Newsam", "fine"),
            ("Golden Acre", "great"),
        ]
    )
]
