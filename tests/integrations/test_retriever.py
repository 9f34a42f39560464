"""PMMRetriever: recall as a LangChain retriever."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from pmm import Mind, PMMRetriever


@pytest.fixture
def mind(tmp_path: Path) -> Mind:
    with Mind(str(tmp_path / "pmm.db")) as m:
        m.remember_turn("I adopted a cat called Pixel last winter.", "Lovely!", session_id="ana")
        m.remember_turn("My dog Rex hates the vacuum cleaner.", "Poor Rex.", session_id="bob")
        yield m


def test_documents_carry_the_event(mind: Mind) -> None:
    docs = PMMRetriever(mind=mind, k=3).invoke("what is the cat called?")
    assert docs and isinstance(docs[0], Document)
    top = docs[0]
    assert top.page_content == "I adopted a cat called Pixel last winter."
    event = mind.store.get(int(top.metadata["event_id"]))
    assert top.id == str(event.id)
    assert top.metadata["session_id"] == "ana" and top.metadata["role"] == "user"
    assert top.metadata["ts"] == event.ts and top.metadata["kind"] == "prompt"
    assert top.metadata["rankers"]["turn"] == 1
    assert isinstance(top.metadata["keywords"], list)


def test_session_filter_and_all_sessions(mind: Mind) -> None:
    everywhere = PMMRetriever(mind=mind, k=5).invoke("Pixel Rex")
    assert {d.metadata["session_id"] for d in everywhere} == {"ana", "bob"}
    only_bob = PMMRetriever(mind=mind, k=5, session_id="bob").invoke("Pixel Rex")
    assert {d.metadata["session_id"] for d in only_bob} == {"bob"}


def test_summaries_as_page_content(tmp_path: Path) -> None:
    long_turn = (
        "Long story short: after three interviews I accepted the offer from Nordlicht GmbH in "
        "Munich, starting on 1 September, with a salary of 72,000 euros. The commute is fine "
        "and the team works on wind-farm forecasting, which I find fascinating and useful."
    )
    with Mind(
        str(tmp_path / "s.db"), enable_summary=True, summary_mode="inline", summarizer="heuristic"
    ) as mind:
        mind.remember_turn(long_turn, "Congratulations!", session_id="s")
        [doc] = PMMRetriever(mind=mind, k=1, use_summaries=True).invoke("Nordlicht offer")
        assert doc.page_content != long_turn and "Nordlicht" in doc.page_content
        assert doc.metadata["summary"] is not None


def test_opens_its_own_mind_with_settings(tmp_path: Path) -> None:
    path = str(tmp_path / "own.db")
    with Mind(path) as writer:
        writer.remember("Kyoto in April was wonderful", role="user", session_id="s")
    retriever = PMMRetriever(db_path=path, enable_summary=False, k=2)
    assert retriever.settings == {"enable_summary": False}
    assert [d.page_content for d in retriever.invoke("Kyoto")] == ["Kyoto in April was wonderful"]
    retriever.close()
    with pytest.raises(ValidationError):
        PMMRetriever(db_path=path, enable_embedings=True)
    with pytest.raises(ValidationError):
        PMMRetriever(db_path=path, mode="fuzzy")


async def _ainvoke(retriever: PMMRetriever, query: str) -> list[Document]:
    return await retriever.ainvoke(query)


def test_async(mind: Mind) -> None:
    import asyncio

    docs = asyncio.run(_ainvoke(PMMRetriever(mind=mind, k=1), "vacuum"))
    assert docs[0].metadata["session_id"] == "bob"
