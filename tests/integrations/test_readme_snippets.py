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


def test_the_readme_compression_snippet_runs_and_prints_what_it_says(in_tmp: Path) -> None:
    [snippet] = [b for b in _python_blocks() if "user_text = " in b]
    namespace: dict[str, object] = {}
    exec(snippet, namespace)
    report = namespace["report"]
    assert report.digested == 2 and report.methods == {"verbatim": 2}  # type: ignore[attr-defined]
    assert "DreamReport(digested=2, embedded=0, methods={'verbatim': 2}" in snippet


def test_the_readme_consolidation_snippet_runs(in_tmp: Path) -> None:
    [snippet] = [b for b in _python_blocks() if "linked_turns=2" in b]
    exec("from pmm import Mind\n" + snippet, {})
    from pmm import Mind

    with Mind(str(in_tmp / "pmm.db")) as mind:  # the exit of the block dreamt
        assert mind.pending_count() == 0 and mind.store.count() == 2
