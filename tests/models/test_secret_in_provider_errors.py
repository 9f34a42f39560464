"""A key that a provider echoes in its 401 reaches no log line, no stderr and no exception, on
every path that calls a provider: the digest (the llm summarizer), the contradiction checks
and session summaries of a dream, and the embeddings (of stored turns and of a recall
query). The key is handed in code (not from the environment) and is not shaped like
``sk-...``, so only PMM's redaction of the models it was given can hide it."""

from __future__ import annotations

import logging
import secrets
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from pmm import Mind
from tests.fake_openai import FakeOpenAI, RecordedRequest, Reply

pytest.importorskip("langchain_openai")


class OpenAIEmbedder:
    """An embedding backend that calls an OpenAI-compatible server (LangChain's
    ``OpenAIEmbeddings``), as a deployment would plug one into ``Mind(embedder=...)``."""

    model_name = "fake/text-embedding"
    dim = 8

    def __init__(self, base_url: str, api_key: str) -> None:
        from langchain_openai import OpenAIEmbeddings

        self.client = OpenAIEmbeddings(
            model="text-embedding-3-small",
            base_url=base_url,
            api_key=api_key,  # type: ignore[arg-type]
            max_retries=0,
            check_embedding_ctx_length=False,
        )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray(self.client.embed_documents(list(texts)), dtype=np.float32)


def _refuse(key: str) -> Any:
    def answer(request: RecordedRequest) -> Reply:
        return Reply(
            status=401,
            error_message=f"Incorrect API key provided: {key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
        )

    return answer


def _captured(caplog: pytest.LogCaptureFixture) -> str:
    parts = [caplog.text]  # formatted: messages and tracebacks (exc_info) alike
    for record in caplog.records:
        parts.append(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            parts.append("".join(traceback.format_exception(record.exc_info[1])))
    return "\n".join(parts)


def _turns(mind: Mind) -> None:
    # Two statements of one user that share keywords: a contradiction candidate pair.
    mind.remember_turn(
        "I live in Lisbon and I work as a nurse at the Santa Maria hospital there.",
        "Noted: you live in Lisbon and work as a nurse at Santa Maria hospital.",
        session_id="s1",
    )
    mind.remember_turn(
        "I live in Porto now and I work as a nurse at the Sao Joao hospital there.",
        "Noted: you live in Porto now and work as a nurse at Sao Joao hospital.",
        session_id="s1",
    )


def test_an_echoed_api_key_reaches_no_log_stderr_or_exception(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    from langchain_openai import ChatOpenAI

    key = f"pmm-test-key-{secrets.token_hex(12)}"  # not in the environment, not sk-shaped
    errors: list[str] = []
    with FakeOpenAI(timeout=120) as server:
        server.respond_with(_refuse(key))
        base = server.api_base

        def llm() -> Any:
            return ChatOpenAI(model="gpt-4o-mini", base_url=base, api_key=key, max_retries=0)  # type: ignore[arg-type]

        common: dict[str, Any] = {
            "enable_summary": True,
            "summarizer": "llm",
            "summary_mode": "inline",
            "summary_min_chars": 10,
            "detect_contradictions": True,
            "dream_on_close": False,
        }
        caplog.set_level(logging.DEBUG)  # the root logger: every logger's records
        # 1. digest + embeddings of the stored turns and of a recall query
        with Mind(
            str(tmp_path / "a.db"),
            llm=llm(),
            embedder=OpenAIEmbedder(base, key),
            enable_embeddings=True,
            **common,
        ) as mind:
            _turns(mind)
            for call in (
                mind.dream,
                lambda: mind.recall("where do I live?", mode="semantic"),
                lambda: mind.context("where do I live?", session_id="s1"),
            ):
                try:
                    call()
                except Exception as exc:
                    errors.append("".join(traceback.format_exception(exc)))
        # 2. without embeddings: the contradiction check asks the chat model
        with Mind(str(tmp_path / "b.db"), llm=llm(), **common) as mind:
            _turns(mind)
            try:
                mind.dream()
            except Exception as exc:
                errors.append("".join(traceback.format_exception(exc)))
        paths = [r.path.split("?")[0] for r in server.requests]
        judged = [r for r in server.requests if "outdated statements" in r.text]
    assert "/v1/chat/completions" in paths and "/v1/embeddings" in paths
    assert judged, "the contradiction check never reached the server"
    assert all(r.headers.get("authorization") == f"Bearer {key}" for r in server.requests)
    logged = _captured(caplog)
    assert key not in logged
    assert "AuthenticationError" in logged  # the failures were logged...
    assert "[redacted]" in logged  # ...with the key taken out
    assert key not in "\n".join(errors)
    out, err = capfd.readouterr()
    assert key not in out + err


def test_error_text_finds_the_key_of_a_langchain_model() -> None:
    from langchain_openai import ChatOpenAI

    from pmm.models.redact import error_text, secret_values

    model = ChatOpenAI(model="gpt-4o-mini", api_key="held-in-code-1234", base_url="http://x/v1")  # type: ignore[arg-type]
    assert "held-in-code-1234" in secret_values(model)
    text = error_text(RuntimeError("bad key held-in-code-1234"), model)
    assert text == "RuntimeError: bad key [redacted]"
