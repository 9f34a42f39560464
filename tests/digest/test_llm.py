"""The LLM digest against a real HTTP server speaking the OpenAI API (tests/fake_openai.py),
through langchain_openai.ChatOpenAI, and against a chat model without structured output."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from digest_examples import EXAMPLES
from fake_openai import FakeOpenAI, RecordedRequest

from pmm.digest import Digester
from pmm.digest.heuristic import extract_summary
from pmm.digest.keywords import heuristic_keywords
from pmm.digest.llm import SYSTEM_PROMPT, LLMDigester
from pmm.errors import BackendError

pytest.importorskip("langchain_openai")

MakeChat = Callable[..., Any]


def turns_of(request: RecordedRequest) -> list[dict[str, Any]]:
    """The turns PMM sent in a request (the JSON of its last message)."""
    content = request.messages[-1]["content"]
    turns: list[dict[str, Any]] = json.loads(content)["turns"]
    return turns


def model_like(request: RecordedRequest) -> dict[str, Any]:
    """A well-behaved model: a third-person extractive summary and keywords per turn."""
    digests = []
    for turn in turns_of(request):
        digests.append(
            {
                "turn": turn["turn"],
                "summary": f"The {turn['speaker']} said: {extract_summary(turn['text'], 240)}",
                "keywords": heuristic_keywords(turn["text"], 6),
            }
        )
    return {"digests": digests}


def one(summary: str, keywords: list[str], turn: int = 1) -> dict[str, Any]:
    return {"turn": turn, "summary": summary, "keywords": keywords}


def test_one_call_returns_summary_and_keywords(
    fake_openai: FakeOpenAI, chat_openai: MakeChat
) -> None:
    fake_openai.reply_json(
        {"digests": [one("The user moved to Lisbon in March 2021 with Ana.", ["Lisbon", "Ana"])]}
    )
    digester = LLMDigester(chat_openai())
    assert isinstance(digester, Digester) and digester.mode == "structured"
    [digest] = digester.digest_many([EXAMPLES[0].text], roles=["user"])
    assert digest.summary == "The user moved to Lisbon in March 2021 with Ana."
    assert digest.keywords == ["Lisbon", "Ana"]
    assert digest.method == "llm"

    [request] = fake_openai.requests  # never a second call for the keywords
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "gpt-4o-mini"
    schema = request.body["response_format"]["json_schema"]["schema"]
    item = schema["$defs"]["TurnDigest"]["properties"]
    assert {"turn", "summary", "keywords"} <= set(item)
    system = request.messages[0]["content"]
    assert system == SYSTEM_PROMPT
    assert "third person" in system and "The user prefers" in system
    assert "name, number, date" in system and "preference" in system
    assert turns_of(request) == [{"turn": 1, "speaker": "user", "text": EXAMPLES[0].text}]


def test_summaries_keep_names_and_numbers(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    fake_openai.respond_with(model_like)
    digester = LLMDigester(chat_openai(), batch_size=4)
    texts = [e.text for e in EXAMPLES]
    roles = [e.role for e in EXAMPLES]
    digests = digester.digest_many(texts, roles)
    assert len(fake_openai.requests) == 3  # 10 turns, 4 per call
    sent = [turn for request in fake_openai.requests for turn in turns_of(request)]
    assert [t["text"] for t in sent] == texts
    assert [t["speaker"] for t in sent] == roles
    for example, digest in zip(EXAMPLES, digests, strict=True):
        assert digest.method == "llm"
        assert digest.summary.startswith(f"The {example.role} said: ")
        missing = [fact for fact in example.facts if fact not in digest.summary]
        assert not missing, (digest.summary, missing)
        assert digest.keywords and all(isinstance(k, str) for k in digest.keywords)


def test_turns_may_come_back_in_any_order(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    fake_openai.reply_json(
        {"digests": [one("The assistant: B.", ["b"], 2), one("The user: A.", [], 1)]}
    )
    a, b = LLMDigester(chat_openai()).digest_many(["A", "B"], ["user", "assistant"])
    assert (a.summary, b.summary) == ("The user: A.", "The assistant: B.")


def test_keywords_are_cleaned(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    fake_openai.reply_json(
        {"digests": [one("  The user   likes tea. ", [" tea ", "Tea", "", "x"])]}
    )
    [digest] = LLMDigester(chat_openai(), max_keywords=1).digest_many(["I like tea"])
    assert digest.summary == "The user likes tea."
    assert digest.keywords == ["tea"]


@pytest.mark.parametrize(
    "bad_reply",
    [
        "{not json",
        json.dumps({"digests": []}),
        json.dumps({"digests": [one("", ["a"])]}),
        json.dumps({"digests": [one("   ", ["a"])]}),
        json.dumps({"digests": [{"turn": 1, "summary": "The user.", "keywords": [1, 2]}]}),
        json.dumps({"digests": [one("The user.", ["a"], turn=7)]}),
        json.dumps({"digests": [one('{"summary": "x"}', ["a"])]}),
        json.dumps({"summary": "The user.", "keywords": []}),
    ],
    ids=["not-json", "no-digests", "empty", "blank", "int-keywords", "wrong-turn", "json", "flat"],
)
def test_malformed_reply_is_retried_then_raises(
    bad_reply: str, fake_openai: FakeOpenAI, chat_openai: MakeChat
) -> None:
    fake_openai.reply_text(bad_reply).reply_text(bad_reply)
    fake_openai.reply_json({"digests": [one("never reached", [])]})
    with pytest.raises(BackendError, match="malformed digests 2 times"):
        LLMDigester(chat_openai(), retries=1).digest_many(["I like tea"])
    assert len(fake_openai.requests) == 2
    assert fake_openai.pending() == 1


def test_a_retry_can_succeed(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    fake_openai.reply_text("{not json").reply_json({"digests": [one("The user likes tea.", [])]})
    [digest] = LLMDigester(chat_openai(), retries=1).digest_many(["I like tea"])
    assert digest.summary == "The user likes tea."
    assert len(fake_openai.requests) == 2
    assert fake_openai.requests[0].body == fake_openai.requests[1].body


def test_http_500_raises_without_our_retry(fake_openai: FakeOpenAI, chat_openai: MakeChat) -> None:
    fake_openai.reply_status(500).reply_json({"digests": [one("never reached", [])]})
    with pytest.raises(BackendError, match="chat model call failed"):
        LLMDigester(chat_openai(max_retries=0), retries=3).digest_many(["I like tea"])
    assert len(fake_openai.requests) == 1


def test_default_model_is_chatopenai_from_the_environment(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.api_base)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    fake_openai.reply_json({"digests": [one("The user likes tea.", ["tea"])]})
    digester = LLMDigester(model_name="gpt-4o-mini-test")
    assert type(digester.model).__name__ == "ChatOpenAI"
    [digest] = digester.digest_many(["I like tea"], ["user"])
    assert digest.summary == "The user likes tea."
    [request] = fake_openai.requests
    assert request.body["model"] == "gpt-4o-mini-test"
    assert request.headers["authorization"] == "Bearer test-key"


def test_default_model_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        LLMDigester()


def test_models_without_structured_output_answer_json_text() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    reply = {"digests": [one("The user likes tea.", ["tea"]), one("The assistant agreed.", [], 2)]}
    chat = FakeListChatModel(responses=["```json\n" + json.dumps(reply) + "\n```"])
    digester = LLMDigester(chat)
    assert digester.mode == "json"
    a, b = digester.digest_many(["I like tea", "Tea is great"], ["user", "assistant"])
    assert (a.summary, a.keywords, b.summary) == (
        "The user likes tea.",
        ["tea"],
        "The assistant agreed.",
    )


def test_json_text_mode_rejects_prose() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    chat = FakeListChatModel(responses=["Sure! The user likes tea.", "Still prose."])
    with pytest.raises(BackendError, match="not JSON"):
        LLMDigester(chat, retries=1).digest_many(["I like tea"])


def test_long_turns_are_clipped_in_the_prompt(
    fake_openai: FakeOpenAI, chat_openai: MakeChat
) -> None:
    fake_openai.reply_json({"digests": [one("The user wrote a lot.", [])]})
    LLMDigester(chat_openai(), max_input_chars=100).digest_many(["x" * 5000])
    [turn] = turns_of(fake_openai.requests[0])
    assert turn["text"] == "x" * 100 + " [...]"


def test_bad_arguments(chat_openai: MakeChat) -> None:
    with pytest.raises(ValueError):
        LLMDigester(chat_openai(), batch_size=0)
    with pytest.raises(ValueError):
        LLMDigester(chat_openai(), retries=-1)
