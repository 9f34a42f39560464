"""The model-free digest: the most informative sentences of a turn, and rule-based keywords.

Fast enough to run inline on every turn (thousands of turns per second on one core), and the
backend every other one falls back to::

    digester = HeuristicDigester(max_chars=200)
    [d] = digester.digest_many(["Sure! ... I moved to Lisbon in March 2021 ..."], roles=["user"])
    d.summary   # 'User: I moved to Lisbon in March 2021 ...'
    d.method    # 'heuristic'

A sentence scores by what a memory needs to keep: numbers and dates, proper nouns, rare or
repeated content words, and statements of fact or preference ("I prefer", "my name is"),
divided by the square root of its length so that filler ("Sure, happy to help!") loses to
facts. The best sentences that fit ``max_chars`` are kept in their original order; a single
sentence longer than that is cut at a word boundary.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from pmm.digest.base import Digest
from pmm.digest.keywords import COMMON_WORDS, heuristic_keywords
from pmm.events.roles import roles_for, with_speaker
from pmm.text.words import STOPWORDS, WORD

__all__ = ["HeuristicDigester", "extract_summary", "split_sentences"]

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'’”)\]]*\s+|\s*\n+\s*")
_TITLES = ("mr.", "mrs.", "ms.", "dr.", "prof.", "st.", "jr.", "sr.", "vs.", "e.g.", "i.e.")
_CUE_WORDS = frozenset(
    """prefer prefers preferred preference favorite favourite love loves loved like likes
    liked hate hates hated dislike dislikes allergic allergy always never need needs needed
    want wants wanted name born birthday live lives lived living move moved moving work works
    worked deadline remember plan plans planned decided booked bought recommend recommended
    should must""".split()
)
"""Words of statements worth remembering: facts about the speaker, preferences, plans."""
_SPACES = re.compile(r"\s+")
_DIGIT = re.compile(r"\d")
_NAME_START = re.compile(r"(?<=[\s(\"“'‘])(?!I\b)[A-ZÀ-ÖØ-Þ]")
"""A capital letter inside a sentence (not the pronoun I): a proper noun, most likely."""


def split_sentences(text: str) -> list[str]:
    """Sentences (and lines) of ``text``, whitespace collapsed; "Dr. Smith" is not split."""
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p and not p.isspace()]
    sentences: list[str] = []
    for part in parts:
        if "  " in part or "\t" in part or "\r" in part:
            part = _SPACES.sub(" ", part)
        part = part.strip()
        if sentences and sentences[-1].lower().endswith(_TITLES):
            sentences[-1] = f"{sentences[-1]} {part}"
        else:
            sentences.append(part)
    return sentences


def _score(sentences: list[str]) -> list[float]:
    contents: list[list[str]] = []
    lowered_words: list[list[str]] = []
    sizes: list[int] = []
    frequency: Counter[str] = Counter()
    for sentence in sentences:
        lowered = WORD.findall(sentence.lower())
        content = [w for w in lowered if w not in STOPWORDS]
        lowered_words.append(lowered)
        contents.append(content)
        sizes.append(len(lowered))
        frequency.update(content)
    scores: list[float] = []
    for index, sentence in enumerate(sentences):
        numbers = common = long_words = repeated = 0
        for word in contents[index]:
            if word in COMMON_WORDS:
                common += 1
            elif not word.isalpha() and _DIGIT.search(word):
                numbers += 1
            if len(word) >= 7:
                long_words += 1
            if frequency[word] > 1:
                repeated += 1
        names = len(_NAME_START.findall(sentence))
        plain = max(0, len(contents[index]) - numbers - names - common)
        total = (
            2.5 * numbers + 2.0 * names + 0.3 * common + plain + 0.25 * long_words + 0.5 * repeated
        )
        size = sizes[index]
        score = total / math.sqrt(max(size, 4))
        if not _CUE_WORDS.isdisjoint(lowered_words[index]):
            score += 1.0
        if index == 0:
            score += 0.3
        if size < 3:
            score *= 0.5
        scores.append(score)
    return scores


def _cut(sentence: str, limit: int) -> str:
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: max(1, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def extract_summary(text: str, max_chars: int = 200) -> str:
    """The most informative sentences of ``text`` in their original order, at most
    ``max_chars`` characters and at most 70% of the text (120 characters at least)."""
    sentences = split_sentences(text)
    if not sentences:
        return ""
    joined = " ".join(sentences)
    cap = min(max_chars, max(120, int(len(joined) * 0.7)))
    if len(joined) <= cap:
        return joined
    scores = _score(sentences)
    ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    floor = scores[ranked[0]] * 0.4
    for i in ranked:
        if scores[i] < floor:
            break
        extra = len(sentences[i]) + (1 if chosen else 0)
        if used + extra <= cap:
            chosen.append(i)
            used += extra
    if not chosen:
        return _cut(sentences[ranked[0]], cap)
    return " ".join(sentences[i] for i in sorted(chosen))


class HeuristicDigester:
    """Extractive summary plus rule keywords; no model, no I/O. ``max_chars`` caps the
    summary (the ``User: `` label not included), ``max_keywords`` the keyword list."""

    name = "heuristic"

    def __init__(self, max_chars: int = 200, max_keywords: int = 8) -> None:
        if max_chars < 20:
            raise ValueError("max_chars must be at least 20")
        self.max_chars = max_chars
        self.max_keywords = max_keywords

    def digest(self, text: str, role: str | None = None) -> Digest:
        summary = extract_summary(text, self.max_chars)
        return Digest(
            summary=with_speaker(role, summary),
            keywords=heuristic_keywords(text, self.max_keywords),
            method=self.name,
        )

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        return [
            self.digest(text, role)
            for text, role in zip(texts, roles_for(texts, roles), strict=True)
        ]
