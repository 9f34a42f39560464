"""A rendered context is counted from its lines' cached counts, and that count is the count
of the whole text (TokenCounter.count_joined, plan.rendered_cost)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pmm.context.parts import Context, Turn, text_pieces
from pmm.context.plan import MESSAGE_OVERHEAD, rendered_cost
from pmm.context.tokens import TokenCounter, estimate_tokens, get_token_counter

# what tokenises differently around a line break: punctuation that takes the break into its
# token (".\n"), runs of breaks and spaces, other white space (NBSP, vertical tab, U+2028),
# contractions, digits, accents and combining marks, CJK and emoji
ALPHABET = [
    *"aZé日本9.?!,:;-'\"()[]…🐶 \n\r\t",
    "\u00a0",
    "\x0b",
    "\u2028",
    "\u0301",
    "'s",
    "'ll",
    "123",
    "\n\n",
    "  \n",
]
fragments = st.lists(st.sampled_from(ALPHABET), max_size=12).map("".join)
lines = st.lists(fragments, min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(fragments, st.sampled_from(["", "\n", "\n\n", " \n"])), max_size=8))
def test_count_joined_is_the_count_of_the_joined_text(parts: list[tuple[str, str]]) -> None:
    # pieces that break the rule (no break at the end, white space at the start) as well
    counter = get_token_counter()
    pieces = [text + end for text, end in parts]
    assert counter.count_joined(pieces) == counter.count("".join(pieces))


def test_a_cut_before_white_space_or_without_a_break_is_counted_whole() -> None:
    counter = get_token_counter()
    assert counter.splits_at_lines
    for pieces in (
        ["Human: hi.\n", "\n AI"],
        ["Human: hi.", "\nAI"],
        ["a.\n", "\n", "b"],
        ["a ", "\nb"],
    ):
        joined = counter.count("".join(pieces))
        assert sum(map(counter.count, pieces)) != joined  # apart they count otherwise
        assert counter.count_joined(pieces) == joined


def test_an_estimate_is_never_added_up() -> None:
    estimate = TokenCounter("estimate:chars/4", estimate_tokens)
    assert not estimate.splits_at_lines
    pieces = ["Hello there.\n", "AI: yes"]
    assert estimate.count_joined(pieces) == estimate_tokens("Hello there.\nAI: yes") == 6
    assert sum(map(estimate_tokens, pieces)) == 7


turns = st.builds(
    Turn,
    role=st.sampled_from(["user", "assistant", "system"]),
    text=fragments,
    event_id=st.integers(1, 50),
    ts=st.sampled_from(["", "2023-05-08T10:00:00", "2023-05-09T09:00:00"]),
    session_id=st.sampled_from([None, "this", "other", "third"]),
)


@settings(max_examples=300, deadline=None)
@given(
    facts=st.lists(fragments, max_size=3),
    summary=st.lists(fragments, max_size=3),
    memories=st.lists(turns, max_size=6),
    history=st.lists(turns, max_size=4),
    human=st.sampled_from(["Human", "", " You", "\n"]),
)
def test_rendered_cost_is_the_count_of_what_the_model_receives(
    facts: list[str], summary: list[str], memories: list[Turn], history: list[Turn], human: str
) -> None:
    counter = get_token_counter()
    ctx = Context("this", 1000, 0, counter.name, facts, memories, history, human, "AI")
    assert "".join(text_pieces(ctx.blocks())) == ctx.text()
    assert rendered_cost(ctx, counter) == counter.count(ctx.text())
    as_messages = Context("this", 1000, 0, counter.name, facts, memories, history, as_messages=True)
    sent = sum(counter.count(str(m.content)) + MESSAGE_OVERHEAD for m in as_messages.messages())
    assert rendered_cost(as_messages, counter) == sent
