"""Token costs within a budget: counting long texts cheaply, cutting a text to fit, and the
running account the assembly spends from.

    spend = Spend(500)
    spend.take(120)        # True: 380 left
    spend.take(400)        # False: nothing taken
    truncate_to_tokens("x " * 5000, 50, counter)   # a prefix and "…", within 50 tokens
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pmm.context.tokens import TokenCounter

MAX_CHARS_PER_TOKEN = 16
"""Characters per token assumed when only a prefix of a long text is counted: four times
what real text averages, so that a prefix of ``(budget + 2) * 16`` characters is over a budget
that the whole text is over (only speed depends on it, never the result's validity)."""


class Spend:
    """What is left of a budget: :meth:`take` a cost only when it fits, :meth:`refund` it."""

    def __init__(self, budget: int) -> None:
        self.budget = max(budget, 0)
        self.left = self.budget

    def fits(self, cost: int) -> bool:
        return cost <= self.left

    def take(self, cost: int) -> bool:
        """Spend ``cost`` if it fits; say whether it did."""
        if cost > self.left:
            return False
        self.left -= cost
        return True

    def refund(self, cost: int) -> None:
        self.left += cost

    @property
    def spent(self) -> int:
        return self.budget - self.left


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
