"""Assembling what a model sees: key facts, relevant memories and recent turns, in budget.

    ctx = assemble(history=turns_newest_first, facts=["Name: Ana"], memories=[],
                   budget=500, counter=get_token_counter())
    ctx.text()        # "Key information:\n- Name: Ana\n\nRecent conversation:\nHuman: ..."
    ctx.messages()    # [SystemMessage(...), HumanMessage(...), AIMessage(...)]

The newest turn is always kept (cut to fit if it alone exceeds the budget); then the key
facts (up to a fifth of the budget) and relevant memories (up to three tenths); then older
turns, newest first, until the budget is spent. The shown history starts with a user
turn whenever it holds one (older assistant turns before it are left out). With no facts
and no memories the text is exactly LangChain's buffer format (``Human: ...\\nAI: ...``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .tokens import TokenCounter

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

FACTS_SHARE = 0.2
MEMORIES_SHARE = 0.3
MESSAGE_OVERHEAD = 4
"""Tokens a chat API adds per message (role and separators), counted in messages mode."""

FACTS_HEADER = "Key information:"
MEMORIES_HEADER = "Relevant memories:"
HISTORY_HEADER = "Recent conversation:"


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn as shown to the model: who said it and the text shown (raw or its summary)."""

    role: str
    text: str
    event_id: int
    ts: str = ""
    session_id: str | None = None
    summarized: bool = False


@dataclass(frozen=True, slots=True)
class Context:
    """The assembled memory of one session, ready to render.

    ``history`` is oldest first. ``tokens`` is what the rendering costs by ``counter``'s
    count, never more than ``budget_tokens``.
    """

    session_id: str
    budget_tokens: int
    tokens: int
    counter: str
    facts: list[str] = field(default_factory=list)
    memories: list[Turn] = field(default_factory=list)
    history: list[Turn] = field(default_factory=list)
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    as_messages: bool = False

    def text(self) -> str:
        """The context as one string (for prompts with a ``{history}`` text variable)."""
        head = _head_sections(self.facts, self.memories, self.human_prefix, self.ai_prefix)
        lines = [_turn_line(t, self.human_prefix, self.ai_prefix) for t in self.history]
        if not head:
            return "\n".join(lines)
        if lines:
            head.append(HISTORY_HEADER + "\n" + "\n".join(lines))
        return "\n\n".join(head)

    def messages(self) -> list[BaseMessage]:
        """The context as chat messages: a system message with the facts and memories (if
        any), then one Human/AI message per turn."""
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

        out: list[BaseMessage] = []
        head = _head_sections(self.facts, self.memories, self.human_prefix, self.ai_prefix)
        if head:
            out.append(SystemMessage(content="\n\n".join(head)))
        for turn in self.history:
            if turn.role == "user":
                out.append(HumanMessage(content=turn.text))
            elif turn.role == "assistant":
                out.append(AIMessage(content=turn.text))
            else:
                out.append(SystemMessage(content=turn.text))
        return out


def role_label(role: str, human_prefix: str, ai_prefix: str) -> str:
    if role == "user":
        return human_prefix
    if role == "assistant":
        return ai_prefix
    return role.capitalize()


def _turn_line(turn: Turn, human_prefix: str, ai_prefix: str) -> str:
    return f"{role_label(turn.role, human_prefix, ai_prefix)}: {turn.text}"


def _memory_line(turn: Turn, human_prefix: str, ai_prefix: str) -> str:
    date = turn.ts[:10]
    where = f" ({turn.session_id})" if turn.session_id else ""
    return f"- [{date}{where}] {_turn_line(turn, human_prefix, ai_prefix)}"


def _head_sections(
    facts: Sequence[str], memories: Sequence[Turn], human_prefix: str, ai_prefix: str
) -> list[str]:
    sections = []
    if facts:
        sections.append(FACTS_HEADER + "\n" + "\n".join(f"- {f}" for f in facts))
    if memories:
        sections.append(
            MEMORIES_HEADER
            + "\n"
            + "\n".join(_memory_line(m, human_prefix, ai_prefix) for m in memories)
        )
    return sections


def truncate_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` (plus an ellipsis) that costs at most ``max_tokens``."""
    if counter.count(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid] + "…") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "…" if lo else ""


def assemble(
    *,
    session_id: str,
    history: Sequence[Turn],
    budget: int,
    counter: TokenCounter,
    facts: Sequence[str] = (),
    memories: Sequence[Turn] = (),
    human_prefix: str = "Human",
    ai_prefix: str = "AI",
    as_messages: bool = False,
) -> Context:
    """Fit facts, memories and ``history`` (newest first) into ``budget`` tokens.

    Costs are counted per line plus one token per line break (per message plus
    :data:`MESSAGE_OVERHEAD` in messages mode), which bounds the cost of the rendered text.
    """
    count = counter.count
    newline = 1

    def turn_cost(turn: Turn) -> int:
        if as_messages:
            return count(turn.text) + MESSAGE_OVERHEAD
        return count(_turn_line(turn, human_prefix, ai_prefix)) + newline

    remaining = max(budget, 0)
    shown: list[Turn] = []
    # 1. The newest turn, cut to fit if needed.
    if history and remaining > 0:
        newest = history[0]
        cost = turn_cost(newest)
        if cost > remaining:
            spare = remaining - (turn_cost(Turn(newest.role, "", newest.event_id)))
            text = truncate_to_tokens(newest.text, max(spare - 1, 0), counter) if spare > 1 else ""
            newest = Turn(
                newest.role, text, newest.event_id, newest.ts, newest.session_id, newest.summarized
            )
            cost = turn_cost(newest)
        if not newest.text or cost > remaining:
            history = ()  # never show older turns without the newest one
        else:
            shown.append(newest)
            remaining -= cost

    # 2. Key facts and 3. relevant memories, each within its share.
    head_overhead = 0 if as_messages else count(HISTORY_HEADER) + 2 * newline
    head_open = MESSAGE_OVERHEAD if as_messages else 0
    kept_facts: list[str] = []
    kept_memories: list[Turn] = []
    if facts or memories:
        remaining -= head_overhead + head_open
        if remaining > 0 and facts:
            cap = min(remaining, int(budget * FACTS_SHARE))
            spent = count(FACTS_HEADER) + 2 * newline
            for fact in facts:
                cost = count(f"- {fact}") + newline
                if spent + cost > cap:
                    break
                kept_facts.append(fact)
                spent += cost
            if kept_facts:
                remaining -= spent
        if remaining > 0 and memories:
            cap = min(remaining, int(budget * MEMORIES_SHARE))
            spent = count(MEMORIES_HEADER) + 2 * newline
            for memory in memories:
                cost = count(_memory_line(memory, human_prefix, ai_prefix)) + newline
                if spent + cost > cap:
                    continue
                kept_memories.append(memory)
                spent += cost
            if kept_memories:
                remaining -= spent
        if not kept_facts and not kept_memories:
            remaining += head_overhead + head_open

    # 4. Older turns, newest first, while they fit.
    for turn in history[1:]:
        cost = turn_cost(turn)
        if cost > remaining:
            break
        shown.append(turn)
        remaining -= cost

    # 5. Start at a user message when one is shown (some chat APIs refuse a history that
    # opens with the assistant): drop the older assistant turns in front of it.
    if any(turn.role == "user" for turn in shown):
        while shown[-1].role != "user":
            remaining += turn_cost(shown.pop())

    shown.reverse()
    return Context(
        session_id=session_id,
        budget_tokens=budget,
        tokens=max(budget, 0) - remaining,
        counter=counter.name,
        facts=kept_facts,
        memories=kept_memories,
        history=shown,
        human_prefix=human_prefix,
        ai_prefix=ai_prefix,
        as_messages=as_messages,
    )
