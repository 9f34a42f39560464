"""Summary nodes in recall: searchable with a fixed prior, expanded into their best turns,
superseded versions never returned; off by default."""

from __future__ import annotations

from pathlib import Path

from consolidate_helpers import TURNS, deferred_mind, fill, summaries

from pmm.dream.consolidation import SUMMARY_KIND, best_children, current_summary
from pmm.settings import Settings


def test_a_summary_hit_expands_into_its_best_turns(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", recall_summaries=True, summary_children=2) as mind:
        ids = fill(mind)
        fill(mind, [("I like tea.", "Tea is nice.")] * 5, session="other")
        mind.dream()
        [summary] = summaries(mind)
        # the prior ranks summaries below every turn: look deep enough to meet one
        hits = mind.recall("Leeds marathon canal nights", k=30)
        kinds = [h.event.kind for h in hits]
        assert SUMMARY_KIND in kinds
        at = kinds.index(SUMMARY_KIND)
        assert hits[at].rankers.get("summary_prior") == 0
        children = [h for h in hits if h.rankers.get("summary") == summary.id]
        assert all(c.event.id in ids for c in children)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_the_prior_is_added_to_the_summary_score(tmp_path: Path) -> None:
    scores = {}
    for prior in (0.0, -0.05):
        with deferred_mind(
            tmp_path / f"{prior}.db", recall_summaries=True, summary_prior=prior
        ) as m:
            fill(m)
            m.dream()
            [hit] = [h for h in m.recall("Leeds marathon", k=20) if h.event.kind == SUMMARY_KIND]
            scores[prior] = hit.score
    assert abs(scores[-0.05] - (scores[0.0] - 0.05)) < 1e-9


def test_summaries_are_not_recalled_when_off(tmp_path: Path) -> None:
    assert Settings().recall_summaries is False
    with deferred_mind(tmp_path / "m.db") as mind:
        fill(mind)
        mind.dream()
        assert all(h.event.kind != SUMMARY_KIND for h in mind.recall("Leeds marathon", k=20))


def test_a_narrow_question_still_gets_the_exact_turn_first(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", recall_summaries=True) as mind:
        ids = fill(mind)
        mind.dream()
        hits = mind.recall("longest run 8 km", k=5)
        # the summary never displaces the exact turn; with the window key its neighbouring
        # reply ("Add about 1 km a week") may share the top with it
        assert ids[4] in [h.event.id for h in hits[:2]]
        assert hits[0].event.kind != SUMMARY_KIND


def test_best_children_are_deterministic_and_prefer_matching_turns(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        ids = fill(mind, TURNS)
        mind.dream()
        summary = current_summary(mind.store, "maya")
        assert summary is not None
        picked = best_children(mind.store, summary, "canal flat running", 2)
        assert picked[0].id == ids[8]  # "I prefer running by the canal, it's flat."
        assert picked == best_children(mind.store, summary, "canal flat running", 2)
        assert best_children(mind.store, summary, "anything", 0) == []
