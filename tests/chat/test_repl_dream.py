"""chat.py's /dream and its dream at exit ("learn fast, dream deep")."""

from __future__ import annotations

from pathlib import Path

from pmm import Mind
from pmm.chat.offline import OfflineResponder
from pmm.chat.repl import Chat

LONG = (
    "I finally booked the Azores trip for June with my sister Joana; we land in Ponta "
    "Delgada on the 12th, rent a car, and spend four days hiking around Sete Cidades before "
    "taking the ferry to Pico, where she wants to climb the mountain at sunrise."
)


def chat_for(tmp_path: Path, **settings: object) -> tuple[Chat, list[str]]:
    lines: list[str] = []
    mind = Mind(tmp_path / "pmm.db", **settings)  # type: ignore[arg-type]
    return Chat(mind, "alice", OfflineResponder(), write=lines.append), lines


def test_slash_dream_digests_with_a_progress_line_and_a_summary_line(tmp_path: Path) -> None:
    chat, lines = chat_for(
        tmp_path, enable_summary=True, summary_mode="deferred", summarizer="heuristic"
    )
    for n in range(3):
        chat.mind.remember_turn(
            f"{LONG} ({n})", f"That sounds wonderful! ({n})", session_id="alice"
        )
    assert chat.mind.pending_count() == 6
    assert chat.handle("/dream")
    assert any(line.startswith("dreaming: ") and "6/6" in line for line in lines)
    assert "6 turns digested" in lines[-1] and "session summaries written: 1" in lines[-1]
    assert chat.mind.pending_count() == 0
    chat.mind.close()


def test_exit_dreams_only_when_there_is_work_and_dream_on_close(tmp_path: Path) -> None:
    chat, lines = chat_for(
        tmp_path, enable_summary=True, summary_mode="deferred", summarizer="heuristic"
    )
    chat.dream(at_exit=True)
    assert lines == []  # nothing pending: no line at exit
    chat.mind.remember_turn(LONG, "Enjoy it!", session_id="alice")
    chat.dream(at_exit=True)
    assert "2 turns digested" in lines[-1] and chat.mind.pending_count() == 0
    chat.mind.close()
    off, off_lines = chat_for(
        tmp_path / "..", enable_summary=True, summary_mode="deferred", dream_on_close=False
    )
    off.mind.remember_turn(LONG, "Enjoy it!", session_id="alice")
    off.dream(at_exit=True)
    assert off_lines == [] and off.mind.pending_count() == 2
    off.mind.close()


def test_dream_with_summaries_and_embeddings_off_says_so(tmp_path: Path) -> None:
    chat, lines = chat_for(tmp_path)
    chat.handle("/dream")
    assert lines == ["(nothing to dream: summaries and embeddings are off, see PMM_ENABLE_SUMMARY)"]
    chat.mind.close()
