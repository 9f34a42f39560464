"""The v1 quick start (docs/guides/langchain-agents.md) and the README's LangGraph store
snippet, run as written and checked for what they should do (the model is a fake chat model
here; in the docs it is any chat model). tests/docs/test_snippets.py runs every other block."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest
from fake_models import fake_model

QUICK_START = """
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from pmm import PMMMiddleware

agent = create_agent(model, tools=[], middleware=[PMMMiddleware(db_path="pmm.db")],
                     checkpointer=InMemorySaver())
config = {"configurable": {"thread_id": "alice"}}
agent.invoke({"messages": [{"role": "user", "content": "I moved to Lisbon"}]}, config)
"""

STORE = """
from langchain.agents import create_agent
from pmm import PMMStore

store = PMMStore("pmm.db")  # long-term memory: chained events in the PMM log
store.put(("users", "alice"), "home", {"city": "Lisbon"})
print(store.get(("users", "alice"), "home").value)
print([item.key for item in store.search(("users",), query="Lisbon")])
agent = create_agent(model, tools=[], store=store)  # tools reach it as runtime.store
"""


@pytest.fixture
def in_tmp(tmp_path: Path) -> Path:
    before = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(before)


def test_quick_start_is_under_ten_lines_and_remembers(in_tmp: Path) -> None:
    assert len(QUICK_START.strip().splitlines()) < 10
    model = fake_model("Noted!", "You live in Lisbon.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        namespace = {"model": model}
        exec(QUICK_START, namespace)
        namespace["agent"].invoke(
            {"messages": [{"role": "user", "content": "Where do I live?"}]},
            {"configurable": {"thread_id": "alice-2"}},
        )
    from pmm import Mind

    with Mind(str(in_tmp / "pmm.db")) as mind:
        assert [e.content for e in mind.history("alice")] == ["I moved to Lisbon", "Noted!"]


def test_store_snippet(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exec(STORE, {"model": fake_model("ok")})
    assert capsys.readouterr().out.splitlines() == ["{'city': 'Lisbon'}", "['home']"]
    assert "pmm" in sys.modules


def _python_blocks() -> list[str]:
    """Every Python block of README.md and docs/, as written."""
    from snippet_helpers import python_blocks

    return [b.source for b in python_blocks()]


def test_the_docs_show_exactly_the_snippets_tested_here() -> None:
    from snippet_helpers import ROOT, blocks_of

    guide = [b.source.strip() for b in blocks_of(ROOT / "docs/guides/langchain-agents.md")]
    readme = [b.source.strip() for b in blocks_of(ROOT / "README.md")]
    assert guide[0] == QUICK_START.strip()  # the guide opens with the single-user quick start
    assert STORE.strip() in readme


def test_the_readme_compression_snippet_digests_and_prints_what_it_says(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [snippet] = [b for b in _python_blocks() if "user_text = " in b]
    exec(snippet, {})
    methods, summary, keywords = capsys.readouterr().out.splitlines()
    assert methods == "{'heuristic': 1, 'verbatim': 1}"  # the long turn got a real digest
    assert f"print(mind.dream().methods)  # {methods}" in snippet
    assert summary.startswith("User: I moved to Lisbon in 2021 and I work as")
    assert "Carcavelos" not in summary  # shorter than the turn: a digest, not a copy
    assert "# User: I moved to Lisbon in 2021 and I work as ..." in snippet
    assert keywords.startswith("['Lisbon', '2021', 'Santa Maria', 'Carcavelos', ")
    assert "# ['Lisbon', '2021', 'Santa Maria', 'Carcavelos', ...]" in snippet


def test_the_readme_consolidation_snippet_dreams_and_shows_the_summary(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [snippet] = [b for b in _python_blocks() if "linked_turns=" in b]
    namespace: dict[str, object] = {}
    exec(snippet, namespace)
    should_dream, context = capsys.readouterr().out.split("\n", 1)
    assert should_dream == "True"  # the example dreams
    report = namespace["report"]
    assert report.digested == 10 and report.summaries == 1  # type: ignore[attr-defined]
    assert "DreamReport(digested=10, ..., summaries=1," in snippet
    earlier = context.split("Earlier in this conversation:\n", 1)[1].split("\n\n")[0]
    memories = context.split("Relevant memories:\n", 1)[1].split("\n\n")[0]
    recent = context.split("Recent conversation:\n", 1)[1]
    assert "Week 0: I ran 5 km along the canal." in earlier
    assert "Human: Week 2: I ran 7 km along Roundhay park." in memories
    assert "Human: Week 4: I ran 9 km along Meanwood valley." in recent
    for week in range(5):  # no turn shown twice
        assert context.count(f"Week {week}:") <= 1
    from pmm import Mind

    with Mind(str(in_tmp / "pmm.db")) as mind:  # the exit of the block dreamt again
        assert mind.pending_count() == 0 and mind.store.count(kinds=("prompt", "response")) == 10
