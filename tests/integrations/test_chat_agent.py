"""``python chat.py`` online through the v1 agent (create_agent + PMMMiddleware + a
checkpointer), against the local fake OpenAI server, in a pseudo-terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fake_openai import FakeOpenAI
from repl_helpers import PROMPT, ZED, Chat, chat_requests, turns

from pmm.integrations.agents import CONTEXT_HEADER


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default_text="(unscripted)") as fake:
        yield fake


def roles_and_texts(request: dict[str, object]) -> list[tuple[str, str]]:
    messages = request["messages"]
    assert isinstance(messages, list)
    return [(m["role"], m["content"]) for m in messages]


def test_online_chat_runs_the_v1_agent(tmp_path: Path, server: FakeOpenAI) -> None:
    db = tmp_path / "chat.db"
    env = {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.api_base}
    server.reply_text("Nice to meet you, Zed!").reply_text("In Oslo.")
    chat = Chat("--db", str(db), "--session", "s1", "--model", "fake-model", cwd=tmp_path, env=env)
    assert "online: model fake-model" in chat.first_line
    assert chat.say(ZED).strip() == "pmm> Nice to meet you, Zed!"
    assert chat.say("Where do I live?").strip() == "pmm> In Oslo."
    chat.child.sendeof()
    chat.finish()
    second = roles_and_texts(chat_requests(server)[1])
    # The thread (checkpointer) holds the first exchange as messages; the system message
    # holds PMM's facts and does not repeat what the thread already has.
    assert second[1:] == [
        ("user", ZED),
        ("assistant", "Nice to meet you, Zed!"),
        ("user", "Where do I live?"),
    ]
    assert second[0][0] == "system" and "persistent memory" in second[0][1]
    assert CONTEXT_HEADER in second[0][1] and f"Human: {ZED}" not in second[0][1]

    # A restart: the checkpointer is gone, the memory comes from the log.
    server.reply_text("Your name is Zed.")
    chat = Chat("--db", str(db), "--session", "s1", cwd=tmp_path, env=env)
    assert chat.say("What is my name?").strip() == "pmm> Your name is Zed."
    third = roles_and_texts(chat_requests(server)[2])
    assert [r for r, _ in third] == ["system", "user"]
    assert f"Human: {ZED}" in third[0][1] and "AI: In Oslo." in third[0][1]

    # A failing call and a cancelled one leave nothing, in the log or in the thread.
    server.reply_status(500, "model overloaded")
    failed = chat.say("Are you there?")
    assert "the model call failed" in failed and "nothing was saved" in failed
    server.reply_text("too late", delay=5)
    chat.child.sendline("This one is cancelled")
    deadline = time.monotonic() + 20
    while len(chat_requests(server)) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    chat.child.sendintr()
    chat.child.expect_exact("(cancelled: that message was not saved)")
    chat.child.expect_exact(PROMPT)
    server.reply_text("Still here.")
    assert chat.say("Hello again").strip() == "pmm> Still here."
    chat.child.sendline("/quit")
    chat.finish()
    last = roles_and_texts(chat_requests(server)[-1])
    assert [t for r, t in last if r == "user"] == ["What is my name?", "Hello again"]
    assert turns(db, "s1") == [
        ("user", ZED),
        ("assistant", "Nice to meet you, Zed!"),
        ("user", "Where do I live?"),
        ("assistant", "In Oslo."),
        ("user", "What is my name?"),
        ("assistant", "Your name is Zed."),
        ("user", "Hello again"),
        ("assistant", "Still here."),
    ]
