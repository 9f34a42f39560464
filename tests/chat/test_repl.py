"""The chat REPL, driven as a real program (``python chat.py``) through a pseudo-terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from fake_openai import FakeOpenAI
from repl_helpers import CHAT, PROMPT, ZED, Chat, chat_requests, turns

from pmm.storage.sqlite import EventStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "chat.db"


def test_offline_chat_remembers_across_restarts(db: Path, tmp_path: Path) -> None:
    chat = Chat("--db", str(db), "--session", "s1", cwd=tmp_path)
    assert "OFFLINE" in chat.first_line and "OPENAI_API_KEY" in chat.first_line

    assert "summaries off, embeddings off" in chat.first_line
    reply = chat.say(ZED)  # a statement: acknowledged, not answered with the fact list
    assert reply.strip() == "pmm> Noted: I'll remember that."  # "offline" said once, above

    memory = chat.say("/memory")
    assert "Name: Zed" in memory and "Lives in: Oslo" in memory
    assert f"Human: {ZED}" in memory
    assert "offline" not in memory  # its own boilerplate is no memory

    found = chat.say("/search Oslo")
    assert f"#1 [s1] user: {ZED}" in found

    stats = chat.say("/stats")
    assert "2 events (1 turn: a turn is one message) in 1 session, 2 of the events in 's1'" in (
        stats
    )

    verified = chat.say("/verify")
    assert "chain OK: 2 rows verified" in verified

    assert "/memory" in chat.say("/help")
    assert "unknown command /nope" in chat.say("/nope")

    assert "switched to session 'other' (0 turns remembered)" in chat.say("/session other")
    other = chat.say("/memory")
    assert "Zed" not in other and "nothing remembered in session 'other'" in other
    chat.say("I like sailing")

    chat.child.sendeof()  # Ctrl-D
    assert "Goodbye." in chat.finish()
    assert turns(db, "s1")[0] == ("user", ZED)
    assert [role for role, _ in turns(db, "other")] == ["user", "assistant"]

    # a new process on the same file still knows Zed in s1
    chat = Chat("--db", str(db), "--session", "s1", cwd=tmp_path)
    assert "Name: Zed" in chat.say("/memory")
    answer = chat.say("What is my name?")
    assert "Name: Zed" in answer and ZED in answer
    assert "Lives in" not in answer  # only what was asked about
    again = chat.say("What is my name again?")
    assert "What is my name?" not in again  # an earlier question is no answer
    assert "nothing about that" in chat.say("Do I have a boat?")
    assert "offline" not in answer.lower() and "offline" not in again.lower()
    assert "nothing found for 'offline'" in chat.say("/search offline")
    chat.child.sendintr()  # Ctrl-C at the prompt
    assert "Goodbye." in chat.finish()
    logged = turns(db, "s1")
    assert logged[:4] == [
        ("user", ZED),
        ("assistant", logged[1][1]),
        ("user", "What is my name?"),
        ("assistant", answer.removeprefix("pmm> ").strip()),
    ]
    with EventStore(db) as store:  # the replies are logged, but as no turn kind
        kinds = [e.kind for e in store.events(session_id="s1")]
    assert kinds[:4] == ["prompt", "offline_reply", "prompt", "offline_reply"]


def test_quit_command_and_bad_database(tmp_path: Path) -> None:
    chat = Chat("--db", str(tmp_path / "q.db"), cwd=tmp_path)
    assert "session 'default'" in chat.first_line
    chat.child.sendline("/quit")
    assert "Goodbye." in chat.finish()

    bad = pexpect.spawn(
        sys.executable,
        [str(CHAT), "--db", str(tmp_path / "missing" / "x.db")],
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=90,
    )
    bad.expect(pexpect.EOF)
    output = str(bad.before)
    bad.close()
    assert bad.exitstatus == 2
    assert "pmm-chat: error: folder" in output and "Traceback" not in output


def test_user_on_an_anonymous_session_opens_her_own_thread(db: Path, tmp_path: Path) -> None:
    chat = Chat("--db", str(db), "--session", "me", cwd=tmp_path)
    chat.say(ZED)  # 'me' now holds turns without a user
    switched = chat.say("/user alice")
    assert "user 'alice', session 'alice' (0 turns remembered; 'me' is not hers" in switched
    chat.say("I live in Lisbon")
    assert "Lives in: Lisbon" in chat.say("/memory")
    assert "user 'bob', session 'bob'" in chat.say("/user bob")  # 'alice' is not bob's either
    chat.child.sendline("/quit")
    assert "Goodbye." in chat.finish()
    with EventStore(db) as store:
        assert store.verify().ok
        assert {e.user_id for e in store.events(session_id="me")} == {None}
        assert store.events(session_id="me")[0].content == ZED
        hers = store.events(session_id="alice")
        assert hers[0].content == "I live in Lisbon"
        assert {e.user_id for e in hers} == {"alice"}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default_text="(unscripted)") as fake:
        yield fake


def test_online_chat_sends_memory_to_the_model(
    db: Path, tmp_path: Path, server: FakeOpenAI
) -> None:
    env = {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.api_base}
    server.reply_text("Nice to meet you, Zed!")
    chat = Chat(
        "--classic",
        "--db",
        str(db),
        "--session",
        "s1",
        "--model",
        "fake-model",
        cwd=tmp_path,
        env=env,
    )  # the classic LCEL chain (the v1 agent is tests/integrations/test_chat_agent.py)
    assert "online (classic chain): model fake-model" in chat.first_line
    assert server.api_base in chat.first_line
    assert chat.say(ZED).strip() == "pmm> Nice to meet you, Zed!"
    chat.child.sendeof()
    chat.finish()

    # a restart: the earlier turn comes from the log, not from the process
    server.reply_text("Your name is Zed and you live in Oslo.")
    chat = Chat("--classic", "--db", str(db), "--session", "s1", cwd=tmp_path, env=env)
    reply = chat.say("What is my name?")
    assert reply.strip() == "pmm> Your name is Zed and you live in Oslo."

    # a failing model call: reported, nothing saved, the chat goes on
    server.reply_status(500, "model overloaded")
    failed = chat.say("Are you there?")
    assert "the model call failed" in failed and "nothing was saved" in failed

    # Ctrl-C while the reply is coming cancels that turn only
    server.reply_text("too late", delay=5)
    chat.child.sendline("This one is cancelled")
    deadline = time.monotonic() + 20
    while len(chat_requests(server)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    chat.child.sendintr()
    chat.child.expect_exact("(cancelled: that message was not saved)")
    chat.child.expect_exact(PROMPT)
    chat.child.sendline("/quit")
    chat.finish()

    requests = chat_requests(server)
    assert len(requests) == 4
    assert requests[0]["model"] == "fake-model"  # --model
    second = requests[1]
    assert second["model"] == "gpt-4o-mini"  # PMM_LLM_MODEL's default
    messages = second["messages"]
    assert isinstance(messages, list)
    assert messages[0]["role"] == "system" and "persistent memory" in messages[0]["content"]
    contents = [(m["role"], m["content"]) for m in messages]
    assert ("user", ZED) in contents  # the earlier turn, from memory
    assert ("assistant", "Nice to meet you, Zed!") in contents
    assert contents[-1] == ("user", "What is my name?")
    assert turns(db, "s1") == [
        ("user", ZED),
        ("assistant", "Nice to meet you, Zed!"),
        ("user", "What is my name?"),
        ("assistant", "Your name is Zed and you live in Oslo."),
    ]


def test_summaries_and_embeddings_flags(db: Path, tmp_path: Path) -> None:
    """``--summaries --embeddings`` turn on PMM_ENABLE_SUMMARY and PMM_ENABLE_EMBEDDINGS: the
    banner says so, and the exit's dream digests and embeds the turns."""
    chat = Chat(
        "--db",
        str(db),
        "--session",
        "s1",
        "--summaries",
        "--embeddings",
        cwd=tmp_path,
        env={"PMM_SUMMARIZER": "heuristic", "PMM_SUMMARY_MODE": "deferred"},
    )
    assert "summaries on (heuristic, deferred), embeddings on" in chat.first_line
    chat.say(ZED)
    chat.child.sendline("/quit")
    chat.finish()
    with EventStore(db) as store:
        [turn] = [e for e in store.events(session_id="s1") if e.kind == "prompt"]
        assert turn.digest_method is not None and sum(store.embedding_models().values()) >= 1
    chat = Chat("--db", str(db), "--no-summaries", cwd=tmp_path, env={"PMM_ENABLE_SUMMARY": "true"})
    assert "summaries off, embeddings off" in chat.first_line
    chat.child.sendline("/quit")
    chat.finish()
