"""The local digest, through the real loading code, on a tiny BART built in the session."""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from pmm.digest import Digester
from pmm.digest.local import (
    DEFAULT_LOCAL_MODEL,
    LocalDigester,
    clear_model_cache,
    hub_reachable,
    load_seq2seq,
    model_resolves_locally,
)
from pmm.errors import BackendError, ConfigurationError, MissingDependencyError

TURNS = [
    "I moved to Lisbon in March 2021 with my partner Ana, and we rent a flat in Alfama.",
    "The assistant suggested the 8:15 train from Santa Apolonia to Porto on Saturday.",
    "Remember that the deadline for the Kafka migration at Feedzai is 14 June.",
    "My daughter Maria turns 7 on 4 September and she loves drawing horses.",
    "I prefer green tea over coffee, and I am allergic to peanuts.",
]


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    clear_model_cache()
    yield
    clear_model_cache()


@pytest.fixture
def generate_calls(tiny_bart: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The input_ids of every generate() call the tiny model gets during the test."""
    model = load_seq2seq(str(tiny_bart), "cpu").model
    original = model.generate
    calls: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["input_ids"])
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "generate", spy)
    return calls


def test_digests_through_the_real_loading_path(tiny_bart: Path) -> None:
    digester = LocalDigester(str(tiny_bart), device="cpu", max_new_tokens=12, min_new_tokens=4)
    assert isinstance(digester, Digester) and digester.name == "local"
    assert digester.device == "cpu"
    digests = digester.digest_many(TURNS[:3], roles=["user", "assistant", None])
    assert [d.method for d in digests] == ["local"] * 3
    assert digests[0].summary.startswith("User: ") and len(digests[0].summary) > len("User: ")
    assert digests[1].summary.startswith("Assistant: ")
    assert digests[2].summary.strip()
    assert all(isinstance(k, str) for d in digests for k in d.keywords)
    assert "Lisbon" in digests[0].keywords


def test_batches(tiny_bart: Path, generate_calls: list[Any]) -> None:
    digester = LocalDigester(str(tiny_bart), device="cpu", batch_size=2, max_new_tokens=8)
    digests = digester.digest_many(TURNS)
    assert len(digests) == len(TURNS)
    assert [ids.shape[0] for ids in generate_calls] == [2, 2, 1]


def test_long_input_is_truncated_to_the_model_limit(
    tiny_bart: Path, generate_calls: list[Any]
) -> None:
    digester = LocalDigester(str(tiny_bart), device="cpu", max_new_tokens=8)
    assert digester.seq2seq.max_input_tokens == 128  # the tiny model's max_position_embeddings
    long_turn = " ".join(f"word{i % 50} Lisbon {i}" for i in range(1700))
    assert len(long_turn.split()) > 5000
    [digest] = digester.digest_many([long_turn], roles=["user"])
    assert digest.summary.startswith("User: ")
    assert generate_calls[0].shape[1] == 128


def test_loaded_once_per_process(
    tiny_bart: Path, fresh_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    loads: list[str] = []
    original = transformers.AutoModelForSeq2SeqLM.from_pretrained

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForSeq2SeqLM, "from_pretrained", counting)
    first = LocalDigester(str(tiny_bart), device="cpu")
    second = LocalDigester(str(tiny_bart), device="auto")  # auto resolves to cpu here
    assert first.seq2seq is second.seq2seq
    assert load_seq2seq(str(tiny_bart), "cpu") is first.seq2seq
    assert loads == [str(tiny_bart)]


def test_missing_default_model_fails_fast_and_clearly() -> None:
    if model_resolves_locally(DEFAULT_LOCAL_MODEL)[0] or hub_reachable():
        pytest.skip("the default model can be loaded on this machine")
    start = time.monotonic()
    with pytest.raises(BackendError, match=r"cannot be reached|HF_HUB_OFFLINE") as failure:
        LocalDigester(DEFAULT_LOCAL_MODEL)
    assert time.monotonic() - start < 10
    assert DEFAULT_LOCAL_MODEL in str(failure.value)
    assert "PMM_LOCAL_SUMMARY_MODEL" in str(failure.value)


def test_offline_hub_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    asked: list[bool] = []

    def reachable() -> bool:
        asked.append(True)
        return True

    monkeypatch.setattr("pmm.digest.local.hub_reachable", reachable)
    with pytest.raises(BackendError, match="HF_HUB_OFFLINE"):
        load_seq2seq("pmm-tests/no-such-model", "cpu")
    assert asked == []


def test_unreachable_hub_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on discard
    hub_reachable.cache_clear()
    try:
        start = time.monotonic()
        assert hub_reachable() is False
        with pytest.raises(BackendError, match="cannot be reached"):
            load_seq2seq("pmm-tests/no-such-model", "cpu")
        assert time.monotonic() - start < 10
    finally:
        hub_reachable.cache_clear()


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="not a folder"):
        LocalDigester(str(tmp_path / "missing-model"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    with pytest.raises(BackendError, match="cannot load"):
        LocalDigester(str(broken))


def test_model_resolution_for_doctor(tiny_bart: Path, tmp_path: Path) -> None:
    assert model_resolves_locally(str(tiny_bart)) == (True, f"local folder {tiny_bart}")
    found, why = model_resolves_locally(str(tmp_path))
    assert not found and "config.json" in why
    found, why = model_resolves_locally("pmm-tests/no-such-model")
    assert not found and "not in the local Hugging Face cache" in why


def test_missing_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "transformers" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingDependencyError, match=r"pmm-memory\[local\]"):
        LocalDigester("anything")


def test_without_spacy_keywords_come_from_the_rules(
    tiny_bart: Path, monkeypatch: pytest.MonkeyPatch, pmm_warnings: Callable[[], list[str]]
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "spacy" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    digester = LocalDigester(str(tiny_bart), device="cpu", max_new_tokens=8)
    [warning] = pmm_warnings()
    assert "spaCy is not installed" in warning
    [digest] = digester.digest_many([TURNS[0]])
    assert digest.keywords[:3] == ["Lisbon", "March 2021", "Ana"]


def test_an_empty_generation_is_an_error(tiny_bart: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    digester = LocalDigester(str(tiny_bart), device="cpu")
    monkeypatch.setattr(digester, "summarize", lambda texts: ["" for _ in texts])
    with pytest.raises(BackendError, match="empty summary"):
        digester.digest_many(TURNS[:2])


def test_cuda_requested_without_a_gpu(tiny_bart: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ConfigurationError, match="PMM_DEVICE=cuda"):
        LocalDigester(str(tiny_bart), device="cuda")


def test_bad_arguments(tiny_bart: Path) -> None:
    with pytest.raises(ValueError):
        LocalDigester(str(tiny_bart), batch_size=0)
    with pytest.raises(ValueError):
        LocalDigester(str(tiny_bart), max_new_tokens=4, min_new_tokens=8)


def test_a_load_failure_is_remembered_for_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    with pytest.raises(BackendError, match="cannot load") as first:
        LocalDigester(str(broken))
    tries: list[str] = []
    monkeypatch.setattr(
        "pmm.digest.local._load_files", lambda name: tries.append(name) or (None, None)
    )
    for _ in range(3):  # a dream, a REPL start, ...: no second attempt, the same message
        with pytest.raises(BackendError, match="remembered") as again:
            LocalDigester(str(broken))
        assert str(first.value) in str(again.value)
    assert tries == []
    clear_model_cache()  # forgets the failure: the next call tries again
    with pytest.raises(Exception):  # noqa: B017 - the patched loader returns no model
        LocalDigester(str(broken))
    assert tries == [str(broken)]
