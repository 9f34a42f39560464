"""Compression modes through Mind: off, inline, background, deferred; failures lose nothing."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pmm import Mind
from tests.mind_helpers import BrokenDigester, RecordingDigester

LONG_USER = (
    "So here is the situation with my move. I relocated from Porto to Lisbon on 3 March 2021 "
    "because my partner Rita got a job at the Gulbenkian. We rent a flat in Alfama for 1,450 "
    "euros a month, and honestly the hills are killing my knees but the view is worth it."
)
LONG_AI = (
    "That sounds like a big change! Alfama is one of the oldest neighbourhoods in Lisbon, and "
    "the rent you mention is typical for the area these days. For your knees, the 28 tram and "
    "the Santa Justa lift can save you a few climbs. Would you like tips on quieter viewpoints?"
)


def db(tmp_path: Path) -> str:
    return str(tmp_path / "pmm.db")


def test_flag_off_stores_raw_turns_and_loads_nothing_else(tmp_path: Path) -> None:
    with Mind(db(tmp_path)) as mind:
        mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        assert mind._worker is None and mind._processor._digester is None
        events = mind.store.events()
        assert all(e.summary is None and e.digest_method is None for e in events)
        assert mind.pending_count() == 0
        # key facts ("Partner's name: Rita") may head it; the turns themselves stay raw
        assert mind.context("s").text().endswith(f"\nHuman: {LONG_USER}\nAI: {LONG_AI}")


def test_flag_off_never_imports_the_digest_backends(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from pmm import PersistentMindMemory
        m = PersistentMindMemory(db_path={db(tmp_path)!r}, session_id="s")
        m.save_context({{"input": {LONG_USER!r}}}, {{"output": "ok"}})
        m.load_memory_variables({{"input": "Lisbon"}})
        m.close()
        heavy = [n for n in ("pmm.digest", "torch", "transformers", "spacy",
                             "sentence_transformers", "langchain_openai") if n in sys.modules]
        print(heavy)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_flag_off_ignores_digests_already_in_the_file(tmp_path: Path) -> None:
    """Byte-for-byte the old behaviour, even on a file an earlier run digested."""
    with Mind(
        db(tmp_path),
        enable_summary=True,
        summary_mode="inline",
        summarizer="heuristic",
        raw_turns=0,
    ) as mind:
        for _ in range(3):
            mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        summarized = mind.context("s").text()
    with Mind(db(tmp_path)) as off:
        raw = off.context("s").text()
    history = raw.split("Recent conversation:\n", 1)[-1]  # after key facts, if any
    assert history == "\n".join([f"Human: {LONG_USER}\nAI: {LONG_AI}"] * 3)
    assert summarized != raw and len(summarized) < len(raw)


def test_inline_digests_before_returning(tmp_path: Path) -> None:
    digester = RecordingDigester()
    with Mind(db(tmp_path), enable_summary=True, summary_mode="inline", digester=digester) as mind:
        user, ai = mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        stored = mind.store.get_many([user.id, ai.id])
        assert stored[user.id].summary == f"S({LONG_USER[:20]})"
        assert stored[ai.id].digest_method == "recording"
        assert stored[user.id].content == LONG_USER  # raw text untouched
        assert digester.batches == [[LONG_USER, LONG_AI]]
        assert mind.verify().ok


def test_background_returns_at_once_and_flushes_on_close(tmp_path: Path) -> None:
    digester = RecordingDigester(delay=0.3)
    mind = Mind(db(tmp_path), enable_summary=True, summary_mode="background", digester=digester)
    started = time.perf_counter()
    for i in range(5):
        mind.remember_turn(f"{LONG_USER} #{i}", LONG_AI, session_id="s")
    assert time.perf_counter() - started < 0.25  # did not wait for the 0.3 s digests
    mind.close()
    with Mind(db(tmp_path)) as check:
        assert check.store.count_undigested(kinds=("prompt", "response")) == 0
        assert {e.digest_method for e in check.store.events()} == {"recording"}


def test_background_flush(tmp_path: Path) -> None:
    with Mind(db(tmp_path), enable_summary=True, digester=RecordingDigester()) as mind:
        assert mind.settings.summary_mode == "background"
        mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        assert mind.flush(10)
        assert mind.pending_count() == 0


def test_deferred_waits_for_dream(tmp_path: Path) -> None:
    with Mind(
        db(tmp_path),
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        summary_batch_size=4,
    ) as mind:
        for i in range(5):
            mind.remember_turn(f"{LONG_USER} ({i})", LONG_AI, session_id="s")
        mind.remember_turn("hi", "hello", session_id="s")
        assert mind.pending_count() == 12
        seen: list[tuple[int, int]] = []
        report = mind.dream(progress=lambda done, total: seen.append((done, total)))
        assert report.digested == 12 and report.pending == 0
        assert report.methods == {"heuristic": 10, "verbatim": 2}
        assert seen[-1] == (12, 12) and len(seen) >= 3
        assert mind.dream().digested == 0


def test_dream_limit(tmp_path: Path) -> None:
    with Mind(
        db(tmp_path), enable_summary=True, summary_mode="deferred", summarizer="heuristic"
    ) as mind:
        for _ in range(4):
            mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        assert mind.dream(limit=3).digested == 3
        assert mind.pending_count() == 5


def test_a_failing_backend_loses_no_turn(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = BrokenDigester()
    with (
        caplog.at_level(logging.WARNING),
        Mind(db(tmp_path), enable_summary=True, summary_mode="inline", digester=broken) as mind,
    ):
        user, _ = mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        assert broken.calls == 1
        assert mind.pending_count() == 2
        assert mind.store.get(user.id).content == LONG_USER
        assert "stay pending" in caplog.text
        assert "\nHuman: So here is the situation" in mind.context("s").text()  # raw, after facts
    with Mind(
        db(tmp_path), enable_summary=True, summary_mode="deferred", summarizer="heuristic"
    ) as later:
        assert later.dream().digested == 2
        assert later.pending_count() == 0


def test_background_failure_keeps_events_pending(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        mind = Mind(db(tmp_path), enable_summary=True, digester=BrokenDigester())
        mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        assert mind.flush(5) is False
        mind.close()
    assert caplog.text.count("background digest failed") == 1
    with Mind(
        db(tmp_path), enable_summary=True, summary_mode="deferred", summarizer="heuristic"
    ) as later:
        assert later.pending_count() == 2


def test_background_picks_up_what_an_earlier_process_left(tmp_path: Path) -> None:
    with Mind(db(tmp_path), enable_summary=True, summary_mode="deferred") as first:
        first.remember_turn(LONG_USER, LONG_AI, session_id="s")
    digester = RecordingDigester()
    with Mind(db(tmp_path), enable_summary=True, digester=digester) as second:
        assert second.flush(10)
        assert second.pending_count() == 0


def test_killed_mid_batch_loses_no_turn(tmp_path: Path) -> None:
    path = db(tmp_path)
    code = textwrap.dedent(
        f"""
        import sys
        from pmm import Mind
        from tests.mind_helpers import RecordingDigester
        mind = Mind({path!r}, enable_summary=True, summary_mode="background",
                    summary_batch_size=2, digester=RecordingDigester(delay=0.5))
        for i in range(10):
            user, ai = mind.remember_turn(f"turn {{i}} " + {LONG_USER!r}, "reply", session_id="s")
            print(ai.id, flush=True)
        import time; time.sleep(60)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    acknowledged = [int(proc.stdout.readline()) for _ in range(10)]
    time.sleep(0.8)  # the worker is inside a batch now
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    with Mind(path, enable_summary=True, summary_mode="deferred", summarizer="heuristic") as mind:
        assert mind.store.count() == 20 and acknowledged[-1] == 20
        assert mind.verify().ok
        pending = mind.pending_count()
        assert 0 < pending < 20  # some batches finished, the rest are still pending
        assert mind.dream().digested == pending
        assert mind.pending_count() == 0


def test_older_turns_use_summaries_newest_stay_raw(tmp_path: Path) -> None:
    with Mind(
        db(tmp_path),
        enable_summary=True,
        summary_mode="inline",
        summarizer="heuristic",
        raw_turns=2,
    ) as mind:
        for i in range(3):
            mind.remember_turn(f"Turn {i}. {LONG_USER}", LONG_AI, session_id="s")
        ctx = mind.context("s")
        assert [t.summarized for t in ctx.history] == [True, True, True, True, False, False]
        assert ctx.history[-1].text == LONG_AI and ctx.history[-2].text.startswith("Turn 2.")
        text = ctx.text()
        assert "Human: User:" not in text  # the digest's own label is not doubled
        assert f"Human: Turn 0. {LONG_USER}" not in text


def test_summaries_fit_more_history_in_the_same_budget(tmp_path: Path) -> None:
    budget = 400
    with Mind(db(tmp_path)) as raw:
        for i in range(12):
            raw.remember_turn(f"Turn {i}. {LONG_USER}", LONG_AI, session_id="s")
        raw_turns = len(raw.context("s", budget_tokens=budget).history)
    with Mind(  # digests alone (the stored session summary takes a share of its own)
        db(tmp_path),
        enable_summary=True,
        summary_mode="deferred",
        summarizer="heuristic",
        session_summaries=False,
    ) as mind:
        mind.dream()
        ctx = mind.context("s", budget_tokens=budget)
        assert len(ctx.history) > raw_turns
        assert mind.counter.count(ctx.text()) <= budget


def test_mixed_log_of_raw_and_digested_rows(tmp_path: Path) -> None:
    with Mind(db(tmp_path)) as old:  # flag off: raw rows
        old.remember_turn(f"Old. {LONG_USER}", LONG_AI, session_id="s")
    with Mind(
        db(tmp_path),
        enable_summary=True,
        summary_mode="inline",
        digester=RecordingDigester(),
        raw_turns=2,
    ) as mind:
        for i in range(2):
            mind.remember_turn(f"New {i}. {LONG_USER}", LONG_AI, session_id="s")
        history = mind.context("s").history
        assert [t.summarized for t in history] == [False, False, True, True, False, False]
        assert history[0].text.startswith("Old.")  # undigested: shown raw
        assert history[2].text == "S(New 0. So here is th)"


def test_keywords_are_no_key_information(tmp_path: Path) -> None:
    """Digest keywords are a list of words, no statement about the user: key information
    holds statements only (the "Topics" line they made is gone)."""
    with Mind(
        db(tmp_path), enable_summary=True, summary_mode="inline", summarizer="heuristic"
    ) as mind:
        for _ in range(2):
            mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        assert mind.store.get(1).keywords  # the turns have keywords
        facts = mind.context("s").facts
        assert not [f for f in facts if f.startswith("Topics: ")]
        assert all(": " in f for f in facts)  # "Label: value" statements, no word list


class FlakyDigester(RecordingDigester):
    """Fails its first call, then works: like a summarizer server that was briefly down."""

    def __init__(self) -> None:
        super().__init__()
        self.failures_left = 1

    def digest_many(self, texts, roles=None):  # type: ignore[no-untyped-def]
        if self.failures_left:
            self.failures_left -= 1
            raise RuntimeError("server restarting")
        return super().digest_many(texts, roles)


def test_background_retries_by_itself_after_a_failure(tmp_path: Path) -> None:
    with Mind(db(tmp_path), enable_summary=True, digester=FlakyDigester()) as mind:
        mind.remember_turn(LONG_USER, LONG_AI, session_id="s")
        deadline = time.monotonic() + 10
        while mind.pending_count() and time.monotonic() < deadline:
            time.sleep(0.1)  # nobody wakes the worker: its retry timer must
        assert mind.pending_count() == 0


class RecordingEmbedder:
    """A deterministic 8-dim embedder that records what it was asked to embed."""

    model_name = "test/recording-8d"
    dim = 8

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        import numpy as np

        self.texts.extend(texts)
        rows = [
            np.frombuffer(f"{t:<32}"[:32].encode("utf-8", "replace")[:32], dtype=np.uint8)
            for t in texts
        ]
        vectors = np.stack([r[:8].astype(np.float32) + 1 for r in rows])
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_turns_are_embedded_by_their_summary_after_digesting(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    with Mind(
        db(tmp_path),
        enable_summary=True,
        enable_embeddings=True,
        summary_mode="background",
        summarizer="heuristic",
        embedder=embedder,
        summary_batch_size=2,
    ) as mind:
        for i in range(4):
            mind.remember_turn(f"Turn {i}. {LONG_USER}", LONG_AI, session_id="s")
        assert mind.flush(20)
        assert mind.pending_count() == 0
        assert mind.store.count_unembedded(embedder.model_name, kinds=("prompt", "response")) == 0
        summaries = {e.summary for e in mind.store.events()}
        # every vector was made from a summary (label stripped), never from raw text
        assert LONG_USER not in embedder.texts
        assert all(any(t in (s or "") for s in summaries) for t in embedder.texts)


def test_a_turn_waiting_for_its_digest_is_not_embedded_raw(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    with Mind(
        db(tmp_path),
        enable_summary=True,
        enable_embeddings=True,
        summary_mode="inline",
        digester=FlakyDigester(),
        embedder=embedder,
    ) as mind:
        mind.remember_turn(f"First. {LONG_USER}", LONG_AI, session_id="s")  # digest fails
        mind.remember_turn(f"Second. {LONG_USER}", LONG_AI, session_id="s")
        assert mind.pending_count() == 2
        assert not any(t.startswith("First.") for t in embedder.texts)  # not embedded raw
        report = mind.dream()
        assert report.digested == 2 and mind.pending_count() == 0
        assert mind.store.count_unembedded(embedder.model_name, kinds=("prompt", "response")) == 0
        # only summaries were embedded
        assert all(t.startswith("S(") for t in embedder.texts), embedder.texts


def test_inline_digests_reach_the_session_ranker(tmp_path: Path) -> None:
    """In inline mode the digest is written right after the append: the session's
    in-memory ranker scores the turn with its summary and keywords, as FTS5 does."""
    with Mind(
        db(tmp_path), enable_summary=True, summary_mode="inline", summarizer="heuristic"
    ) as mind:
        mind.remember("we talked about the weather", role="user", session_id="s")
        mind.recall("weather", 3, session_id="s", mode="keyword")  # the session is held
        event = mind.remember(
            "I adopted a beagle puppy named Biscuit yesterday", role="user", session_id="s"
        )
        assert mind.store.get(event.id).summary
        ranker = mind._contexts.recaller().session_ranker
        assert ranker is not None
        query = "beagle Biscuit puppy"
        ours = ranker.search(query, session_id="s", key="turn")
        fts5 = mind.store.search_text(query, session_id="s", key="turn")
        assert [i for i, _ in ours] == [i for i, _ in fts5]
        assert ours[0][1] == pytest.approx(fts5[0][1])
