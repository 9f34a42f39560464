"""The scripted OpenAI-compatible server other tests rely on: plain, streamed and Responses
API replies, errors, recording, and the hard stop."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from fake_openai import FakeOpenAI, RecordedRequest

pytest.importorskip("langchain_openai")

MakeChat = Callable[..., Any]


def post(url: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_queue_then_default(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    chat = chat_openai()
    fake_openai.reply_text("first").reply_json({"n": 2})
    assert fake_openai.pending() == 2
    assert chat.invoke("a").content == "first"
    assert json.loads(chat.invoke("b").content) == {"n": 2}
    assert chat.invoke("c").content == "OK"  # the default
    assert [r.text for r in fake_openai.requests] == ["a", "b", "c"]
    assert all(r.path == "/v1/chat/completions" for r in fake_openai.requests)


def test_streaming(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    fake_openai.reply_text("a streamed reply of some length")
    chunks = [c.content for c in chat_openai().stream("hi")]
    assert "".join(str(c) for c in chunks) == "a streamed reply of some length"
    assert len(chunks) > 2
    assert fake_openai.requests[0].body["stream"] is True


def test_responses_api(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    fake_openai.reply_text("from the responses api")
    reply = chat_openai(use_responses_api=True).invoke("hi")
    assert "from the responses api" in str(reply.content)
    assert fake_openai.requests[0].path == "/v1/responses"


def test_tool_call(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    def lookup(city: str) -> str:
        """Look up a city."""
        return city

    fake_openai.reply_tool_call("lookup", {"city": "Lisbon"})
    reply = chat_openai().bind_tools([lookup]).invoke("where?")
    assert reply.tool_calls[0]["name"] == "lookup"
    assert reply.tool_calls[0]["args"] == {"city": "Lisbon"}


def test_errors_and_unknown_routes(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply_status(503, "try later")
    status, body = post(fake_openai.api_base + "/chat/completions", {"messages": []})
    assert (status, body["error"]["message"]) == (503, "try later")
    status, _ = post(fake_openai.api_base + "/audio/speech", {"input": "x"})
    assert status == 404
    status, body = post(fake_openai.api_base + "/embeddings", {"input": ["x", "y"]})
    assert status == 200 and [len(d["embedding"]) for d in body["data"]] == [8, 8]
    fake_openai.reply_status(401, "bad key")
    status, body = post(fake_openai.api_base + "/embeddings", {"input": "x"})
    assert (status, body["error"]["message"]) == (401, "bad key")
    with pytest.raises(ValueError):
        fake_openai.reply_status(200)


def test_responder(fake_openai: FakeOpenAI) -> None:
    def echo(request: RecordedRequest) -> str:
        return request.text.upper()

    fake_openai.respond_with(echo)
    _, body = post(
        fake_openai.api_base + "/chat/completions",
        {"messages": [{"role": "user", "content": "shout"}]},
    )
    assert body["choices"][0]["message"]["content"] == "SHOUT"


def test_stops_by_itself() -> None:
    server = FakeOpenAI(timeout=0.3).start()
    url = server.api_base + "/models"
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
    deadline = time.monotonic() + 5
    while not server.timed_out and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.timed_out
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)
    with pytest.raises(RuntimeError):
        _ = server.base_url
    server.stop()  # a second stop is harmless
