"""PMMRetriever against langchain-tests' standard retriever suite, plus call-time options."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from pmm import Mind, PMMRetriever

TOPICS = ["cats", "dogs", "bicycles", "Lisbon", "tea"]


def _seeded_db() -> str:
    path = str(Path(tempfile.mkdtemp(prefix="pmm-retriever-")) / "pmm.db")
    with Mind(path) as mind:
        for i, topic in enumerate(TOPICS):
            mind.remember_turn(
                f"Tell me about memory and {topic}.",
                f"Memory of {topic}, note {i}.",
                session_id=f"s{i % 2}",
            )
    return path


class TestPMMRetrieverStandard(RetrieversIntegrationTests):
    _db = _seeded_db()

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return PMMRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"db_path": self._db}

    @property
    def retriever_query_example(self) -> str:
        return "memory"


@pytest.fixture
def retriever(tmp_path: Path) -> PMMRetriever:
    path = str(tmp_path / "pmm.db")
    with Mind(path) as mind:
        # replies that differ: one reply said six times would be one hit (repeats of an
        # utterance are shown once, tests/recall/test_repeats.py)
        for topic in TOPICS:
            mind.remember_turn(f"I like {topic} and memory.", f"Noted: {topic}.", session_id="ana")
        mind.remember_turn("Bob likes memory games.", "Noted: games.", session_id="bob")
    r = PMMRetriever(db_path=path, k=10)
    yield r
    r.close()


def test_call_time_k_session_and_mode_win(retriever: PMMRetriever) -> None:
    # the constructor's k: 6 turns say "memory", and the window key finds their replies too
    assert len(retriever.invoke("memory")) == 10
    assert len(retriever.invoke("memory", k=1)) == 1
    only_bob = retriever.invoke("memory", session_id="bob")
    assert {d.metadata["session_id"] for d in only_bob} == {"bob"}
    assert retriever.invoke("memory", mode="keyword", k=2)[0].metadata["rankers"].keys() <= {
        "turn",
        "window",
    }
    assert len(asyncio.run(retriever.ainvoke("memory", k=2))) == 2


def test_async_search_leaves_the_event_loop_free(retriever: PMMRetriever) -> None:
    """While a slow search runs, other coroutines keep running."""
    mind = retriever.pmm
    real = mind.recall
    started = threading.Event()

    def slow_recall(*args: Any, **kwargs: Any) -> Any:
        started.set()
        time.sleep(0.3)
        return real(*args, **kwargs)

    mind.recall = slow_recall  # type: ignore[method-assign]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while not started.is_set() or ticks < 5:
            ticks += 1
            await asyncio.sleep(0.01)

    async def main() -> int:
        docs, _ = await asyncio.gather(retriever.ainvoke("memory", k=1), ticker())
        return len(docs)

    assert asyncio.run(main()) == 1
    assert ticks >= 5  # the loop ticked during the 0.3 s search
