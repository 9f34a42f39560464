"""Facts a user states about themselves, found by conservative, Unicode-aware rules.

    candidates("Hi, I'm Bob from Oslo.")
    # [Candidate(Fact('name', 'Bob'), ...), Candidate(Fact('origin', 'Oslo'), ...)]

Triggers are case-insensitive ("MY NAME IS Carl"); names and places must start with an
upper-case letter of any script (``Évora``, ``Łódź``, ``Ørjan``), so "I am tired" is no name.
Rules fire only on first-person statements: questions, negations ("I don't live in ..."),
hypotheticals ("If I lived in ..."), reported and quoted speech ("He said, "I live in ...",
"My friend lives in ...") give nothing. Every candidate keeps the character span of its value
so that :mod:`pmm.facts.nlp` can check it against a parse.
"""

from __future__ import annotations

import re

from pmm.facts.fact import Candidate, Fact, Rule
from pmm.facts.preferences import DISLIKES, LIKES, favorite_rule
from pmm.facts.spans import (
    ends_clause,
    guarded,
    next_word,
    phrase,
    proper_run,
    statement_spans,
    words_from,
)
from pmm.facts.words import (
    FAMILY,
    JOBS,
    NOT_JOBS,
    NOT_NAMES,
    NOT_PLACES,
    PET_KIND,
    RELATIVE_MODIFIERS,
    WEAK_OBJECTS,
)

_I = r"(?:i|we)"
_BE = r"(?:'m|\s+am|'re|\s+are)"
_NAME_FOLLOWERS = frozenset("from and but here speaking again btw".split())
_NUMBER_END = r"(?=\s*(?:[,.;!?]|$)|\s+(?:and|but|now|too|soon|next|this|myself)\b)"


def candidates(text: str) -> list[Candidate]:
    """Every fact candidate in ``text`` (one user turn), in order of appearance."""
    norm = text.replace("’", "'")
    found: list[Candidate] = []
    for start, end in statement_spans(norm):
        for rule in _RULES:
            found.extend(rule(norm, start, end))
    found.sort(key=lambda c: c.start)
    return found


# -- rules ----------------------------------------------------------------------------------


def _plausible_name(text: str, span: tuple[int, int], end: int, *, strict: bool) -> bool:
    value = text[span[0] : span[1]]
    first = value.split()[0].lower()
    if (
        first in NOT_NAMES
        or first in JOBS
        or value.endswith("'s")
        or (value.isupper() and len(value) > 3)
    ):
        return False
    if strict:
        follower = next_word(text, span[1], end)
        if follower is not None and follower.islower() and follower not in _NAME_FOLLOWERS:
            return False
    return True


def _plausible_place(text: str, span: tuple[int, int]) -> bool:
    first = text[span[0] : span[1]].split()[0].lower()
    return first not in NOT_PLACES


def _skip_the(text: str, pos: int) -> int:
    return (
        pos + 4
        if text[pos : pos + 4].lower() == "the " and text[pos + 4 : pos + 5].isupper()
        else pos
    )


def _trigger_rule(
    attribute: str, trigger: str, take: str, *, weak: bool = False, flags: int = re.I
) -> Rule:
    """A rule: ``trigger`` (a regex ending where the value starts), then a value taken by
    ``take`` = ``name`` | ``place`` | ``phrase`` | ``org``."""
    pattern = re.compile(trigger, flags)

    def rule(text: str, start: int, end: int) -> list[Candidate]:
        out: list[Candidate] = []
        for match in pattern.finditer(text, start, end):
            if guarded(text, start, match.start()):
                continue
            pos = match.end()
            if take == "name":
                span = proper_run(text, pos, end, max_words=4)
                if span is None or not _plausible_name(text, span, end, strict=weak):
                    continue
            elif take in {"place", "org"}:
                pos = _skip_the(text, pos)
                span = proper_run(text, pos, end, comma=take == "place")
                if (
                    span is None
                    or not _plausible_place(text, span)
                    or not ends_clause(text, span[1], end)
                ):
                    continue
            else:
                article = _ARTICLE.match(text, pos, end)
                at = article.end() if article else pos
                span = phrase(text, at, end, max_words=12 if take == "job" else 7)
                if span is not None and take == "job":
                    span = _job_head(text, span)
                    if len(text[span[0] : span[1]].split()) > 4:
                        continue
                if span is None:
                    continue
            value = text[span[0] : span[1]]
            out.append(Candidate(Fact(attribute, value), span[0], span[1], weak))
            if attribute == "name":
                out.extend(_after_name(text, span[1], end))
        return out

    return rule


_JOB_TAIL = re.compile(r"\s+(?:at|in|on|for|with|from|by)\s", re.I)


def _job_head(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """ "chef in a small restaurant" → "chef": a job without where it is done."""
    tail = _JOB_TAIL.search(text, span[0], span[1])
    return (span[0], tail.start()) if tail else span


_ARTICLE = re.compile(r"(?:an?|the)\s+", re.I)
_FROM = re.compile(r",?\s+from\s+", re.I)


def _after_name(text: str, pos: int, end: int) -> list[Candidate]:
    """ "I'm Bob from Oslo", "I am Henrik, a retired teacher from Aarhus": the job and origin
    that follow an introduction."""
    job = _APPOSITIVE_JOB.match(text, pos, end)
    if job is None:
        return _origin_at(text, pos, end)
    found = [Candidate(Fact("job", job.group(1)), job.start(1), job.end(1))]
    return found + _origin_at(text, job.end(1), end)


def _origin_at(text: str, pos: int, end: int) -> list[Candidate]:
    match = _FROM.match(text, pos, end)
    if not match:
        return []
    at = _skip_the(text, match.end())
    span = proper_run(text, at, end, comma=True)
    if span is None or not _plausible_place(text, span) or not ends_clause(text, span[1], end):
        return []
    return [Candidate(Fact("origin", text[span[0] : span[1]]), span[0], span[1])]


_CLAUSE_START = r"(?:^|(?<=[,;:!.])|(?<=\band))\s*"
_GREETING = (
    r"(?:(?:hi|hello|hey|yo|greetings|good\s+(?:morning|afternoon|evening))"
    r"(?:\s+there|\s+all|\s+everyone)?[,!.]?\s+)"
)
_ADV = r"(?:\s+(?:currently|now|still|actually|also|just|recently|presently|finally|already))?"


def _age_rule(text: str, start: int, end: int) -> list[Candidate]:
    out = []
    for pattern in _AGE:
        for match in pattern.finditer(text, start, end):
            if guarded(text, start, match.start()) or not 0 < int(match.group(1)) <= 120:
                continue
            out.append(Candidate(Fact("age", match.group(1)), match.start(1), match.end(1)))
    return out


_AGE = [
    re.compile(
        rf"\bi(?:'m|\s+am|m)\s+(\d{{1,3}})(?:\s+(?:years?|yrs?)(?:\s+old|\s+of\s+age)?|\s*y/?o)?{_NUMBER_END}",
        re.I,
    ),
    re.compile(
        r"\bi\s+(?:just\s+)?turned\s+(\d{1,3})"
        r"(?=\s*(?:[,.;!?]|$)|\s+(?:yesterday|today|last|this|on|in|recently|and|years?)\b)",
        re.I,
    ),
    re.compile(rf"\bmy\s+age\s+is\s+(\d{{1,3}}){_NUMBER_END}", re.I),
]

_JOB_NOUN = (
    rf"(?:[^\W\d_][\w-]*\s+){{0,2}}?(?:(?:{'|'.join(sorted(JOBS))})\b"
    r"|(?!(?:" + "|".join(sorted(NOT_JOBS)) + r")\b)[^\W\d_][\w-]*(?:er|or|ist|ian)\b)"
)
_JOB_END = r"(?=\s*(?:[,.;!?]|$)|\s+(?:at|for|in|on|and|by|from|with|who|but|working|since|now)\b)"
_JOB_A = re.compile(rf"\bi{_BE}(?:\s+(?:also|now))?\s+an?\s+({_JOB_NOUN}){_JOB_END}", re.I)
_APPOSITIVE_JOB = re.compile(rf",\s+an?\s+({_JOB_NOUN}){_JOB_END}", re.I)
_AT_ORG = re.compile(r"\s+(at|for|in)\s+", re.I)


def _job_rule(text: str, start: int, end: int) -> list[Candidate]:
    out = []
    for match in _JOB_A.finditer(text, start, end):
        if guarded(text, start, match.start()):
            continue
        out.append(Candidate(Fact("job", match.group(1)), match.start(1), match.end(1)))
        at = _AT_ORG.match(text, match.end(1), end)
        if at:  # "I'm a developer at Spotify", "I'm a teacher in Graz"
            pos = _skip_the(text, at.end())
            span = proper_run(text, pos, end, comma=at.group(1).lower() == "in")
            if span and _plausible_place(text, span) and ends_clause(text, span[1], end):
                slot = "location" if at.group(1).lower() == "in" else "works_at"
                out.append(Candidate(Fact(slot, text[span[0] : span[1]]), *span))
    return out


_TEACH = re.compile(r"\bi\s+(?:also\s+)?teach\s+", re.I)
_TEACH_NOT_SUBJECT = frozenset(
    "at in for online part-time full-time kids children students adults people".split()
)


def _teach_rule(text: str, start: int, end: int) -> list[Candidate]:
    """ "I teach chemistry" → job "chemistry teacher"; "I teach at a school" → "teacher"."""
    out = []
    for match in _TEACH.finditer(text, start, end):
        if guarded(text, start, match.start()):
            continue
        words = list(words_from(text, match.end(), end))
        if not words or words[0].group().lower() in WEAK_OBJECTS | {"my", "our", "a", "the"}:
            continue
        subject = words[0].group()
        value = "teacher" if subject.lower() in _TEACH_NOT_SUBJECT else f"{subject} teacher"
        out.append(Candidate(Fact("job", value), words[0].start(), words[0].end()))
    return out


_REL_NOUNS = "|".join(sorted(FAMILY | set(PET_KIND), key=len, reverse=True))
_MOD = rf"(?:(?:{'|'.join(RELATIVE_MODIFIERS)})\s+)?"
_MY_REL_IS = re.compile(
    rf"\b(?:my|our)\s+{_MOD}({_REL_NOUNS})(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+is)\s+",
    re.I,
)
_MY_REL_APPOS = re.compile(rf"\b(?:my|our)\s+{_MOD}({_REL_NOUNS}),?\s+(?=[^\W\d_])", re.I)
_HAVE_REL = re.compile(
    rf"\b{_I}(?:\s+have|'ve\s+got|\s+have\s+got|\s+own|\s+adopted|\s+got)\s+(?:an?|one|another)\s+"
    rf"(?:[^\W\d_][\w-]*\s+){{0,3}}?({_REL_NOUNS})(?:\s+pig)?,?\s+(?:called|named|whose\s+name\s+is)\s+",
    re.I,
)


_LIST_AFTER = re.compile(r"\s+(?:and|or)\s", re.I)


def _relative_slot(noun: str) -> str:
    noun = noun.lower()
    return f"{PET_KIND.get(noun, noun) if noun not in FAMILY else noun}'s name"


def _relative_rule(text: str, start: int, end: int) -> list[Candidate]:
    out: list[Candidate] = []
    for pattern, weak in ((_MY_REL_IS, False), (_HAVE_REL, False), (_MY_REL_APPOS, True)):
        for match in pattern.finditer(text, start, end):
            if guarded(text, start, match.start()):
                continue
            span = proper_run(text, match.end(), end, max_words=3)
            if span is None or not _plausible_name(text, span, end, strict=False):
                continue
            if weak and any(c.start == span[0] for c in out):
                continue
            if weak and "," in match.group() and _LIST_AFTER.match(text, span[1], end):
                continue  # "my brother, Sam and I": a list of people, not his name
            slot = _relative_slot(match.group(1))
            out.append(Candidate(Fact(slot, text[span[0] : span[1]]), *span, weak))
    return out


_RULES: list[Rule] = [
    _trigger_rule("name", r"\bmy\s+name(?:'s|\s+is)\s+", "name"),
    _trigger_rule(
        "name",
        r"\b(?:(?:you\s+can|just|please)\s+)?call\s+me\s+|\bi\s+go\s+by\s+"
        r"|\b(?:people|everyone|everybody|friends|they)\s+call(?:s)?\s+me\s+"
        r"|\bi(?:'m|\s+am)\s+called\s+",
        "name",
    ),
    _trigger_rule("name", rf"{_CLAUSE_START}{_GREETING}?\bi(?:'m|\s+am)\s+", "name", weak=True),
    _trigger_rule("name", rf"{_CLAUSE_START}{_GREETING}this\s+is\s+", "name", weak=True),
    _trigger_rule(
        "location",
        rf"\b{_I}{_ADV}(?:\s+live|\s+reside|{_BE}\s+living|{_BE}\s+based|{_BE}\s+located"
        r"|(?:'ve|\s+have)\s+(?:lived|been\s+living)|\s+stay)\s+in\s+",
        "place",
    ),
    _trigger_rule(
        "location",
        rf"\b{_I}{_ADV}(?:\s+moved|\s+relocated|(?:'ve|\s+have)\s+moved)\s+to\s+",
        "place",
    ),
    _trigger_rule("location", r"\b(?:home\s+for\s+me\s+is|my\s+home\s+is(?:\s+in)?)\s+", "place"),
    _trigger_rule(
        "origin",
        rf"\b{_I}(?:{_BE}|\s+come)\s+(?:originally\s+)?from\s+"
        rf"|\b{_I}\s+(?:was|were)\s+(?:born|raised)(?:\s+and\s+raised)?\s+in\s+"
        r"|\bi\s+grew\s+up\s+in\s+",
        "place",
    ),
    _trigger_rule(
        "job", r"\bi\s+(?:work|am\s+working|'m\s+working)(?:\s+[a-z-]+){0,2}?\s+as\s+", "job"
    ),
    _trigger_rule(
        "job",
        r"\bmy\s+(?:job|profession|occupation)\s+is\s+|\bi(?:'m|\s+am)\s+employed\s+as\s+",
        "job",
    ),
    _trigger_rule(
        "works_at",
        rf"\bi{_ADV}\s+(?:work|am\s+working|'m\s+working)\s+(?:at|for)\s+"
        r"|\bi(?:'m|\s+am)\s+employed\s+(?:at|by)\s+",
        "org",
    ),
    _age_rule,
    _job_rule,
    _teach_rule,
    _relative_rule,
    LIKES,
    DISLIKES,
    favorite_rule,
]
