"""Context assembly: the newest turns first, then facts and memories, never over budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, get_buffer_string

from pmm.context.assembly import MESSAGE_OVERHEAD, Turn, assemble
from pmm.context.tokens import get_token_counter

COUNTER = get_token_counter()


def turns(*texts: str) -> list[Turn]:
    """Newest first, alternating user/assistant from the oldest."""
    n = len(texts)
    out = [Turn("user" if i % 2 == 0 else "assistant", t, i + 1) for i, t in enumerate(texts)]
    assert len(out) == n
    return list(reversed(out))


def test_without_facts_the_text_is_langchains_buffer_format() -> None:
    history = turns("Hi there", "Hello! How can I help?", "Tell me a joke", "Why did ...")
    ctx = assemble(session_id="s", history=history, budget=1000, counter=COUNTER)
    expected = get_buffer_string(
        [
            HumanMessage("Hi there"),
            AIMessage("Hello! How can I help?"),
            HumanMessage("Tell me a joke"),
            AIMessage("Why did ..."),
        ]
    )
    assert ctx.text() == expected
    assert [t.event_id for t in ctx.history] == [1, 2, 3, 4]


def test_oldest_turns_are_dropped_first() -> None:
    history = turns(*[f"turn number {i} " + "word " * 20 for i in range(10)])
    ctx = assemble(session_id="s", history=history, budget=120, counter=COUNTER)
    ids = [t.event_id for t in ctx.history]
    assert ids == list(range(11 - len(ids), 11))  # a suffix of the conversation
    assert 1 <= len(ids) < 10
    assert COUNTER.count(ctx.text()) <= 120


def test_a_huge_newest_turn_is_cut_to_fit() -> None:
    history = turns("short", "x " * 5000)
    ctx = assemble(session_id="s", history=history, budget=50, counter=COUNTER)
    assert [t.event_id for t in ctx.history] == [2]
    assert ctx.history[0].text.endswith("…")
    assert COUNTER.count(ctx.text()) <= 50


def test_facts_and_memories_render_in_sections() -> None:
    history = turns("What's the weather?", "Sunny.")
    memory = Turn("user", "I moved to Lisbon", 99, "2026-01-02T10:00:00Z", "alice")
    ctx = assemble(
        session_id="alice",
        history=history,
        budget=400,
        counter=COUNTER,
        facts=["Name: Ana"],
        memories=[memory],
    )
    assert ctx.text() == (
        "Key information:\n- Name: Ana\n\n"
        "Relevant memories:\n[2026-01-02]\nHuman: I moved to Lisbon\n\n"
        "Recent conversation:\nHuman: What's the weather?\nAI: Sunny."
    )
    messages = ctx.messages()
    assert isinstance(messages[0], SystemMessage)
    assert "Name: Ana" in messages[0].text
    assert [type(m) for m in messages[1:]] == [HumanMessage, AIMessage]


def test_custom_prefixes() -> None:
    ctx = assemble(
        session_id="s",
        history=turns("hi", "yo"),
        budget=100,
        counter=COUNTER,
        human_prefix="User",
        ai_prefix="Bot",
    )
    assert ctx.text() == "User: hi\nBot: yo"


def test_zero_budget_gives_nothing() -> None:
    ctx = assemble(
        session_id="s", history=turns("hi", "yo"), budget=0, counter=COUNTER, facts=["Name: Ana"]
    )
    assert ctx.text() == "" and ctx.messages() == []


text_strategy = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=300,
)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(text_strategy, min_size=1, max_size=12),
    facts=st.lists(text_strategy, max_size=4),
    memories=st.lists(text_strategy, max_size=4),
    budget=st.integers(min_value=0, max_value=400),
)
def test_never_over_budget(
    texts: list[str], facts: list[str], memories: list[str], budget: int
) -> None:
    mems = [Turn("user", m, 1000 + i, "2026-01-01T00:00:00Z", "s") for i, m in enumerate(memories)]
    for as_messages in (False, True):
        ctx = assemble(
            session_id="s",
            history=turns(*texts),
            budget=budget,
            counter=COUNTER,
            facts=facts,
            memories=mems,
            as_messages=as_messages,
        )
        if as_messages:
            cost = sum(COUNTER.count(m.text) + MESSAGE_OVERHEAD for m in ctx.messages())
        else:
            cost = COUNTER.count(ctx.text())
        assert cost <= budget
        assert ctx.tokens <= budget


def test_older_turns_never_show_without_the_newest() -> None:
    history = turns("ok", "x " * 500)  # the newest turn cannot fit, even cut
    ctx = assemble(session_id="s", history=history, budget=4, counter=COUNTER)
    assert ctx.history == []


def test_the_window_starts_at_a_user_message_when_one_fits() -> None:
    # Four turns of ~20 words: a budget that fits three would open with an AI message.
    history = turns(*[f"turn number {i} " + "word " * 20 for i in range(4)])
    shown = zip("AHA", history[:3], strict=True)
    three = sum(COUNTER.count(f"{p}: {t.text}") + 1 for p, t in shown)
    for as_messages in (False, True):
        ctx = assemble(
            session_id="s",
            history=history,
            budget=three + 2,
            counter=COUNTER,
            as_messages=as_messages,
        )
        assert [t.event_id for t in ctx.history] == [3, 4]  # not [2, 3, 4] (2 is the AI's)
        assert ctx.history[0].role == "user"
        first = ctx.messages()[0]
        assert isinstance(first, HumanMessage)
        assert ctx.tokens == (
            sum(COUNTER.count(t.text) + MESSAGE_OVERHEAD for t in ctx.history)
            if as_messages
            else COUNTER.count(ctx.text())
        )  # what the rendering costs, counted as the model receives it


def test_an_assistant_only_window_is_kept_when_no_user_turn_fits() -> None:
    history = turns("x " * 500, "short answer")  # the user turn is far over budget
    ctx = assemble(session_id="s", history=history, budget=30, counter=COUNTER)
    assert [t.role for t in ctx.history] == ["assistant"]
