"""Where facts can be: statement sentences, unguarded clauses, capitalised runs, phrases.

    list(statement_spans("Where do you live? I live in Évora."))   # [(18, 35)]
    text = "I live in Rio de Janeiro now."
    text[slice(*proper_run(text, 10, len(text)))]                   # 'Rio de Janeiro'

Offsets, not substrings, go around, so a parser can later look at the very same characters.
Capitalisation is tested with ``str.isupper`` on letters of any script (``Évora``, ``Łódź``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

WORD = re.compile(r"[^\W\d_](?:[\w'-]*[^\W_])?")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_QUESTION_START = re.compile(
    r"\s*(?:do|does|did|am|are|is|was|were|can|could|should|would|will|shall|have|has|where|"
    r"what|who|whom|whose|how|why|when|which)\b",
    re.I,
)
_TAIL_QUESTION = re.compile(
    r",\s*(?:do|does|did|am|are|is|was|can|could|should|would|will|what|how|why|any|right|"
    r"ok|okay|or)\b[^,]*$",
    re.I,
)
# Words that, earlier in the same clause, make a first-person statement not the user's own.
_GUARDS = frozenset(
    """if unless whether wish wished pretend imagine suppose supposing say says said tell tells
    told think thinks thought believe believes believed dreamed dreamt asked ask asks claims
    claimed""".split()
)
_CLAUSE_BREAK = re.compile(r"[,;:\"“”—–(]")
_CONNECTORS = frozenset(
    "de da do dos das del della di du des van von der den la le el nad am im upon on sur y".split()
)
_PHRASE_STOP = re.compile(
    r"\s*(?:[,.;!?:()\n\"“”–—]|$)"
    r"|\s*(?<!\w)-(?!\w)"  # a dash between words ends the phrase: "hiking - it clears ..."
    r"|\s+(?:and|or)\s+(?:i|we|my|it|that|he|she|they|you|i'm|i've)\b"
    r"|\s+(?:but|because|since|so|when|while|though|although|especially|except|which|who|"
    r"whereas|if|as|whenever|unless|than|whom|whose)\b",
    re.I,
)
_TRAILING = re.compile(
    r"(?:\s+(?:too|a lot|so much|very much|as well|these days|nowadays|now|anymore|any more|"
    r"at the moment|right now|in general|though|lately|recently|in particular|every day|"
    r"the most))+$",
    re.I,
)


def statement_spans(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` that is a statement, not a question."""
    for match in _SENTENCE.finditer(text):
        sentence = match.group()
        if not sentence.strip() or _QUESTION_START.match(sentence):
            continue
        if sentence.rstrip().endswith("?"):
            # "I'm 38, is that too late?": the statement before a trailing question clause
            tail = _TAIL_QUESTION.search(sentence)
            if tail is None:
                continue
            yield match.start(), match.start() + tail.start()
        else:
            yield match.start(), match.end()


def guarded(text: str, sentence_start: int, position: int) -> bool:
    """Whether the statement at ``position`` is hypothetical, reported or quoted: a guard word
    earlier in its clause, or an open quotation mark before it in the sentence."""
    before = text[sentence_start:position]
    if (before.count('"') + before.count("“") + before.count("”")) % 2 == 1:
        return True
    if "“" in before and "”" not in before:
        return True
    clause = _CLAUSE_BREAK.split(before)[-1]
    return any(w.lower() in _GUARDS for w in WORD.findall(clause))


def words_from(text: str, pos: int, end: int) -> Iterator[re.Match[str]]:
    """Words starting at ``pos`` separated by single spaces (stops at anything else)."""
    while pos < end:
        space = pos
        while space < end and text[space] == " ":
            space += 1
        match = WORD.match(text, space, end)
        if match is None:
            return
        yield match
        pos = match.end()
        if pos < end and text[pos] not in " ":
            return


def is_capital(word: str) -> bool:
    return word[0].isupper() and word not in {"I", "I'm", "I've", "I'd", "I'll"}


def proper_run(
    text: str, pos: int, end: int, *, max_words: int = 4, comma: bool = False
) -> tuple[int, int] | None:
    """Span of the capitalised run (``Rio de Janeiro``, ``Ana Évora``) starting at ``pos``;
    with ``comma``, one ``, Country`` may follow. None when the first word is not capitalised."""
    words = list(words_from(text, pos, end))
    if not words or not is_capital(words[0].group()):
        return None
    first, last, count, i = words[0], words[0], 1, 1
    while i < len(words) and count < max_words:
        word = words[i].group()
        if is_capital(word):
            last, count, i = words[i], count + 1, i + 1
        elif (
            word.lower() in _CONNECTORS and i + 1 < len(words) and is_capital(words[i + 1].group())
        ):
            last, count, i = words[i + 1], count + 2, i + 2
        else:
            break
    span_end = last.end()
    if comma and text.startswith(", ", span_end):
        tail = proper_run(text, span_end + 2, end, max_words=3)
        if tail is not None and ends_clause(text, tail[1], end):
            span_end = tail[1]
    return first.start(), span_end


def ends_clause(text: str, pos: int, end: int) -> bool:
    """Nothing, punctuation, or a lower-case word follows ``pos``."""
    rest = text[pos:end].lstrip(" ")
    return not rest or not rest[0].isalpha() or (rest[0].islower() and not rest.startswith("i "))


def next_word(text: str, pos: int, end: int) -> str | None:
    """The word right after ``pos`` when only spaces separate it, else None."""
    match = WORD.match(text, pos + 1, end) if text.startswith(" ", pos) else None
    return match.group() if match else None


def phrase(text: str, pos: int, end: int, *, max_words: int = 7) -> tuple[int, int] | None:
    """Span of a short lower-case-ish phrase from ``pos`` to the end of its clause."""
    stop = _PHRASE_STOP.search(text, pos, end)
    stop_at = stop.start() if stop else end
    if stop and stop.start() == pos:
        return None
    value = text[pos:stop_at]
    trimmed = _TRAILING.sub("", value)
    if not trimmed.strip() or len(trimmed.split()) > max_words:
        return None
    return pos, pos + len(trimmed.rstrip())
