"""Assembling what a model sees: key facts, relevant memories and recent turns, in budget.

    ctx = assemble(history=turns_newest_first, facts=["Name: Ana"], memories=[],
                   budget=500, counter=get_token_counter())
    ctx.text()        # "Key information:\n- Name: Ana\n\nRecent conversation:\nHuman: ..."
    ctx.messages()    # [SystemMessage(...), HumanMessage(...), AIMessage(...)]

Turns without text (erased) are left out. The newest turn is always kept (cut to fit if
it alone exceeds the budget); then the key
facts (up to a fifth of the budget) and relevant memories (up to three tenths); then older
turns, newest first, until the budget is spent. The shown history starts with a user
turn whenever it holds one (older assistant turns before it are left out). With no facts
and no memories the text is exactly LangChain's buffer format (``Human: ...\\nAI: ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pmm.context.tokens import TokenCounter
from pmm.text.words import repeat_key

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

FACTS_SHARE = 0.2
MEMORIES_SHARE = 0.3
SUMMARY_SHARE = 0.25
"""Share of the budget the stored session summary may take (when older turns do not fit)."""
MESSAGE_OVERHEAD = 4
"""Tokens a chat API adds per message (role and separators), counted in messages mode."""
MAX_CHARS_PER_TOKEN = 16
"""Characters per token assumed when only a prefix of a long text is counted: four times
what real text averages, so that a prefix of ``(budget + 2) * 16`` characters is over a budget
that the whole text is over (only speed depends on it, never the result's validity)."""

FACTS_HEADER = "Key information:"
MEMORIES_HEADER = "Relevant memories:"
SUMMARY_HEADER = "Earlier in this conversation:"
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
    summary: list[str] = field(default_factory=list)
    """Bullets of the stored session summary standing for turns that did not fit."""

    def __str__(self) -> str:
        """:meth:`text`: ``print(mind.context("alice"))`` shows what the model reads."""
        return self.text()

    def text(self) -> str:
        """The context as one string (for prompts with a ``{history}`` text variable)."""
        head = _head_sections(
            self.facts, self.memories, self.human_prefix, self.ai_prefix, self.summary
        )
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
        head = _head_sections(
            self.facts, self.memories, self.human_prefix, self.ai_prefix, self.summary
        )
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
    facts: Sequence[str],
    memories: Sequence[Turn],
    human_prefix: str,
    ai_prefix: str,
    summary: Sequence[str] = (),
) -> list[str]:
    sections = []
    if facts:
        sections.append(FACTS_HEADER + "\n" + "\n".join(f"- {f}" for f in facts))
    if summary:
        sections.append(SUMMARY_HEADER + "\n" + "\n".join(f"- {b}" for b in summary))
    if memories:
        sections.append(
            MEMORIES_HEADER
            + "\n"
            + "\n".join(_memory_line(m, human_prefix, ai_prefix) for m in memories)
        )
    return sections


def count_upto(count: Callable[[str], int], text: str, cap: int) -> int:
    """``count(text)`` when it is at most ``cap``; otherwise some number over ``cap``,
    found by counting only a prefix (a 1 MB turn never fits a context budget, and counting
    all of it takes a second). A prefix costs no more than the whole text (give or take a
    token at the cut, covered by the margin), so a prefix over ``cap`` proves the text is;
    a prefix within it (a text of unusually long tokens) falls back to counting it all."""
    window = (max(cap, 0) + 2) * MAX_CHARS_PER_TOKEN
    if len(text) <= window:
        return count(text)
    head = count(text[:window])
    return head if head > cap + 1 else count(text)


def truncate_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` (plus an ellipsis) that costs at most ``max_tokens``."""
    if count_upto(counter.count, text, max_tokens) <= max_tokens:
        return text
    lo, hi = 0, min(len(text), (max(max_tokens, 0) + 2) * MAX_CHARS_PER_TOKEN)
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
    summary: Sequence[tuple[str, Sequence[int]]] = (),
    memory_limit: int | None = None,
) -> Context:
    """Fit facts, memories and ``history`` (newest first) into ``budget`` tokens.

    ``summary`` holds ``(bullet, cited event ids)`` of the stored session summary: when
    older turns do not fit, the bullets about turns older than the oldest turn shown
    follow the key facts, in :data:`SUMMARY_SHARE` of the budget kept from the older turns
    (plus what they leave); a share the bullets do not use goes back to older turns.

    No turn is shown twice: a memory that is also a shown turn (or says its words again,
    :func:`~pmm.text.words.repeat_key`) is left out, and so is a
    bullet whose cited turns are all shown (as turns or memories); a bullet that cites
    only turns shown verbatim never appears.

    Costs are counted per line plus one token per line break (per message plus
    :data:`MESSAGE_OVERHEAD` in messages mode), which bounds the cost of the rendered text.
    """
    count = counter.count
    newline = 1
    # A turn with no text (erased by forget) is shown nowhere: no empty "Human: " line.
    history = [t for t in history if t.text.strip()]
    memories = [m for m in memories if m.text.strip()]
    if memory_limit is None:
        memory_limit = len(memories)

    def turn_cost(turn: Turn) -> int:  # exact when it fits the budget (see count_upto)
        if as_messages:
            return count_upto(count, turn.text, budget) + MESSAGE_OVERHEAD
        return count_upto(count, _turn_line(turn, human_prefix, ai_prefix), budget) + newline

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
    kept_summary: list[tuple[str, Sequence[int]]] = []
    memories_spent = 0
    line_costs: dict[int, int] = {}

    def memory_cost(memory: Turn) -> int:
        if memory.event_id not in line_costs:
            line = _memory_line(memory, human_prefix, ai_prefix)  # a huge turn: a prefix
            line_costs[memory.event_id] = count_upto(count, line, budget) + newline
        return line_costs[memory.event_id]

    if facts or memories or summary:
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
                cost = memory_cost(memory)
                if spent + cost > cap or len(kept_memories) >= memory_limit:
                    continue
                kept_memories.append(memory)
                spent += cost
            if kept_memories:
                remaining -= spent
                memories_spent = spent
        if not kept_facts and not kept_memories and not summary:
            remaining += head_overhead + head_open

    # 4. Older turns, newest first, while they fit (leaving the summary its share).
    reserve = min(max(remaining, 0), int(budget * SUMMARY_SHARE)) if summary else 0
    remaining -= reserve
    older = list(history[1:])
    while older and turn_cost(older[0]) <= remaining:
        remaining -= turn_cost(older[0])
        shown.append(older.pop(0))
    remaining += reserve

    # 5. The stored session summary: bullets about turns older than the oldest shown.
    if summary:
        oldest = shown[-1].event_id if shown else 1 << 62
        spent = count(SUMMARY_HEADER) + 2 * newline
        for text, cited in summary:
            cost = count(f"- {text}") + newline
            if not any(c < oldest for c in cited) or spent + cost > remaining:
                continue
            kept_summary.append((text, cited))
            spent += cost
        if kept_summary:
            remaining -= spent
        elif not kept_facts and not kept_memories:
            remaining += head_overhead + head_open
        while older and turn_cost(older[0]) <= remaining:  # what the summary left
            remaining -= turn_cost(older[0])
            shown.append(older.pop(0))

    # 6. Start at a user message when one is shown (some chat APIs refuse a history that
    # opens with the assistant): drop the older assistant turns in front of it.
    if any(turn.role == "user" for turn in shown):
        while shown[-1].role != "user":
            remaining += turn_cost(shown.pop())

    # 7. No turn twice: a memory shown in the recent turns goes (the next candidates
    # not shown take its place, within its share), and so does a bullet whose turns are
    # all shown (verbatim or as a memory): the summary stands only for turns left out.
    shown.reverse()
    head_before = bool(kept_facts or kept_memories or kept_summary)
    shown_ids = {t.event_id for t in shown}
    # a memory that says a shown turn's words again (another copy of it) is that turn too
    # (the shown turns' words are only read when there are memories to check against them)
    said = {repeat_key(t.text) for t in shown} - {frozenset()} if kept_memories else set()

    def is_shown(memory: Turn) -> bool:
        return memory.event_id in shown_ids or repeat_key(memory.text) in said

    kept = [m for m in kept_memories if not is_shown(m)]
    if len(kept) < len(kept_memories):
        for memory in kept_memories:
            if is_shown(memory):
                remaining += memory_cost(memory)
                memories_spent -= memory_cost(memory)
        cap = int(budget * MEMORIES_SHARE)
        taken = {m.event_id for m in kept}
        for memory in memories:  # the next best ones not shown, within the share
            if len(kept) >= memory_limit:
                break
            if is_shown(memory) or memory.event_id in taken:
                continue
            cost = memory_cost(memory)
            if memories_spent + cost <= cap and cost <= remaining:
                kept.append(memory)
                taken.add(memory.event_id)
                memories_spent += cost
                remaining -= cost
        if not kept:  # the section is gone: its header too
            remaining += count(MEMORIES_HEADER) + 2 * newline
        kept_memories = kept
    oldest = shown[0].event_id if shown else 1 << 62
    covered = shown_ids | {m.event_id for m in kept_memories}
    bullets: list[str] = []
    for text, cited in kept_summary:
        if any(c < oldest and c not in covered for c in cited):
            bullets.append(text)
        else:
            remaining += count(f"- {text}") + newline
    if kept_summary and not bullets:
        remaining += count(SUMMARY_HEADER) + 2 * newline
    if head_before and not (kept_facts or kept_memories or bullets):
        remaining += head_overhead + head_open

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
        summary=bullets,
    )
