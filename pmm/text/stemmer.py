"""The tokens SQLite's FTS5 indexes a text as (``porter unicode61 remove_diacritics 2``), in
pure Python, so that a ranker outside SQLite (:mod:`pmm.recall.session_index`) sees the same terms.

    >>> fts_tokens("The puppies were running in Łódź!")
    ['the', 'puppi', 'were', 'run', 'in', 'łodz']

unicode61 splits on every character that is not a letter or a digit, lower-cases, and
(``remove_diacritics 2``) strips accents; the porter tokenizer then stems each token of 3
to 64 characters by Martin Porter's algorithm (the version SQLite ships: ``bli -> ble``,
``logi -> log``). ``tests/recall/test_session_index.py`` checks the result against FTS5 itself.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Letters and digits, less the 21 that Python calls letters and FTS5's unicode61 splits on
# (New Tai Lue vowel signs, two Vedic signs): tests/storage/sqlite/test_lean_fts.py checks
# every one.
_TOKEN = re.compile(r"[^\W_\u19b0-\u19c0\u19c8\u19c9\u1cf2\u1cf3]+")
_VOWELS = frozenset("aeiou")


def fts_tokens(text: str) -> list[str]:
    """The stemmed tokens of ``text``, in order."""
    return [stem(t) for t in _TOKEN.findall(_fold(text))]


def term_counts(text: str, skip: frozenset[str] = frozenset()) -> dict[str, tuple[str, int]]:
    """Each term (stem) of ``text``, in order of first appearance, with its first (folded)
    token, which FTS5 stems to the same term, and how often it occurs; tokens in ``skip``
    (folded words, not stems: "please" may be skipped and "pleased" kept) left out.

    >>> term_counts("Running, runs and the RUN")
    {'run': ('running', 3), 'and': ('and', 1), 'the': ('the', 1)}
    >>> term_counts("Please, I was pleased", skip=frozenset({"please", "i", "was"}))
    {'pleas': ('pleased', 1)}
    """
    found: dict[str, tuple[str, int]] = {}
    for token in _TOKEN.findall(_fold(text)):
        if token in skip:
            continue
        term = stem(token)
        seen = found.get(term)
        found[term] = (token, 1) if seen is None else (seen[0], seen[1] + 1)
    return found


def stems_and_counts(text: str, skip: frozenset[str]) -> tuple[list[str], dict[str, int]]:
    """:func:`fts_tokens` of ``text`` and, from the same pass, how often each stem occurs
    as a token not in ``skip`` (as :func:`term_counts` counts them).

    >>> stems_and_counts("Please, I was pleased", frozenset({"please", "i", "was"}))
    (['pleas', 'i', 'wa', 'pleas'], {'pleas': 1})
    """
    stems: list[str] = []
    counts: dict[str, int] = {}
    for token in _TOKEN.findall(_fold(text)):
        term = stem(token)
        stems.append(term)
        if token not in skip:
            counts[term] = counts.get(term, 0) + 1
    return stems, counts


def query_tokens(word: str) -> list[str]:
    """The tokens FTS5 splits a query word into, unstemmed (FTS5 stems them itself):
    ``"don't" -> ["don", "t"]``. A token that folds to nothing (U+037A, the half-width
    sound marks) is no term, and is left out.

    >>> query_tokens("don't"), query_tokens("x'\u037a")
    (['don', 't'], ['x'])
    """
    return [t for t in _TOKEN.findall(word) if _TOKEN.search(_fold(t))]


def folded(token: str) -> str:
    """A token as FTS5 folds it before stemming: lower case, no diacritics.

    >>> folded("Łódź")
    'łodz'
    """
    return _fold(token)


def _fold(text: str) -> str:
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _consonant(word: str, i: int) -> bool:
    c = word[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    m = 0
    previous_vowel = False
    for i in range(len(stem)):
        vowel = not _consonant(stem, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """consonant-vowel-consonant at the end, the last not w, x or y."""
    if len(word) < 3:
        return False
    n = len(word)
    return (
        _consonant(word, n - 3)
        and not _consonant(word, n - 2)
        and _consonant(word, n - 1)
        and word[-1] not in "wxy"
    )


def _replace(word: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    """The first rule whose suffix ends ``word`` applies (when the stem's m > min_m)."""
    if not word.endswith(_SUFFIXES[rules]):  # most words end in none: one C-level check
        return word
    for suffix, replacement in rules:
        if word.endswith(suffix) and len(word) > len(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > min_m else word
    return word


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
    ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"),
)  # fmt: skip
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
    "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def _longest_first(rules: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    # Porter's tables are matched on the longest suffix that ends the word.
    return tuple(sorted(rules, key=lambda r: -len(r[0])))


_STEP2_SORTED = _longest_first(_STEP2)
_STEP3_SORTED = _longest_first(_STEP3)
_STEP4_SORTED = tuple(sorted(_STEP4, key=len, reverse=True))
_SUFFIXES = {rules: tuple(r[0] for r in rules) for rules in (_STEP2_SORTED, _STEP3_SORTED)}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter's stem of one lower-case token (tokens under 3 or over 64 characters are
    kept as they are, as SQLite does)."""
    if len(word) < 3 or len(word) > 64:
        return word
    # step 1a
    if word.endswith(("sses", "ies")):
        word = word[:-2]
    elif word.endswith("ss"):
        pass
    elif word.endswith("s"):
        word = word[:-1]
    # step 1b
    extra = False
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif word.endswith("ed") and _has_vowel(word[:-2]):
        word, extra = word[:-2], True
    elif word.endswith("ing") and _has_vowel(word[:-3]):
        word, extra = word[:-3], True
    if extra:
        if word.endswith(("at", "bl", "iz")):
            word += "e"
        elif _double_consonant(word) and word[-1] not in "lsz":
            word = word[:-1]
        elif _measure(word) == 1 and _cvc(word):
            word += "e"
    # step 1c
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _replace(word, _STEP2_SORTED, 0)
    word = _replace(word, _STEP3_SORTED, 0)
    # step 4
    for suffix in _STEP4_SORTED if word.endswith(_STEP4_SORTED) else ():
        if word.endswith(suffix):
            stem_ = word[: -len(suffix)]
            if _measure(stem_) > 1 and (suffix != "ion" or stem_.endswith(("s", "t"))):
                word = stem_
            break
    # step 5
    if word.endswith("e"):
        stem_ = word[:-1]
        m = _measure(stem_)
        if m > 1 or (m == 1 and not _cvc(stem_)):
            word = stem_
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word
