"""Whether a like or dislike reads as a complete statement about the user, out of its turn.

    complete("fresh mango", "")                 # 'fresh mango'
    complete("also fresh mango", "")            # 'fresh mango'
    complete("growing my own tomatoes", ".")    # 'growing their own tomatoes'
    complete("the shape", "")                   # None: the shape of what? (a photo)
    complete("making her laugh", "")            # None: who is she?
    complete("building a calm", ", friendly place")   # None: cut inside "a calm, friendly place"

A key fact is shown alone, far from the turn it came from ("Likes: ..."), so a value that
needs the turn to be understood is a fragment there. Dropped, because a doubtful fact costs
more than a missing one:

- a word that points into the conversation: a pronoun or demonstrative (``it``, ``this``,
  ``those``, ``him``, ``their``, ...), a comparison (``sounds like this``);
- a definite description (``the noise``, ``all the red roofs``): it names something seen
  or said in the conversation, unless a title (``the Beatles``) or a place everyone knows
  (``the ocean``);
- a start that cannot begin an object: a verb (``is important``: the rule caught a relative
  clause, "the friends we love is important"), a conjunction, a dash, a count (``three plans``);
- a bare gerund that needs an object (``playing``: playing what?);
- a phrase cut at a comma inside a noun phrase (``a calm, friendly place``) or at a quotation.

First-person words become third person (``my job`` → ``their job``): the line is about the
user, and "my" in it would read as the assistant's.
"""

from __future__ import annotations

import re

POINTING = frozenset(
    """it its it's itself this that these those them they their theirs themselves him his
    himself her hers herself he she there here such one ones same other others
    i i'm i've i'd you your yours""".split()
)
"""Words whose referent lies in the conversation, not in the value."""

_FIRST_PERSON = {
    "my": "their",
    "our": "their",
    "me": "them",
    "us": "them",
    "myself": "themselves",
    "ourselves": "themselves",
    "mine": "theirs",
    "ours": "theirs",
}
_LEADING_ADVERBS = frozenset("also really just especially totally even still truly".split())
_NOT_A_START = frozenset(
    """is are was were am be been makes make made has have had gives give keeps keep brings
    bring helps and or but nor so then every each some two three four five six seven eight
    nine ten few several many certain most both either neither - – —""".split()
)
_NEEDS_OBJECT = frozenset(
    """playing doing making having getting watching seeing taking giving going trying using
    working being holding keeping finding""".split()
)
_KNOWN_THE = frozenset(
    """ocean sea beach mountains outdoors countryside forest woods rain snow sun sunshine
    stars theater theatre cinema gym""".split()
)
"""``the`` + these reads alone: ``the ocean`` is the same ocean for everyone."""
_DETERMINERS = frozenset("the a an all both".split()) | POINTING | set(_FIRST_PERSON)
_ARTICLE_TAIL = re.compile(r"\b(?:a|an)\s+[^\W\d_][\w-]*$", re.I)
_WORD = re.compile(r"[\w'’-]+|[–—-]")


def complete(value: str, after: str) -> str | None:
    """``value`` cleaned (leading adverbs off, first person made third), or None when it does
    not read alone; ``after`` is the text that follows it in the turn."""
    words = _WORD.findall(value)
    while words and words[0].lower() in _LEADING_ADVERBS:
        value = value[value.lower().index(words[0].lower()) + len(words[0]) :].lstrip()
        words = words[1:]
    lower = [w.lower().replace("’", "'") for w in words]
    if not lower or lower[0] in _NOT_A_START or (lower[0] == "a" and lower[1:2] == ["few"]):
        return None
    pointing = [w for n, w in enumerate(lower) if w in POINTING and not _relative(lower, n)]
    if pointing or " like " in f" {value.lower()} ":
        return None
    if lower == [lower[0]] and lower[0] in _NEEDS_OBJECT:
        return None
    if definite(words):
        return None
    rest = after.lstrip(" ")
    if rest[:1] in {'"', "“", "”"}:
        return None
    if rest.startswith(",") and _ARTICLE_TAIL.search(value):
        following = _WORD.findall(rest)
        if following and following[0].lower() not in {"a", "an", "the", "and", "or"}:
            return None  # "a calm, friendly place": the noun is after the comma
    return re.sub(
        r"\b(?:my|our|me|us|myself|ourselves|mine|ours)\b",
        lambda m: _match_case(m.group(), _FIRST_PERSON[m.group().lower()]),
        value,
        flags=re.I,
    )


def _relative(lower: list[str], n: int) -> bool:
    """ "stories that tackle important issues": ``that`` after a plural noun, before a verb,
    opens a relative clause (it points at the noun before it, inside the value)."""
    if lower[n] != "that" or not 0 < n < len(lower) - 1:
        return False
    before = lower[n - 1]
    return (
        before.endswith("s") and not before.endswith(("ss", "ing")) and lower[n + 1] not in POINTING
    )


def definite(words: list[str]) -> bool:
    """``the X`` / ``all the X`` that needs the conversation (not a title, not ``the ocean``)."""
    lower = [w.lower() for w in words]
    at = 2 if lower[:2] in (["all", "the"], ["both", "the"]) else 1 if lower[:1] == ["the"] else 0
    if not at or at >= len(words):
        return bool(at)
    return not (words[at][0].isupper() or lower[at] in _KNOWN_THE)


def shares_determiner(first: str) -> bool:
    """Whether a list's first item opens with a determiner the later items share ("the dark
    sky and green scenery" = the green scenery too)."""
    words = first.split()
    return bool(words) and words[0].lower().replace("’", "'") in _DETERMINERS


def _match_case(original: str, replacement: str) -> str:
    return replacement.capitalize() if original[0].isupper() else replacement
