"""Contradictions: slot facts supersede by recency without a model; with a chat model only
pre-filtered pairs are asked, once each; superseded statements rank below the newer one
and leave the key facts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from consolidate_helpers import deferred_mind
from fake_openai import FakeOpenAI, RecordedRequest

from pmm.digest.heuristic import HeuristicDigester
from pmm.dream.contradictions import (
    CHECKED,
    MARKER_KIND,
    SLOT_SUPERSEDES,
    SUPERSEDES,
    candidate_pairs,
    parse_judgement,
)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(timeout=60) as server:
        yield server
    assert not server.errors, server.errors


@pytest.fixture
def chat(fake_openai: FakeOpenAI) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=fake_openai.api_base, api_key="t", model="m", max_retries=0)


def test_slot_facts_supersede_by_recency_without_a_model(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        oslo = mind.remember("My name is Ana and I live in Oslo.", role="user", session_id="a")
        mind.remember("Oslo is lovely in June.", role="assistant", session_id="a")
        bergen = mind.remember("I moved to Bergen last week.", role="user", session_id="a")
        report = mind.dream()
        assert report.contradictions == 1 and report.llm_calls == 0
        [marker] = mind.store.events(kinds=(MARKER_KIND,))
        assert marker.meta == {"older": oslo.id, "newer": bergen.id, "method": "slot"}
        assert marker.content.endswith("location: Oslo -> Bergen")  # text: redactable
        assert marker.prev_hash is not None and mind.verify().ok
        assert mind.store.edge_targets([bergen.id], SLOT_SUPERSEDES) == {bergen.id: [oslo.id]}
        facts = mind.context("a").facts
        assert "Lives in: Bergen" in facts and "Name: Ana" in facts  # the name stays
        assert "Lives in: Oslo" not in " ".join(facts)
        hits = [h.event.id for h in mind.recall("live Oslo", k=5, session_id="a")]
        assert hits.index(bergen.id) < hits.index(oslo.id)
        assert mind.dream().contradictions == 0  # recorded once


def test_other_users_and_other_slots_are_left_alone(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        mind.remember("I live in Oslo.", role="user", session_id="a")
        mind.remember("I live in Bergen.", role="user", session_id="b")
        mind.remember("I work as a nurse.", role="user", session_id="a")
        assert mind.dream().contradictions == 0


def judged_only(chat: Any) -> dict[str, Any]:
    """Mind options: the chat model judges contradictions; no llm digests or summaries."""
    return {"llm": chat, "digester": HeuristicDigester(), "session_summaries": False}


def judge(request: RecordedRequest) -> dict[str, Any]:
    pair = json.loads(request.messages[-1]["content"])
    moved = "vegetarian" in pair["older"] and "eat meat" in pair["newer"]
    return {"contradicts": moved, "reason": "diet changed" if moved else ""}


STATEMENTS = [
    "I am vegetarian and I cook lentil curry most weekends.",
    "My sister Joan visits Leeds every spring.",
    "I train for the Leeds half marathon on Sundays.",
    "I started to eat meat again, so the lentil curry is now a chicken curry most weekends.",
    "My favourite running shoes are the blue Pegasus.",
]


def test_llm_is_asked_only_about_prefiltered_pairs_once_each(
    tmp_path: Path, fake_openai: FakeOpenAI, chat: Any
) -> None:
    fake_openai.respond_with(judge)
    with deferred_mind(tmp_path / "m.db", **judged_only(chat)) as mind:
        ids = [mind.remember(t, role="user", session_id="a").id for t in STATEMENTS]
        report = mind.dream()
        all_pairs = len(ids) * (len(ids) - 1) // 2
        assert 1 <= report.llm_calls < all_pairs
        judged = [json.loads(r.messages[-1]["content"]) for r in fake_openai.requests]
        assert {"older": STATEMENTS[0], "newer": STATEMENTS[3]} in judged
        assert report.contradictions == 1
        [marker] = mind.store.events(kinds=(MARKER_KIND,))
        assert marker.meta["method"] == "llm" and marker.text.endswith("diet changed")
        assert mind.store.edge_targets([ids[3]], SUPERSEDES) == {ids[3]: [ids[0]]}
        asked = mind.store.edge_targets(ids, CHECKED)
        assert sum(len(v) for v in asked.values()) == report.llm_calls
        hits = [h.event.id for h in mind.recall("vegetarian lentil curry", k=5)]
        assert hits.index(ids[3]) < hits.index(ids[0])
        calls = len(fake_openai.requests)
        mind.remember("Joan is bringing her dog this spring.", role="user", session_id="a")
        mind.dream()
        new = [json.loads(r.messages[-1]["content"]) for r in fake_openai.requests[calls:]]
        assert all(p["newer"].startswith("Joan is bringing") for p in new)  # no pair twice


def test_statements_superseded_by_the_llm_leave_the_key_facts(
    tmp_path: Path, fake_openai: FakeOpenAI, chat: Any
) -> None:
    fake_openai.respond_with(lambda r: {"contradicts": True, "reason": "moved"})
    with deferred_mind(tmp_path / "m.db", **judged_only(chat)) as mind:
        mind.remember("I really like living in Oslo by the fjord.", role="user", session_id="a")
        before = mind.context("a").facts
        assert any("living in Oslo" in f for f in before)
        mind.remember(
            "These days living in Oslo by the fjord is over.", role="user", session_id="a"
        )
        mind.remember("I don't like Oslo by the fjord anymore.", role="user", session_id="a")
        assert mind.dream().contradictions >= 1
        assert not any("living in Oslo" in f for f in mind.context("a").facts)


def test_a_failing_judge_warns_once_and_asks_again_later(
    tmp_path: Path, fake_openai: FakeOpenAI, chat: Any, caplog: Any
) -> None:
    fake_openai.respond_with(lambda r: "no idea")
    with deferred_mind(tmp_path / "m.db", **judged_only(chat)) as mind:
        for text in STATEMENTS:
            mind.remember(text, role="user", session_id="a")
        first = mind.dream().llm_calls
        assert first >= 1 and mind.store.events(kinds=(MARKER_KIND,)) == []
    warnings = [r for r in caplog.records if "contradiction check" in r.getMessage()]
    assert len(warnings) == 1


def test_prefilter_needs_shared_keywords_and_similarity() -> None:
    from pmm.records import Event

    def event(i: int, text: str) -> Event:
        return Event(i, "", "prompt", "a", "user", text, "", {}, None, "")

    statements = [event(1, "I love Oslo."), event(2, "I love Oslo in winter."), event(3, "Tea.")]
    pairs = candidate_pairs(statements, 0, None, 0.4)
    assert [(o.id, n.id) for o, n, _ in pairs] == [(1, 2)]
    assert candidate_pairs(statements, 0, None, 0.99) == []
    assert candidate_pairs(statements, 2, None, 0.4) == []  # only new statements


@pytest.mark.parametrize("reply", ["nope", '{"contradicts": "yes"}', "[]"])
def test_malformed_judgements_are_refused(reply: str) -> None:
    from pmm.dream.contradictions import MalformedJudgement

    with pytest.raises(MalformedJudgement):
        parse_judgement(reply)
    assert parse_judgement('```json\n{"contradicts": false}\n```') == (False, "")


def test_without_the_prefilter_every_pair_is_asked(
    tmp_path: Path, fake_openai: FakeOpenAI, chat: Any
) -> None:
    from pmm.dream.contradictions import find_contradictions

    fake_openai.respond_with(lambda r: {"contradicts": False})
    with deferred_mind(
        tmp_path / "m.db", session_summaries=False, detect_contradictions=False
    ) as m:
        for text in STATEMENTS:
            m.remember(text, role="user", session_id="a")
        m.dream()
        report = find_contradictions(m.store, chat, None, prefilter=False)
        assert report.llm_calls == len(fake_openai.requests) == 10  # 5 statements: 10 pairs
        filtered = find_contradictions(m.store, chat, None)
        assert filtered.llm_calls == 0  # every statement was scanned already


def test_redacting_a_statement_redacts_the_marker_that_quotes_it(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        oslo = mind.remember("I live in Oslo.", role="user", session_id="a")
        mind.remember("I moved to Bergen.", role="user", session_id="a")
        mind.dream()
        mind.store.redact(oslo.id, reason="user asked")
        mind.dream()
        [marker] = mind.store.events(kinds=(MARKER_KIND,))
        assert marker.content is None and mind.verify().ok
