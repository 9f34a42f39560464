"""Mind: remember, context, clear, sessions, settings and the digest modes' plumbing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmm import Mind
from pmm.errors import ConfigurationError, InvalidInputError
from pmm.storage.sqlite import EventStore


@pytest.fixture
def mind(tmp_path: Path) -> Mind:
    with Mind(str(tmp_path / "pmm.db")) as m:
        yield m


def test_remember_sets_kind_from_role(mind: Mind) -> None:
    user = mind.remember("I moved to Lisbon", role="user", session_id="alice")
    ai = mind.remember("Lisbon is lovely", role="assistant", session_id="alice")
    note = mind.remember("tool ran", role="tool", session_id="alice")
    assert (user.kind, user.role) == ("prompt", "user")
    assert (ai.kind, ai.role) == ("response", "assistant")
    assert note.kind == "event"
    assert ai.prev_hash == user.hash


def test_unknown_role_and_empty_session_are_refused(mind: Mind) -> None:
    with pytest.raises(InvalidInputError, match="role must be one of"):
        mind.remember("x", role="human")
    with pytest.raises(InvalidInputError, match="session_id"):
        mind.remember("x", role="user", session_id=" ")
    assert mind.store.count() == 0


def test_remember_turn_is_atomic(mind: Mind) -> None:
    with pytest.raises(InvalidInputError):
        mind.remember_turn("fine", "bad\x00reply", session_id="s")
    assert mind.store.count() == 0
    user, ai = mind.remember_turn("hello", "hi!", session_id="s")
    assert ai.id == user.id + 1


def test_context_is_per_session(mind: Mind) -> None:
    mind.remember_turn("My name is Ana.", "Hi Ana", session_id="alice")
    mind.remember_turn("My name is Bob.", "Hi Bob", session_id="bob")
    alice = mind.context("alice").text()
    bob = mind.context("bob").text()
    assert "Ana" in alice and "Bob" not in alice
    assert "Bob" in bob and "Ana" not in bob


def test_clear_keeps_the_log_but_empties_history(mind: Mind) -> None:
    mind.remember_turn("My name is Ana.", "Hi Ana", session_id="alice")
    marker = mind.clear("alice")
    assert marker.kind == "clear"
    assert mind.context("alice").text() == ""
    assert mind.history("alice") == []
    assert mind.store.count() == 3
    assert mind.verify().ok
    mind.remember_turn("I live in Porto.", "Nice", session_id="alice")
    text = mind.context("alice").text()
    assert "Porto" in text and "Ana" not in text


def test_clear_from_another_process_is_seen(tmp_path: Path) -> None:
    path = str(tmp_path / "pmm.db")
    with Mind(path) as first, Mind(path) as second:
        first.remember_turn("My name is Ana.", "Hi", session_id="s")
        assert "Ana" in second.context("s").text()
        first.clear("s")
        assert second.context("s").text() == ""


def test_budget_is_respected_and_newest_kept(mind: Mind) -> None:
    for i in range(50):
        mind.remember_turn(
            f"question {i} " + "blah " * 30, f"answer {i} " + "meh " * 30, session_id="s"
        )
    ctx = mind.context("s", budget_tokens=300)
    assert ctx.tokens <= 300
    assert mind.counter.count(ctx.text()) <= 300
    assert ctx.history[-1].text.startswith("answer 49")
    assert len(ctx.history) < 100


def test_legacy_rows_are_labelled_from_their_prefix(tmp_path: Path) -> None:
    path = tmp_path / "pmm.db"
    with EventStore(path) as store:
        store.append("prompt", "User said: I like tea", session_id="default")
        store.append("response", "I responded: Tea is great", session_id="default")
    with Mind(str(path)) as mind:
        assert mind.context().text() == (
            "Key information:\n- Likes: tea\n\nRecent conversation:\n"
            "Human: I like tea\nAI: Tea is great"
        )


def test_arguments_beat_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMM_MAX_TOKENS", "123")
    monkeypatch.setenv("PMM_SESSION_ID", "env-session")
    with Mind(str(tmp_path / "a.db"), max_tokens=77) as mind:
        assert mind.settings.max_tokens == 77
        assert mind.settings.session_id == "env-session"
    monkeypatch.setenv("PMM_SUMMARY_MODE", "sometimes")
    with pytest.raises(ConfigurationError, match="PMM_SUMMARY_MODE"):
        Mind(str(tmp_path / "b.db"))


def test_stats_counts(mind: Mind) -> None:
    mind.remember_turn("hi", "hello", session_id="a")
    mind.remember_turn("hi", "hello", session_id="b")
    stats = mind.stats()
    assert stats["events"] == 4 and stats["turns"] == 4
    assert stats["by_session"] == {"a": 2, "b": 2}
    assert stats["by_role"] == {"user": 2, "assistant": 2}
    assert stats["bytes_on_disk"] > 0


def test_a_dropped_mind_releases_its_thread_and_file(tmp_path: Path) -> None:
    import gc
    import threading

    def digest_threads() -> int:
        return sum(t.name == "pmm-digest" and t.is_alive() for t in threading.enumerate())

    before = digest_threads()
    for _ in range(5):
        mind = Mind(str(tmp_path / "pmm.db"), enable_summary=True, summarizer="heuristic")
        mind.remember_turn("hello " * 60, "hi", session_id="s")
        del mind
    gc.collect()
    for _ in range(50):
        if digest_threads() == before:
            break
        threading.Event().wait(0.05)
    assert digest_threads() == before


def test_redaction_removes_facts_from_the_context(mind: Mind) -> None:
    user, _ = mind.remember_turn("My name is Ana Sousa.", "Hi Ana", session_id="s")
    assert "Name: Ana Sousa" in mind.context("s").text()
    marker = mind.store.redact(user.id, reason="user asked")
    assert marker.session_id == "s"
    text = mind.context("s").text()
    assert "Ana Sousa" not in text.split("AI:")[0]
    assert "Key information" not in text
    mind.remember_turn("I live in Porto.", "ok", session_id="s")
    assert "Lives in: Porto" in mind.context("s").text()  # facts keep coming after a rebuild


def test_settings_with_none_keeps_the_value(tmp_path: Path) -> None:
    from pmm.settings import Settings

    settings = Settings.load(env={}, session_id="kept", max_tokens=50)
    assert settings.with_(session_id=None, max_tokens=60).session_id == "kept"
    with Mind(settings=settings, db_path=str(tmp_path / "a.db"), session_id=None) as mind:
        assert mind.settings.session_id == "kept"
