"""Session summary nodes written by dream: one per session, cited, chained, idempotent
(also across processes), versioned; the llm summarizer against the local fake OpenAI server."""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from consolidate_helpers import TURNS, deferred_mind, dream_worker, fill, summaries
from fake_openai import FakeOpenAI, RecordedRequest
from mind_helpers import RecordingDigester

from pmm import Mind
from pmm.digest.heuristic import HeuristicDigester
from pmm.dream.consolidation import (
    AUDIT_KIND,
    SUMMARIZES,
    SUPERSEDES,
    current_summary,
    summary_bullets,
)
from pmm.dream.session_summaries import SUMMARY_PROMPT_VERSION


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(timeout=60) as server:
        yield server
    assert not server.errors, server.errors


@pytest.fixture
def chat(fake_openai: FakeOpenAI) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=fake_openai.api_base, api_key="test", model="gpt-4o-mini", max_retries=0
    )


@pytest.fixture
def pmm_warnings(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    caplog.set_level(logging.DEBUG, logger="pmm")
    return lambda: [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("pmm") and r.levelno >= logging.WARNING
    ]


# -- one summary per session -------------------------------------------------------------


def test_dream_writes_one_cited_summary_with_edges_and_a_chained_audit(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        ids = fill(mind)
        report = mind.dream()
        assert report.summaries == 1
        [summary] = summaries(mind)
        assert summary.role == "system"
        assert summary.meta["covers_from"] == ids[0] and summary.meta["covers_upto"] == ids[-1]
        assert summary.meta["key"] == f"{ids[0]}-{ids[-1]}:{len(ids)}"  # no thread id
        assert mind.store.edge_targets([summary.id], SUMMARIZES) == {summary.id: ids}
        bullets = summary_bullets(summary)
        assert bullets and all(b.turns and set(b.turns) <= set(ids) for b in bullets)
        assert "Leeds Half Marathon" in summary.content
        [audit] = mind.store.events(kinds=(AUDIT_KIND,))
        assert audit.id == summary.id + 1 and audit.prev_hash == summary.hash
        assert audit.meta["summary_id"] == summary.id
        assert audit.meta["covered_ids"] == ids
        assert audit.meta["method"] == "heuristic" and audit.meta["prompt_version"]
        assert mind.verify().ok


def test_summary_is_built_from_digests_not_raw_text(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", digester=RecordingDigester()) as mind:
        fill(mind)
        mind.dream()
        [summary] = summaries(mind)
        assert "S(Nice to meet you, Ma)" in summary.content  # the digest ...
        assert "Leeds General" not in summary.content  # ... not the turn's text


def test_too_few_turns_get_no_summary(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", session_summary_min_turns=11) as mind:
        fill(mind)
        assert mind.dream().summaries == 0
        assert summaries(mind) == []


def test_undigested_turns_are_not_covered(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", session_summaries=False) as mind:
        fill(mind)
        mind.dream()
    with deferred_mind(tmp_path / "m.db") as mind:
        extra = mind.remember("Still to digest", role="user", session_id="maya")
        mind.store.sync_search_index()
        mind._consolidate()  # summaries only: the new turn has no digest yet
        [summary] = summaries(mind)
        assert summary.meta["covers_upto"] < extra.id


def test_dreaming_again_writes_nothing(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        fill(mind)
        mind.dream()
        head = mind.store.head()
        assert mind.dream().summaries == 0
        assert mind.store.head() == head


def test_two_processes_dreaming_at_once_write_one_summary(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with deferred_mind(path, session_summaries=False) as mind:
        fill(mind)
        fill(mind, session="other")
        mind.dream()  # digests only
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(3), ctx.Queue()
    workers = [
        ctx.Process(target=dream_worker, args=(str(path), barrier, results)) for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    written = sorted(results.get(timeout=5) for _ in workers)
    assert sum(written) == 2  # one per session, whoever wrote it
    with deferred_mind(path) as mind:
        assert len(summaries(mind)) == 1 and len(summaries(mind, "other")) == 1
        assert len(mind.store.events(kinds=(AUDIT_KIND,))) == 2
        assert mind.verify().ok


def test_new_turns_make_a_new_version_that_supersedes_the_old(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db", recall_summaries=True) as mind:
        fill(mind)
        mind.dream()
        [old] = summaries(mind)
        more = fill(mind, [("The canal path floods in winter, I use the park then.", "OK.")])
        report = mind.dream()
        assert (report.summaries, report.superseded_summaries) == (1, 1)
        old_again, new = summaries(mind)
        assert old_again.id == old.id
        assert new.meta["supersedes"] == old.id and new.meta["covers_upto"] == more[-1]
        assert mind.store.edge_targets([new.id], SUPERSEDES) == {new.id: [old.id]}
        assert current_summary(mind.store, "maya") == new
        found = {h.event.id for h in mind.recall("canal running Leeds", k=20)}
        assert new.id in found and old.id not in found


def test_clear_starts_summaries_afresh(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        fill(mind)
        mind.dream()
        mind.clear("maya")
        fill(mind, TURNS[:2])
        assert mind.dream().summaries == 0  # 4 turns since the clear: too few
        assert "Earlier in this conversation" not in mind.context("maya", budget_tokens=40).text()


# -- the llm backend ------------------------------------------------------------------------


def bullets_reply(request: RecordedRequest, bad_id: int | None = None) -> dict[str, Any]:
    import json

    notes = json.loads(request.messages[-1]["content"])["turns"]
    bullets = [{"text": f"Noted: {n['note']}", "turns": [n["id"]]} for n in notes[:7]]
    if bad_id is not None:
        bullets.append({"text": "An invented fact.", "turns": [notes[0]["id"], bad_id]})
    return {"bullets": bullets}


def llm_mind(path: Path, chat: Any, **kw: Any) -> Mind:
    return deferred_mind(path, llm=chat, digester=HeuristicDigester(), **kw)


def test_llm_summary_cites_turns_and_drops_bullets_citing_other_ids(
    tmp_path: Path, fake_openai: FakeOpenAI, chat: Any
) -> None:
    fake_openai.respond_with(lambda r: bullets_reply(r, bad_id=999))
    with llm_mind(tmp_path / "m.db", chat) as mind:
        ids = fill(mind)
        report = mind.dream()
        assert report.dropped_bullets == 1 and report.llm_calls == 1
        [summary] = summaries(mind)
        assert summary.meta["method"] == "llm"
        assert summary.meta["prompt_version"] == SUMMARY_PROMPT_VERSION
        assert "invented" not in summary.content
        assert len(summary_bullets(summary)) == 7
        [audit] = mind.store.events(kinds=(AUDIT_KIND,))
        assert audit.meta["dropped_bullets"] == 1
        [request] = fake_openai.requests
        sent = request.messages[-1]["content"]
        assert "Leeds General" in sent and str(ids[0]) in sent


@pytest.mark.parametrize(
    "bad", ["not json at all", '{"bullets": "x"}', '{"bullets": [{"text": "x", "turns": [999]}]}']
)
def test_malformed_llm_summary_is_retried_then_falls_back_with_one_warning(
    bad: str,
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    chat: Any,
    pmm_warnings: Callable[[], list[str]],
) -> None:
    fake_openai.reply_text(bad).reply_text(bad)
    with llm_mind(tmp_path / "m.db", chat) as mind:
        fill(mind)
        fill(mind, session="other")
        fake_openai.reply_text(bad).reply_text(bad)  # the second session fails too
        mind.dream()
        assert len(fake_openai.requests) == 4
        for session in ("maya", "other"):
            [summary] = summaries(mind, session)
            assert summary.meta["method"] == "heuristic"
    warnings = [w for w in pmm_warnings() if "session summary" in w]
    assert len(warnings) == 1 and "falling back to the heuristic" in warnings[0]


def test_llm_retry_can_succeed(tmp_path: Path, fake_openai: FakeOpenAI, chat: Any) -> None:
    fake_openai.reply_text("{oops")
    fake_openai.respond_with(bullets_reply)
    with llm_mind(tmp_path / "m.db", chat) as mind:
        fill(mind)
        assert mind.dream().llm_calls == 2
        [summary] = summaries(mind)
        assert summary.meta["method"] == "llm"


# -- meta-consolidation -------------------------------------------------------------------


def long_bullets(request: RecordedRequest) -> dict[str, Any]:
    import json

    notes = json.loads(request.messages[-1]["content"])["turns"]
    filler = "which the user repeated at some length during this part of the session"
    return {"bullets": [{"text": f"{n['note']} {filler}", "turns": [n["id"]]} for n in notes[:8]]}


def test_long_summary_is_compressed_keeping_its_numbers(
    tmp_path: Path, fake_openai: FakeOpenAI, chat: Any
) -> None:
    def reply(request: RecordedRequest) -> dict[str, Any]:
        if "compress" not in request.messages[0]["content"]:
            return long_bullets(request)
        body = request.messages[-1]["content"]
        ids = sorted({int(i) for i in __import__("re").findall(r"\[(\d+)", body)})
        return {
            "bullets": [
                {"text": "Maya, a night nurse, trains for the May half marathon.", "turns": ids},
                {"text": "Longest run 8 km, adding 1 km a week.", "turns": ids},
                {"text": "Shifts: four nights on, three off.", "turns": ids},
            ]
        }

    fake_openai.respond_with(reply)
    with llm_mind(tmp_path / "m.db", chat, summary_word_limit=60, summary_sentences=2) as mind:
        fill(mind)
        report = mind.dream()
        assert report.llm_calls == 2
        [summary] = summaries(mind)
        assert "compress" in summary.meta["prompt_version"]
        assert len(summary.content.split()) < 60
        compress = fake_openai.requests[1]
        assert "about 2 sentences" in compress.messages[0]["content"]


@pytest.mark.parametrize(
    "reply",
    [
        "garbage",
        '{"bullets": [{"text": "Maya runs.", "turns": [1]}]}',  # lost 8, four, May...
    ],
)
def test_failed_compression_keeps_the_longer_summary_with_one_warning(
    reply: str,
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    chat: Any,
    pmm_warnings: Callable[[], list[str]],
) -> None:
    def respond(request: RecordedRequest) -> Any:
        if "compress" not in request.messages[0]["content"]:
            return long_bullets(request)
        return reply

    fake_openai.respond_with(respond)
    with llm_mind(tmp_path / "m.db", chat, summary_word_limit=60) as mind:
        fill(mind)
        mind.dream()
        [summary] = summaries(mind)
        assert "compress" not in summary.meta["prompt_version"]
        assert len(summary.content.split()) > 60
        assert "8 km" in summary.content
    warnings = [w for w in pmm_warnings() if "compress" in w]
    assert len(warnings) == 1 and "keeping the longer one" in warnings[0]


def test_without_an_llm_a_long_summary_is_kept_whole_with_one_warning(
    tmp_path: Path, pmm_warnings: Callable[[], list[str]]
) -> None:
    with deferred_mind(tmp_path / "m.db", summary_word_limit=20) as mind:
        fill(mind)
        fill(mind, session="other")
        mind.dream()
        assert len(summaries(mind)[0].content.split()) > 20
    assert len([w for w in pmm_warnings() if "PMM_SUMMARY_WORD_LIMIT" in w]) == 1


def test_redacting_a_covered_turn_redacts_the_summary_and_rebuilds_it(tmp_path: Path) -> None:
    with deferred_mind(tmp_path / "m.db") as mind:
        ids = fill(mind)
        mind.dream()
        [old] = summaries(mind)
        assert "Leeds General" in old.content
        mind.store.redact(ids[0], reason="user asked")
        report = mind.dream()
        assert report.summaries == 1
        old_again, new = summaries(mind)
        assert old_again.content is None  # erased, the chain still verifies
        assert "Leeds General" not in new.content and ids[0] not in new.meta.values()
        assert new.meta["covers_from"] == ids[1] and new.meta["supersedes"] == old.id
        assert "Leeds General" not in mind.context("maya", budget_tokens=30).text()
        assert mind.verify().ok


def test_heuristic_bullets_cover_keywords_in_order_and_merge_repeats() -> None:
    from pmm.dream.session_summaries import heuristic_bullets, parse_rendered, render
    from pmm.records import Event

    def turn(i: int, summary: str, keywords: list[str]) -> Event:
        role = "user" if i % 2 else "assistant"
        return Event(i, "", "prompt", "s", role, "raw", "", {}, None, "", 1, summary, keywords)

    turns = [
        turn(i, f"Fact {i}: the {w} costs {i * 10} euros.", [w])
        for i, w in enumerate(
            [
                "tram",
                "ferry",
                "bike",
                "bus",
                "taxi",
                "train",
                "metro",
                "plane",
                "boat",
                "scooter",
                "car",
                "cable car",
                "rickshaw",
                "horse",
            ],
            start=1,
        )
    ]
    turns.append(turn(15, "Fact 1: the tram costs 10 euros.", ["tram"]))
    bullets = heuristic_bullets(turns)
    assert len(bullets) == 12
    firsts = [b.turns[0] for b in bullets]
    assert firsts == sorted(firsts)
    assert bullets[0].turns == (1, 15)  # said twice: one bullet citing both turns
    assert parse_rendered(render(bullets)) == bullets
