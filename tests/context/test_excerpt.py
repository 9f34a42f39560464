"""A long memory is shown by the whole sentences that bear on the question, marked as an
excerpt, within its cap; the best memories are shown whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pmm.context.assembly import Policy, Turn, assemble
from pmm.context.excerpt import ELLIPSIS, excerpt, query_terms
from pmm.context.tokens import get_token_counter

COUNTER = get_token_counter()
REPLY = (
    "Hello there, good to hear from you again. We talked about many things last time. "
    "We went camping at Lake Tahoe last weekend and the kids loved the canoe. Then we drove "
    "home through the hills. It rained a lot on Sunday and the roads were wet and slow."
)


def test_a_text_within_the_cap_comes_back_whole() -> None:
    assert excerpt("We went camping.", query_terms("camping?"), 40, COUNTER) == (
        "We went camping.",
        False,
    )


def test_the_sentence_that_holds_the_match_is_shown_whole_and_marked() -> None:
    shown, cut = excerpt(REPLY, query_terms("Where did they go camping?"), 30, COUNTER)
    assert (
        cut and "We went camping at Lake Tahoe last weekend and the kids loved the canoe." in shown
    )
    assert shown.startswith(ELLIPSIS) and COUNTER.count(shown) <= 30
    assert "Hello there" not in shown  # not cut at its start


def test_neighbours_fill_the_cap_next_one_first() -> None:
    shown, _ = excerpt(REPLY, query_terms("camping"), 45, COUNTER)
    assert "Then we drove home through the hills." in shown and COUNTER.count(shown) <= 45


def test_a_sentence_over_the_cap_keeps_its_first_words() -> None:
    shown, cut = excerpt("word " * 200, query_terms("word"), 12, COUNTER)
    assert cut and shown.endswith(ELLIPSIS) and COUNTER.count(shown) <= 12


@settings(max_examples=100, deadline=None)
@given(text=st.text(min_size=1, max_size=600), cap=st.integers(min_value=0, max_value=80))
def test_never_over_the_cap(text: str, cap: int) -> None:
    shown, _ = excerpt(text, query_terms(text[:30]), cap, COUNTER)
    assert COUNTER.count(shown) <= cap


def test_the_context_shows_a_long_memory_by_its_excerpt_and_the_best_whole() -> None:
    other = "We talked about the weather and the news. " * 8
    memories = [
        Turn("assistant", other + "Nothing about trips here at all.", 1, "2026-01-01", "t"),
        Turn("assistant", REPLY, 2, "2026-01-02", "t"),
    ]
    policy = Policy(memory_tokens=30, whole_every=0)
    ctx = assemble(
        session_id="t",
        history=[Turn("user", "Where did you go camping?", 9)],
        budget=300,
        counter=COUNTER,
        memories=memories,
        query="Where did you go camping?",
        policy=policy,
    )
    reply = next(m for m in ctx.memories if m.event_id == 2)
    assert reply.excerpt and "Lake Tahoe" in reply.text and "Hello there" not in reply.text
    whole = assemble(
        session_id="t",
        history=[Turn("user", "Where did you go camping?", 9)],
        budget=300,
        counter=COUNTER,
        memories=memories[1:],
        query="Where did you go camping?",
        policy=Policy(memory_tokens=30, whole_every=250),  # one whole memory per 250 tokens
    )
    assert whole.memories[0].text == REPLY and not whole.memories[0].excerpt
