"""A tool call's arguments are erasable: PMMMiddleware keeps them in the event's text and
only the call's id and name in the hashed meta, so ``forget`` of the thread leaves no byte
of a secret the user passed to a tool (a real create_agent run, a fake model)."""

from __future__ import annotations

from pathlib import Path

from agent_helpers import thread, user
from fake_models import fake_model, system_text
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from pmm.integrations import PMMMiddleware

PASSPORT = "XK7719024Q"


@tool
def book_flight(passport: str, city: str) -> str:
    """Book a flight for the holder of this passport."""
    return f"Booked a seat to {city}: reference QF{len(passport)}Z"


def file_bytes(db: Path) -> bytes:
    return b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm") if Path(str(db) + s).exists()
    )


def test_a_secret_passed_to_a_tool_goes_with_forget(tmp_path: Path) -> None:
    db = tmp_path / "pmm.db"
    call = {"name": "book_flight", "args": {"passport": PASSPORT, "city": "Oslo"}, "id": "c1"}
    model = fake_model(
        AIMessage(content="", tool_calls=[call]),
        "Done: you fly to Oslo.",
        "You booked a flight to Oslo.",
    )
    memory = PMMMiddleware(db_path=str(db))
    agent = create_agent(model, [book_flight], middleware=[memory])
    agent.invoke(user(f"Book me a flight to Oslo, passport {PASSPORT}"), thread("anna-1"))

    events = memory.mind.history("anna-1")
    asked = events[1]
    assert asked.meta["tool_calls"] == [{"id": "c1", "name": "book_flight"}]
    assert PASSPORT not in str(asked.meta)
    assert asked.content == f'[called book_flight({{"city": "Oslo", "passport": "{PASSPORT}"}})]'
    assert events[2].meta["tool_name"] == "book_flight" and events[2].role == "tool"
    # the call shows in the context of a later run of the thread (state starts empty)
    agent.invoke(user("Where am I flying?"), thread("anna-1"))
    text = system_text(model.prompts[-1])
    assert f'AI: [called book_flight({{"city": "Oslo", "passport": "{PASSPORT}"}})]' in text
    assert "Tool: [book_flight] Booked a seat to Oslo" in text
    assert PASSPORT.encode() in file_bytes(db)

    report = memory.mind.forget(session_id="anna-1", reason="account deleted")

    assert report.wal_truncated and memory.mind.verify().ok
    assert PASSPORT.encode() not in file_bytes(db)
    assert PASSPORT.lower().encode() not in file_bytes(db)
    memory.close()
    assert PASSPORT.encode() not in file_bytes(db)
