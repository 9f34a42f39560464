"""Emoji-only turns are findable: a query without a word (``🐶``) searches the symbols it
holds, which the full-text index drops, through Mind.recall, `pmm search` and `/search`
(issue 22). A query with a word is searched as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmm import Mind
from pmm.chat.offline import OfflineResponder
from pmm.chat.repl import Chat
from pmm.cli import main
from pmm.text.words import symbol_needles


def _fill(mind: Mind) -> dict[str, int]:
    ids = {}
    for text, session in [
        ("🐶", "ana"),
        ("I have a dog named Bolt 🐶🦴", "ana"),
        ("Coffee ☕ with Bo", "bo"),
        ("Nothing symbolic here, just words about a dog.", "ana"),
    ]:
        ids[text] = mind.remember(text, role="user", session_id=session).id
    return ids


def test_symbol_needles_only_for_queries_without_a_word() -> None:
    assert symbol_needles("🐶") == ["🐶"]
    assert symbol_needles(" 🦴🐶 🐶 ") == ["🦴", "🐶"]
    assert symbol_needles("❤️") == ["❤"]  # the variation selector is no symbol
    assert symbol_needles("my 🐶") == []  # a word: searched as words
    assert symbol_needles("?!") == [] and symbol_needles("") == []


def test_mind_recall_finds_emoji_only_turns(tmp_path: Path) -> None:
    with Mind(tmp_path / "m.db") as mind:
        ids = _fill(mind)
        hits = mind.recall("🐶", 5)
        assert [h.event.id for h in hits] == [ids["I have a dog named Bolt 🐶🦴"], ids["🐶"]]
        assert hits[0].rankers == {"symbol": 1}
        scoped = mind.recall("🐶", 5, session_id="ana")
        assert [h.event.id for h in scoped] == [h.event.id for h in hits]
        assert [h.event.content for h in mind.recall("☕", 5)] == ["Coffee ☕ with Bo"]
        assert mind.recall("☕", 5, session_id="ana") == []  # another user's session: no
        both = mind.recall("🦴🐶", 5)
        assert both[0].event.content == "I have a dog named Bolt 🐶🦴"  # holds both
        rest = mind._get_recaller().recall("🐶", 5, exclude_ids=[ids["🐶"]])
        assert [h.event.id for h in rest] == [ids["I have a dog named Bolt 🐶🦴"]]
        assert mind.recall("🐈", 5) == []
        words = mind.recall("dog", 5)  # a word: the full-text rankers, as before
        assert words and all("symbol" not in h.rankers for h in words)


def test_forgotten_emoji_turns_are_not_found(tmp_path: Path) -> None:
    with Mind(tmp_path / "m.db") as mind:
        ids = _fill(mind)
        mind.forget(event_ids=[ids["🐶"]], reason="asked")
        assert [h.event.id for h in mind.recall("🐶", 5)] == [ids["I have a dog named Bolt 🐶🦴"]]


def test_compressed_emoji_turns_are_found(tmp_path: Path) -> None:
    long = "🐶 " * 200 + "🌧"  # long enough to be compressed
    with Mind(tmp_path / "m.db") as mind:
        first = mind.remember(long, role="user", session_id="ana").id
        for i in range(40):
            mind.remember(f"filler turn {i} about the weather in Oslo 🌧 " * 8, role="user")
        mind.store.compress("1")
        [(kind,)] = mind.store._read("SELECT typeof(content) FROM events WHERE id = ?", [first])
        assert kind == "blob"
        assert [h.event.id for h in mind.recall("🐶", 5)] == [first]
        assert mind.recall("🐶", 5)[0].event.content == long


def test_pmm_search_and_slash_search(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    with Mind(db) as mind:
        ids = _fill(mind)
    assert main(["search", "🐶", "--db", str(db), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [h["event"]["id"] for h in found] == [ids["I have a dog named Bolt 🐶🦴"], ids["🐶"]]
    lines: list[str] = []
    with Mind(db) as mind:
        chat = Chat(mind, "ana", OfflineResponder(), write=lines.append)
        chat.handle("/search 🐶")
    assert lines[0].startswith(f"#{ids['I have a dog named Bolt 🐶🦴']} [ana] user:")
    assert lines[1].startswith(f"#{ids['🐶']} [ana] user: 🐶")
