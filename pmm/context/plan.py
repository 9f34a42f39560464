"""The running state of one context's packing: what is taken so far, what it costs, and
the costs of its parts (turns, lines, section headers) as the rendering will count them.

    plan = Plan(Spend(2000), counter, "alice", False, "Human", "AI")
    plan.take_section(MEMORIES_HEADER, False, 30)   # the section's header is paid once
    plan.resync()                                    # what is left, from the rendered text
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pmm.context.budget import Spend, count_upto
from pmm.context.parts import HISTORY_HEADER, MESSAGE_OVERHEAD, Context, Turn, turn_line
from pmm.context.tokens import TokenCounter
from pmm.text.words import repeat_key


@dataclass
class Plan:
    """The packing's running state: what is taken so far and what it costs (the steps of
    :func:`pmm.context.assembly.assemble` read and extend it)."""

    spend: Spend
    count: TokenCounter
    session_id: str
    as_messages: bool
    human_prefix: str
    ai_prefix: str
    recent: list[Turn] = field(default_factory=list)  # newest first
    facts: list[str] = field(default_factory=list)
    memories: list[Turn] = field(default_factory=list)  # in the order taken
    bullets: list[tuple[str, Sequence[int]]] = field(default_factory=list)
    groups: Counter[tuple[str, str]] = field(default_factory=Counter)
    head_open: bool = False
    shown_as: dict[int, tuple[Turn, int]] = field(default_factory=dict)
    """Each memory considered: as shown (whole or excerpted) and its line's cost."""
    repeat_keys: dict[int, frozenset[str]] = field(default_factory=dict)
    last: Context | None = None
    """The last :meth:`context` made (whose rendering the next one reuses)."""

    def key_of(self, turn: Turn) -> frozenset[str]:
        """:func:`~pmm.text.words.repeat_key` of ``turn``'s full text, worked out once."""
        if turn.event_id not in self.repeat_keys:
            self.repeat_keys[turn.event_id] = repeat_key(turn.text)
        return self.repeat_keys[turn.event_id]

    def context(self, tokens: int = 0) -> Context:
        """What is packed so far, as a context (``tokens``: what it costs, when counted).
        It reuses the rendering of the last one while they hold the same."""
        ctx = Context(
            session_id=self.session_id,
            budget_tokens=self.spend.budget,
            tokens=tokens,
            counter=self.count.name,
            facts=list(self.facts),
            memories=list(self.memories),
            history=list(reversed(self.recent)),
            human_prefix=self.human_prefix,
            ai_prefix=self.ai_prefix,
            as_messages=self.as_messages,
            summary=[t for t, _ in self.bullets],
        )
        if self.last is not None:
            ctx.reuse_rendering(self.last)
        self.last = ctx
        return ctx

    def resync(self) -> None:
        """Set what is left to the budget less what the packed context costs as rendered
        (after turns moved between sections, whose headers the running account kept)."""
        self.head_open = bool(self.facts or self.memories or self.bullets)
        self.spend.left = self.spend.budget - rendered_cost(self.context(), self.count)

    def turn_cost(self, turn: Turn) -> int:
        """A recent turn's cost (exact when it fits the budget; see count_upto)."""
        cap = self.spend.budget
        if self.as_messages:
            return count_upto(self.count.count, turn.text, cap) + MESSAGE_OVERHEAD
        line = turn_line(turn, self.human_prefix, self.ai_prefix)
        return count_upto(self.count.count, line, cap) + 1

    def line_cost(self, line: str) -> int:
        return count_upto(self.count.count, line, self.spend.budget) + 1

    def section_cost(self, header: str, present: bool) -> int:
        """What opening a section costs: its header and the blank line before it, plus the
        head's own overhead (the system message, or the recent turns' header) for the
        first section."""
        if present:
            return 0
        cost = self.count.count(header) + 2
        if not self.head_open:
            cost += MESSAGE_OVERHEAD if self.as_messages else self.count.count(HISTORY_HEADER) + 2
        return cost

    def take_section(self, header: str, present: bool, cost: int) -> bool:
        opening = self.section_cost(header, present)
        if not self.spend.take(opening + cost):
            return False
        self.head_open = True
        return True


def rendered_cost(ctx: Context, counter: TokenCounter) -> int:
    """What ``ctx`` costs as the model receives it (:meth:`Context.cost`)."""
    return ctx.cost(counter)
