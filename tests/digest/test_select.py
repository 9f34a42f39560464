"""Choosing a backend by PMM_SUMMARIZER, the verbatim rule, every fallback path (with exactly
one warning), and the doctor report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from digest_examples import EXAMPLES
from fake_openai import FakeOpenAI
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from pmm.digest import (
    BackendFactory,
    BackendStatus,
    Digest,
    FallbackDigester,
    HeuristicDigester,
    backend_status,
    build_digester,
    chain_names,
)
from pmm.errors import BackendError
from pmm.settings import Settings

LONG = [e.text for e in EXAMPLES]
ROLES = [e.role for e in EXAMPLES]
MakeChat = Callable[..., Any]
Warnings = Callable[[], list[str]]


def settings(**overrides: Any) -> Settings:
    return Settings.load(env={}, **overrides)


class BrokenChat(BaseChatModel):
    """A chat model whose every call fails (a network that is down, a revoked key)."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "broken"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        raise RuntimeError("connection reset by peer")


class Counting:
    """A backend that records its batches and answers with a fixed summary."""

    def __init__(self, name: str = "counting") -> None:
        self.name = name
        self.batches: list[list[str]] = []

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        self.batches.append(list(texts))
        return [Digest("summary", ["k"], self.name) for _ in texts]


@pytest.fixture
def no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


def test_chains(no_openai_env: None, monkeypatch: pytest.MonkeyPatch, tiny_bart: Path) -> None:
    model = str(tiny_bart)  # a local model that loads: auto tries it
    assert chain_names(settings(summarizer="heuristic")) == ["heuristic"]
    assert chain_names(settings(summarizer="llm")) == ["llm", "heuristic"]
    assert chain_names(settings(summarizer="local")) == ["local", "heuristic"]
    assert chain_names(settings(summarizer="auto", local_summary_model=model)) == [
        "local",
        "heuristic",
    ]
    assert chain_names(
        settings(summarizer="auto", local_summary_model=model), llm=BrokenChat()
    ) == ["llm", "local", "heuristic"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert chain_names(settings(local_summary_model=model)) == ["llm", "local", "heuristic"]
    digester = build_digester(Settings.load(env={"PMM_SUMMARIZER": "local"}))
    assert digester.chain == ["local", "heuristic"]


def test_short_turns_are_verbatim(pmm_warnings: Warnings) -> None:
    digester = build_digester(settings(summarizer="heuristic", summary_min_chars=240))
    short = "I moved to Lisbon in 2021 with Ana."
    a, b, c = digester.digest_many([short, LONG[0], "  Sure!  "], ["user", "user", "assistant"])
    assert a == Digest(f"User: {short}", ["Lisbon", "2021", "Ana", "moved"], "verbatim")
    assert b.method == "heuristic" and len(b.summary) < len(LONG[0])
    assert c.summary == "Assistant: Sure!" and c.method == "verbatim"
    assert pmm_warnings() == []


def test_verbatim_turns_never_reach_a_model() -> None:
    model = Counting("model")
    digester = FallbackDigester([model], min_chars=50)
    digests = digester.digest_many(["short one", "x" * 60, "short two", "y" * 70])
    assert model.batches == [["x" * 60, "y" * 70]]
    assert [d.method for d in digests] == ["verbatim", "model", "verbatim", "model"]


def test_batches_of_batch_size() -> None:
    model = Counting()
    FallbackDigester([model], min_chars=0, batch_size=4).digest_many([f"t{i}" for i in range(10)])
    assert [len(b) for b in model.batches] == [4, 4, 2]


def test_auto_without_llm_or_local_model_is_heuristic(
    no_openai_env: None, tmp_path: Path, pmm_warnings: Warnings
) -> None:
    missing = str(tmp_path / "no-model")
    # doctor's probe already knows the local model cannot load: auto does not try it
    digester = build_digester(settings(summarizer="auto", local_summary_model=missing))
    assert digester.chain == ["heuristic"]
    digests = digester.digest_many(LONG, ROLES)
    assert {d.method for d in digests} == {"heuristic"}
    assert pmm_warnings() == []
    # asked for by name, it is tried, fails once with one warning, and is not retried
    digester = build_digester(settings(summarizer="local", local_summary_model=missing))
    digester.digest_many(LONG, ROLES)
    [warning] = pmm_warnings()
    assert "'local' failed to load" in warning and "no-model" in warning
    assert "'heuristic'" in warning
    assert digester.failed.keys() == {"local"} and digester.active == "heuristic"
    digester.digest_many(LONG[:2])
    assert len(pmm_warnings()) == 1  # not retried, not warned again


def test_the_local_probe_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pmm.digest import local as local_module
    from pmm.digest.select import local_probe

    calls: list[str] = []
    real = local_module.model_resolves_locally

    def counting(name: str) -> tuple[bool, str]:
        calls.append(name)
        return real(name)

    monkeypatch.setattr(local_module, "model_resolves_locally", counting)
    missing = str(tmp_path / "no-model")
    for _ in range(3):
        chain_names(settings(summarizer="auto", local_summary_model=missing))
        backend_status(settings(local_summary_model=missing))
    assert calls == [missing]
    assert local_probe(missing)[0] is False


def test_local_model_missing_falls_back(no_openai_env: None, pmm_warnings: Warnings) -> None:
    pytest.importorskip("transformers")
    digester = build_digester(
        settings(summarizer="local", local_summary_model="pmm-tests/no-such-model")
    )
    [digest] = digester.digest_many([LONG[1]], ["user"])
    assert digest.method == "heuristic"
    [warning] = pmm_warnings()
    assert "'local' failed to load" in warning and "pmm-tests/no-such-model" in warning


def test_local_tiny_model(tiny_bart: Path, pmm_warnings: Warnings) -> None:
    digester = build_digester(settings(summarizer="local", local_summary_model=str(tiny_bart)))
    digests = digester.digest_many([LONG[0], "short", LONG[2]], ["user", "user", "assistant"])
    assert [d.method for d in digests] == ["local", "verbatim", "local"]
    assert digests[2].summary.startswith("Assistant: ")
    assert pmm_warnings() == []


def test_llm_fails_to_load(no_openai_env: None, pmm_warnings: Warnings) -> None:
    digester = build_digester(settings(summarizer="llm"))
    digests = digester.digest_many(LONG[:3], ROLES[:3])
    assert [d.method for d in digests] == ["heuristic"] * 3
    [warning] = pmm_warnings()
    assert "'llm' failed to load" in warning and "OPENAI_API_KEY" in warning


def test_llm_fails_at_run_time(pmm_warnings: Warnings) -> None:
    chat = BrokenChat()
    digester = build_digester(settings(summarizer="llm"), llm=chat)
    [digest] = digester.digest_many([LONG[0]], ["user"])
    assert digest.method == "heuristic"
    [warning] = pmm_warnings()
    assert "'llm' failed" in warning and "connection reset" in warning
    digester.digest_many([LONG[1]], ["user"])
    assert chat.calls >= 2  # a run-time failure is retried on the next batch ...
    assert len(pmm_warnings()) == 1  # ... without a new warning for the same failure


def test_llm_malformed_json_falls_back(
    fake_openai: FakeOpenAI, chat_openai: MakeChat, pmm_warnings: Warnings
) -> None:
    fake_openai.reply_text("{not json").reply_text('{"digests": [')
    digester = build_digester(settings(summarizer="llm"), llm=chat_openai())
    [digest] = digester.digest_many([LONG[0]], ["user"])
    assert digest.method == "heuristic"
    assert "Lisbon" in digest.summary and not digest.summary.startswith("{")
    assert len(fake_openai.requests) == 2  # asked, asked again, then fell back
    [warning] = pmm_warnings()
    assert "'llm' failed" in warning and "malformed" in warning


def test_llm_http_500_falls_back(
    fake_openai: FakeOpenAI, chat_openai: MakeChat, pmm_warnings: Warnings
) -> None:
    fake_openai.reply_status(500, "the model is overloaded")
    digester = build_digester(settings(summarizer="auto"), llm=chat_openai(max_retries=0))
    assert digester.chain[0] == "llm" and digester.chain[-1] == "heuristic"
    digester = build_digester(settings(summarizer="llm"), llm=chat_openai(max_retries=0))
    [digest] = digester.digest_many([LONG[0]], ["user"])
    assert digest.method == "heuristic"
    assert len(fake_openai.requests) == 1
    [warning] = pmm_warnings()
    assert "'llm' failed" in warning and "overloaded" in warning


def test_llm_through_fake_server(
    fake_openai: FakeOpenAI, chat_openai: MakeChat, pmm_warnings: Warnings
) -> None:
    reply = {
        "digests": [{"turn": 1, "summary": "The user moved to Lisbon.", "keywords": ["Lisbon"]}]
    }
    fake_openai.reply_json(reply)
    digester = build_digester(settings(summarizer="auto"), llm=chat_openai())
    a, b = digester.digest_many([LONG[0], "hi"], ["user", "user"])
    assert (a.method, a.summary, b.method) == ("llm", "The user moved to Lisbon.", "verbatim")
    assert len(fake_openai.requests) == 1 and pmm_warnings() == []


def test_every_backend_failing_raises() -> None:
    def broken() -> Any:
        raise RuntimeError("no")

    digester = FallbackDigester([BackendFactory("a", broken)], min_chars=0)
    with pytest.raises(BackendError, match="every digest backend failed: a: RuntimeError: no"):
        digester.digest_many(["text"])
    assert digester.active is None
    assert digester.digest_many([]) == []


def test_a_wrong_count_falls_through(pmm_warnings: Warnings) -> None:
    class Short(Counting):
        def digest_many(
            self, texts: Sequence[str], roles: Sequence[str | None] | None = None
        ) -> list[Digest]:
            return super().digest_many(texts, roles)[:-1]

    digester = FallbackDigester([Short("short"), HeuristicDigester()], min_chars=0)
    digests = digester.digest_many(LONG[:3])
    assert [d.method for d in digests] == ["heuristic"] * 3
    [warning] = pmm_warnings()
    assert "'short' failed" in warning and "2 digests for 3 turns" in warning


def test_a_factory_loads_once() -> None:
    loads: list[int] = []
    model = Counting()

    def load() -> Any:
        loads.append(1)
        return model

    digester = FallbackDigester([BackendFactory("counting", load)], min_chars=0, batch_size=1)
    digester.digest_many(["a", "b", "c"])
    assert loads == [1] and len(model.batches) == 3


def test_backend_status(
    no_openai_env: None, tiny_bart: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = backend_status(settings(local_summary_model=str(tiny_bart)))
    assert [s.name for s in report] == ["llm", "local", "heuristic"]
    llm, local, heuristic = report
    assert llm == BackendStatus("llm", False, "OPENAI_API_KEY is not set")
    assert local.available and f"local folder {tiny_bart}" in local.detail
    assert "keywords:" in local.detail
    assert heuristic.available

    missing = backend_status(settings(local_summary_model="pmm-tests/no-such-model"))[1]
    assert not missing.available and "not in the local Hugging Face cache" in missing.detail

    assert backend_status(settings(), llm=BrokenChat())[0].available
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    llm = backend_status(settings(llm_model="gpt-x"))[0]
    assert llm.available and "gpt-x" in llm.detail and "127.0.0.1:1" in llm.detail


def test_import_and_status_load_no_heavy_library(tmp_path: Path) -> None:
    script = (
        "import sys, json\n"
        "import pmm.digest\n"
        "heavy = ('torch', 'transformers', 'spacy', 'langchain_openai')\n"
        "after_import = [m for m in heavy if m in sys.modules]\n"
        "from pmm.digest import backend_status\n"
        "from pmm.settings import Settings\n"
        "report = backend_status(Settings.load(env={}))\n"
        "print(json.dumps([after_import, [m for m in heavy if m in sys.modules], len(report)]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    after_import, after_status, count = json.loads(done.stdout.strip().splitlines()[-1])
    assert after_import == [] and after_status == [] and count == 3
