"""The README's v1 quick start and LangGraph store snippet, run as written (the model is a
fake chat model here; in the README it is any chat model)."""

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
