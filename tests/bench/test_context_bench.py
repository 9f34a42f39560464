"""bench/context.py (issue 37's "evidence in context") on hand-made turns and a small
GENERATED conversation (never LoCoMo's text, which is CC BY-NC and stays outside the
repository): the metric on cases worked out by hand, budgets never exceeded, the stored
files reused, and ``main(["--quick"])`` end to end without LoCoMo."""

from __future__ import annotations

import importlib
import json
import random
import sys
import zlib
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from types import ModuleType

import numpy as np
import numpy.typing as npt
import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"

pytest.importorskip("bm25s")


@pytest.fixture(scope="module")
def mods() -> Iterator[tuple[ModuleType, ModuleType]]:
    sys.path.insert(0, str(BENCH))
    try:
        context = importlib.import_module("context")  # its data and metric too
        yield context, context
    finally:
        sys.path.remove(str(BENCH))


class WordHashEmbedder:
    """Each word a fixed random direction: the dense paths run without a model."""

    model_name = "test/word-hash"
    dim = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                rng = np.random.default_rng(zlib.crc32(word.encode()))
                out[row] += rng.standard_normal(self.dim)
            out[row, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def item(cd: ModuleType, dia: str, speaker: str, text: str) -> object:
    return cd.Item(dia, speaker, "user", 1, datetime(2023, 5, 8), f"{speaker}: {text}", (dia,))


def test_a_turn_counts_by_its_unique_8gram_not_a_shared_one(mods: tuple[ModuleType, ...]) -> None:
    _, cd = mods
    turns = [
        item(cd, "D1:1", "Ann", "the quick brown fox jumps over the lazy dog today"),
        item(cd, "D1:2", "Bob", "the quick brown fox jumps over the lazy cat"),
    ]
    ev = cd.Evidence(turns)
    shared = "Human: the quick brown fox jumps over the lazy"
    assert ev.share(["D1:1"], shared) == 0.0  # held by both turns: counts for neither
    assert ev.share(["D1:2"], shared) == 0.0
    assert ev.share(["D1:1"], "AI: ...brown fox jumps over the lazy dog today") == 1.0
    assert ev.share(["D1:2"], "quick brown fox jumps over the lazy cat") == 1.0
    assert ev.share(["D1:1", "D1:2"], "brown fox jumps over the lazy dog today") == 0.5
    # seven words of the unique run are not enough
    assert ev.share(["D1:1"], "fox jumps over the lazy dog today") == 0.0


def test_normalisation_lowercases_and_drops_punctuation(mods: tuple[ModuleType, ...]) -> None:
    _, cd = mods
    turns = [item(cd, "D1:1", "Ann", "I can't believe Zephyr ran the whole marathon, honestly!")]
    ev = cd.Evidence(turns)
    assert (
        ev.share(["D1:1"], "- [2023-05-08] Ann: I CANT believe zephyr ran -- the whole marathon")
        == 1.0
    )
    assert ev.share(["D1:1"], "I can not believe zephyr ran the whole marathon") == 0.0
    assert cd.normal_words("Ann's cat—sat, (really)!") == ["anns", "catsat", "really"]
    # the speaker label is not part of the turn's words
    assert ev.words["D1:1"][0] == "i"


def test_a_short_turn_counts_only_whole(mods: tuple[ModuleType, ...]) -> None:
    _, cd = mods
    turns = [item(cd, "D1:1", "Ann", "Hi there, Bob!"), item(cd, "D1:2", "Bob", "Hi!")]
    ev = cd.Evidence(turns)
    assert ev.share(["D1:1"], "Ann: Hi there, Bob! How are you?") == 1.0
    assert ev.share(["D1:1"], "hi there") == 0.0
    assert ev.share(["D1:1"], "hi there bobby") == 0.0  # whole words only
    assert ev.share(["D1:2"], "oh, hi.") == 1.0
    assert ev.share(["D1:2"], "this is it") == 0.0  # "hi" inside "this" is not the word


def test_a_repeated_long_turn_is_unmatchable(mods: tuple[ModuleType, ...]) -> None:
    _, cd = mods
    words = "we went to the lake again on sunday morning"
    turns = [item(cd, "D1:1", "Ann", words), item(cd, "D1:2", "Ann", words)]
    ev = cd.Evidence(turns)
    assert ev.unmatchable == ["D1:1", "D1:2"]
    assert ev.share(["D1:1"], words) == 0.0


def test_answer_in_context(mods: tuple[ModuleType, ...]) -> None:
    _, cd = mods
    assert cd.answer_in("7 May 2023", "It was on 7 May, 2023.") is True
    assert cd.answer_in("Adoption agencies", "she called adoption agency staff") is False
    assert cd.answer_in("", "anything") is None


def test_pack_never_exceeds_the_budget(mods: tuple[ModuleType, ...]) -> None:
    ctx, cd = mods
    count = ctx.get_token_counter().count
    rng = random.Random(3)
    lines = [" ".join(rng.choice(cd.VOCAB) for _ in range(rng.randint(1, 60))) for _ in range(80)]
    for budget in (0, 1, 7, 50, 333, 1000):
        kept, tokens = cd.pack(lines, budget, count)
        assert tokens == count("\n".join(kept)) <= budget
        run, _ = cd.pack(lines, budget, count, contiguous=True)
        assert run == lines[: len(run)]
    everything, _ = cd.pack(lines, 10**6, count)
    assert everything == lines


def test_long_messages_join_runs_and_keep_the_evidence(mods: tuple[ModuleType, ...]) -> None:
    _, cd = mods
    dialog = cd.generated_dialogs(1)[0]
    turns = [
        item(cd, "D1:1", "Ann", "one"),
        item(cd, "D1:2", "Ann", "two"),
        item(cd, "D1:3", "Bob", "three"),
    ]
    joined = cd.long_messages(cd.Dialog("x", ("Ann", "Bob"), turns, dialog.questions))
    assert [(i.text, i.turns) for i in joined.stored] == [
        ("Ann: one two", ("D1:1", "D1:2")),
        ("Bob: three", ("D1:3",)),
    ]
    assert joined.turns == turns


def test_evaluate_stays_in_budget_and_reuses_the_stored_files(
    mods: tuple[ModuleType, ...], tmp_path: Path
) -> None:
    ctx, cd = mods
    dialog = cd.generated_dialogs(1)[0]
    runner = ctx.Runner(tmp_path, embedder=WordHashEmbedder(), log=False)
    records = runner.evaluate(dialog, "thread", [60, 300], None)
    assert runner.build_seconds > 0
    systems = {r["system"] for r in records}
    assert {"pmm", "buffer", "half", "bm25", "recall", "langgraph"} <= systems
    assert all(r["tokens"] <= r["budget"] and not r["over"] for r in records)
    assert len([r for r in records if r["system"] == "pmm"]) == 2 * len(dialog.questions)
    # at a budget that holds the whole dialog every system that ranks it all shows it all
    whole = runner.evaluate(dialog, "new", [5000], {"recall_k": "50"}, ("recall", "buffer"))
    assert all(r["evidence"] == 1.0 for r in whole)
    built = runner.build_seconds
    runner.evaluate(dialog, "thread", [60], {"recall_k": "3"}, ("pmm",))  # context-time
    assert runner.build_seconds == built  # same file: nothing rebuilt
    runner.evaluate(dialog, "thread", [60], {"recall_window": "1"}, ("pmm",))  # ingestion
    assert runner.build_seconds > built
    table = ctx.summary(records)
    assert table["thread"]["pmm"][60]["over_budget"] == 0


def test_cross_validation_reports_each_fold(mods: tuple[ModuleType, ...], tmp_path: Path) -> None:
    ctx, cd = mods
    dialogs = cd.generated_dialogs(2)
    runner = ctx.Runner(tmp_path, embedder=WordHashEmbedder(), peers=False, log=False)
    grid = ctx.parse_grid("recall_k=1,8")
    assert grid == [{"recall_k": "1"}, {"recall_k": "8"}]
    cv = ctx.cross_validate(runner, dialogs, ["new"], [400], grid, {})
    assert [f["held_out"] for f in cv["folds"]] == [["gen-1"], ["gen-2"]]
    assert all(f["choice"] in grid for f in cv["folds"])
    assert 0.0 <= cv["held_out"] <= 1.0 and len(cv["points"]) == 2


def test_main_quick_runs_on_a_generated_dataset(
    mods: tuple[ModuleType, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx, _ = mods
    out = tmp_path / "context.json"
    argv = [
        "--quick",
        "--data",
        str(tmp_path / "no-locomo"),
        "--cache-dir",
        str(tmp_path),
        "--json",
        str(out),
        "--records",
    ]
    assert ctx.main(argv, embedder=WordHashEmbedder()) == 0
    printed = capsys.readouterr().out
    assert "GENERATED" in printed and "evidence in context" in printed
    saved = json.loads(out.read_text())
    assert saved["data"].startswith("generated")
    assert set(saved["table"]) == {"thread", "new"}
    assert set(saved["table"]["thread"]["pmm"]) == {"500", "2000"}
    assert all(r["tokens"] <= r["budget"] for r in saved["records"])


@pytest.mark.skipif(not LOCOMO.is_file(), reason="LoCoMo is not in ../shared/data/locomo")
def test_locomo_loads_forty_questions_with_answers(mods: tuple[ModuleType, ...]) -> None:
    _, cd = mods
    dialogs = cd.load_dialogs(LOCOMO, questions=40)
    assert len(dialogs) == 10
    assert all(len(d.questions) == 40 for d in dialogs)
    assert all(q.category in (1, 2, 3, 4) and q.evidence for d in dialogs for q in d.questions)
    assert sum(bool(q.answer) for d in dialogs for q in d.questions) == 400
