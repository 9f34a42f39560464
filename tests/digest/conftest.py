"""Fixtures of the digest tests: a scripted OpenAI-compatible server, a ChatOpenAI pointed at
it, and a tiny BART saved to a folder (built once per session)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent, HERE):  # tests/ (fake_openai) and tests/digest (tiny_bart)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from fake_openai import FakeOpenAI  # noqa: E402
from tiny_bart import build_tiny_bart  # noqa: E402


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running FakeOpenAI on 127.0.0.1 (stopped after the test, or after 60 s anyway)."""
    with FakeOpenAI(timeout=60) as server:
        yield server
    assert not server.errors, server.errors


@pytest.fixture
def chat_openai(fake_openai: FakeOpenAI) -> Callable[..., Any]:
    """``chat_openai(**overrides)``: a ChatOpenAI talking to ``fake_openai``, no SDK retries."""
    from langchain_openai import ChatOpenAI

    def make(**overrides: Any) -> Any:
        options: dict[str, Any] = {
            "base_url": fake_openai.api_base,
            "api_key": "test",
            "model": "gpt-4o-mini",
            "max_retries": 0,
            "timeout": 10,
        }
        options.update(overrides)
        return ChatOpenAI(**options)

    return make


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a tiny random BART and its BPE tokenizer (see tiny_bart.py)."""
    return build_tiny_bart(tmp_path_factory.mktemp("tiny-bart"))


@pytest.fixture
def pmm_warnings(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    """``pmm_warnings()``: the messages of the WARNING (and worse) records PMM logged."""
    caplog.set_level(logging.DEBUG, logger="pmm")

    def collect() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("pmm") and r.levelno >= logging.WARNING
        ]

    return collect


@pytest.fixture(autouse=True)
def forget_local_probes() -> Iterator[None]:
    """Each test starts without remembered load failures or cached local probes (the
    loaded models themselves stay cached: loading them is slow)."""
    from pmm.digest import local, select

    local._LOAD_FAILURES.clear()
    select.local_probe.cache_clear()
    yield
    local._LOAD_FAILURES.clear()
    select.local_probe.cache_clear()
