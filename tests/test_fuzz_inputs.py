"""Hypothesis fuzzing of every public way text gets in: a clear PMMError or a stored turn,
never an internal traceback, and nothing stored changes except by design."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from pmm import Mind
from pmm.errors import PMMError
from pmm.integrations.chat_history import PMMChatMessageHistory
from pmm.integrations.memory import PersistentMindMemory

FUZZ = settings(
    max_examples=75,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Every code point, lone surrogates and NUL/control characters included.
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
any_text = st.text(any_char, max_size=40)
tricky_text = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",
        "x\udfffy",
        "\x1b[31mred\x1b[0m",
        '"unbalanced',
        "NEAR(a b)",
        "a AND OR NOT b",
        "col : value",
        "*",
        "-",
        "^start",
        "'; DROP TABLE events; --",
        "1 OR 1=1",
        "{summary content} : x",
        "\U0001f600\U000e0001\U0010fffd",
        "x" * 2_000_000,  # over max_content_bytes
    ]
)
texts = st.one_of(any_text, tricky_text)


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": [value]}
    return value


non_strings = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.binary(max_size=20),
    st.lists(texts, max_size=3),
    st.dictionaries(any_text, texts, max_size=3),
    st.builds(Opaque),
    st.builds(HumanMessage, content=any_text),
    st.builds(AIMessage, content=any_text),
)
contents = st.one_of(texts, non_strings)
metas = st.one_of(
    st.none(),
    st.dictionaries(any_text, st.one_of(texts, st.floats(allow_nan=True)), max_size=3),
    st.just({"nan": math.nan}),
    st.just({"inf": math.inf}),
    st.just({"obj": Opaque()}),
    st.just({1: "int key"}),
    st.just({"set": {1, 2}}),
    st.just(_nested(50)),
    st.just([1, 2]),
    st.just("not a dict"),
)


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory):
    path = Path(tmp_path_factory.mktemp("fuzz")) / "pmm.db"
    with Mind(str(path)) as mind:
        yield mind
        report = mind.verify()
        assert report.ok, report.reason


def _attempt(mind: Mind, call, expected_new_rows: int) -> None:
    """``call()`` stores ``expected_new_rows`` rows or raises PMMError and stores none."""
    before = mind.store.count()
    try:
        call()
    except PMMError as exc:
        assert str(exc), "a PMMError must say what went wrong"
        assert mind.store.count() == before, "a refused input changed the log"
        return
    assert mind.store.count() == before + expected_new_rows


def _lenient_rows(text: Any, turn: bool) -> int:
    """Rows a lenient append (the LangChain integrations) stores for one message: none for
    an empty turn, else one per started MiB (an oversized text is stored as linked parts)."""
    if turn and not text.strip():
        return 0
    return max(1, -(-len(text.encode("utf-8", "surrogatepass")) // (1 << 20)))


@FUZZ
@given(content=contents, role=st.one_of(st.sampled_from(["user", "assistant"]), contents))
def test_remember_any_content_and_role(mind: Mind, content: Any, role: Any):
    _attempt(mind, lambda: mind.remember(content, role=role, session_id="fuzz"), 1)


@FUZZ
@given(content=texts, meta=metas)
def test_remember_any_meta(mind: Mind, content: str, meta: Any):
    _attempt(mind, lambda: mind.remember(content, role="user", session_id="m", meta=meta), 1)


@FUZZ
@given(
    inputs=st.one_of(
        st.dictionaries(st.sampled_from(["input", "question", "history"]), contents, max_size=3),
        st.just({}),
    ),
    outputs=st.one_of(
        st.dictionaries(st.sampled_from(["output", "answer", "text"]), contents, max_size=3),
        st.just({}),
    ),
)
def test_save_context_any_inputs_and_outputs(mind: Mind, inputs: Any, outputs: Any):
    memory = PersistentMindMemory(mind=mind, session_id="memory")
    user = [v for k, v in inputs.items() if k != "history"]
    reply = list(outputs.values()) if len(outputs) == 1 else [outputs.get("output")]
    said = [t.text if isinstance(t, BaseMessage) else t for t in user[:1] + reply]
    rows = sum(_lenient_rows(t, True) for t in said if isinstance(t, str))
    _attempt(mind, lambda: memory.save_context(inputs, outputs), rows)
    loaded = memory.load_memory_variables({"input": "anything"})
    assert isinstance(loaded["history"], str)


messages = st.one_of(
    st.builds(HumanMessage, content=any_text),
    st.builds(AIMessage, content=any_text),
    st.builds(SystemMessage, content=tricky_text),
    st.builds(ToolMessage, content=any_text, tool_call_id=any_text),
    st.builds(
        HumanMessage,
        content=st.lists(
            st.one_of(
                st.builds(dict, type=st.just("text"), text=any_text),
                st.builds(dict, type=st.just("image_url"), image_url=st.just({"url": "x"})),
            ),
            max_size=3,
        ),
    ),
)


@FUZZ
@given(message=st.one_of(messages, non_strings))
def test_add_message_any_message(mind: Mind, message: Any):
    history = PMMChatMessageHistory(session_id="history", mind=mind)
    rows = (
        _lenient_rows(message.text, isinstance(message, (HumanMessage, AIMessage)))
        if isinstance(message, BaseMessage)
        else 0
    )
    _attempt(mind, lambda: history.add_message(message), rows)
    assert all(isinstance(m.text, str) for m in history.messages)


@FUZZ
@given(query=st.one_of(texts, non_strings), session=st.one_of(texts, st.none(), non_strings))
def test_recall_and_sessions_with_syntax_and_sql(mind: Mind, query: Any, session: Any):
    _attempt(mind, lambda: mind.remember("plain words to find", role="user", session_id=session), 1)
    try:
        hits = mind.recall(query, 5, session_id=session, mode="keyword")
    except PMMError:
        return
    assert all(h.event.id > 0 for h in hits)
    try:
        context = mind.context(session_id=session, query=query)
    except PMMError:
        return
    assert isinstance(context.text(), str)


def test_remember_meta_nested_deeper_than_json_can_go(mind: Mind):
    deep = _nested(5000)
    _attempt(mind, lambda: mind.remember("deep", role="user", session_id="m", meta=deep), 1)
