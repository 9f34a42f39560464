"""A context renders its lines (and counts their cost) once and reuses them, and another
context's, which the assembly hands on from step to step, only while what it holds is what
they were rendered from."""

from __future__ import annotations

from pmm.context.parts import MESSAGE_OVERHEAD, Context, Turn
from pmm.context.tokens import TokenCounter, estimate_tokens, get_token_counter


def fresh(ctx: Context) -> str:
    """The text of a context of the same parts that never rendered before."""
    return Context(
        ctx.session_id, ctx.budget_tokens, ctx.tokens, ctx.counter, list(ctx.facts),
        list(ctx.memories), list(ctx.history), ctx.human_prefix, ctx.ai_prefix,
        summary=list(ctx.summary),
    ).text()  # fmt: skip


def make(**changes: object) -> Context:
    parts: dict[str, object] = {
        "session_id": "t1",
        "budget_tokens": 500,
        "tokens": 0,
        "counter": "tiktoken",
        "facts": ["Name: Ana"],
        "memories": [Turn("user", "I live in Lisbon.", 3, "2023-05-08T10:00:00", "t0")],
        "history": [Turn("user", "Hi", 7), Turn("assistant", "Hello", 8)],
    }
    parts.update(changes)
    return Context(**parts)  # type: ignore[arg-type]


def test_a_changed_list_is_rendered_again() -> None:
    ctx = make()
    first = ctx.text()
    assert "I live in Lisbon." in first and ctx.text() == first
    ctx.memories.append(Turn("assistant", "Lisbon is lovely.", 4, "2023-05-09T10:00:00", "t2"))
    ctx.history[1] = Turn("assistant", "Hello again", 8)
    ctx.facts.clear()
    ctx.summary.append("Ana moved last year.")
    assert ctx.text() != first and ctx.text() == fresh(ctx)
    assert "Lisbon is lovely." in ctx.text() and "Hello again" in ctx.text()
    assert "Name: Ana" not in ctx.text() and "Ana moved last year." in ctx.text()
    assert ctx.messages()[0].content == "\n\n".join(ctx.head())


def test_a_rendering_is_reused_only_for_the_same_parts() -> None:
    rendered = make()
    rendered.text()
    same = make()
    same.reuse_rendering(rendered)
    assert same.text() == rendered.text()
    for other in (
        make(human_prefix="User"),
        make(ai_prefix="Bot"),
        make(session_id="t0"),  # the memory's thread is now this thread: no label
        make(facts=[]),
        make(history=[Turn("user", "Hi", 7)]),
        make(memories=[Turn("user", "I live in Oslo.", 3, "2023-05-08T10:00:00", "t0")]),
    ):
        expected = fresh(other)
        other.reuse_rendering(rendered)
        assert other.text() == expected != rendered.text()


def test_a_cost_is_counted_again_for_other_parts_a_mode_or_a_counter() -> None:
    counter = get_token_counter()
    estimate = TokenCounter("estimate:chars/4", estimate_tokens)
    ctx = make()
    assert ctx.cost(counter) == counter.count(ctx.text())
    ctx.memories.append(Turn("assistant", "Lisbon is lovely, " * 20, 4, "2023-05-09", "t2"))
    assert ctx.cost(counter) == counter.count(ctx.text())
    assert ctx.cost(estimate) == estimate_tokens(ctx.text()) != ctx.cost(counter)
    as_messages = make(memories=list(ctx.memories), as_messages=True)
    as_messages.reuse_rendering(ctx)  # the same lines, sent as messages
    sent = sum(counter.count(str(m.content)) + MESSAGE_OVERHEAD for m in as_messages.messages())
    assert as_messages.cost(counter) == sent != ctx.cost(counter)
