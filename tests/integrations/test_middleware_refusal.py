"""An agent run on a file PMM saw damaged fails with StoreRefusedError instead of losing
its turn silently (issue 36): real create_agent, a fake chat model, PMMMiddleware."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from agent_helpers import thread, user
from damage_helpers import damaged_log
from fake_models import fake_model
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from pmm import Mind
from pmm.errors import CorruptDatabaseError, StoreRefusedError
from pmm.integrations import PMMMiddleware


def _count(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT max(id) FROM events").fetchone()[0])
    finally:
        conn.close()


def test_the_run_fails_with_the_refusal(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    damaged_log(db)
    mind = Mind(str(db))
    try:
        with pytest.raises(CorruptDatabaseError):
            list(mind.store.iter_events())  # e.g. a context read met the damaged page
        newest = _count(db)
        agent = create_agent(
            fake_model("Noted."),
            [],
            middleware=[PMMMiddleware(mind=mind)],
            checkpointer=InMemorySaver(),
        )
        with pytest.raises(StoreRefusedError) as refused:
            agent.invoke(user("my passport is in the oak drawer"), thread("fresh"))
        assert "pmm check" in str(refused.value)
        assert _count(db) == newest  # nothing of the turn went into the damaged file
    finally:
        mind.close()
