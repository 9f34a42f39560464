"""The chat's OFFLINE mode: answers from memory alone, about what was asked, nothing more.

    responder = OfflineResponder()
    print(responder.banner)        # said once, when the chat starts
    responder.reply(mind, "alice", "Where do I live?")
    # "From memory: Lives in: Lisbon."
    responder.reply(mind, "alice", "I have a dog named Rex.")
    # "Noted: I'll remember that."

A question gets the key facts whose topic it asks about (``where`` → where you live or come
from, ``name`` → your name, ...; every fact for "what do you know about me?") and the turns
recall finds for it, minus the user's own earlier questions (a question is no answer) and
the offline replies themselves. A statement is only acknowledged. The replies are stored
with kind :data:`OFFLINE_REPLY_KIND`, not as assistant turns: they stay in the log (what
you were shown is recorded) but never fill the history, the context or recall.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pmm.text.words import snippet

if TYPE_CHECKING:
    from pmm.mind import Mind
    from pmm.records import Hit

OFFLINE_PREFIX = "I'm offline (no OPENAI_API_KEY)."
"""How earlier versions opened every offline reply (the banner says it once now); kept to
tell their stored replies apart (:func:`is_offline_reply`)."""
OFFLINE_REPLY_KIND = "offline_reply"
"""Kind of the stored offline replies: not a turn kind, so never history or recall."""

_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_QUESTION_STARTS = frozenset(
    "what where who whom whose when why how which do does did is are am was were can could "
    "would will should have has tell remind".split()
)
_EVERYTHING = (
    re.compile(r"\b(?:know|remember)\b.*\babout me\b", re.I),
    re.compile(r"\babout myself\b|\beverything\b|\ball (?:the )?facts\b", re.I),
)
_TOPICS: dict[str, frozenset[str]] = {
    "Name": frozenset("name named called who".split()),
    "Lives in": frozenset("live lives living where home city town country based".split()),
    "From": frozenset("from origin originally born grew where".split()),
    "Age": frozenset("age old born birthday".split()),
    "Works as": frozenset("work works job profession occupation career".split()),
    "Works at": frozenset("work works company employer job where".split()),
    "Likes": frozenset("like likes love loves enjoy favourite favorite hobby hobbies".split()),
    "Dislikes": frozenset("dislike dislikes hate hates like".split()),
}
_STOP = frozenset("i me my you your the a an of do does did is are am what about".split())
_JOB_QUESTION = re.compile(r"\b(?:for a living|do for work|what do i do)\b", re.IGNORECASE)
"""Asking for a job in words that name none ("what do I do for a living?": not where I live)."""


class OfflineResponder:
    """Answers from memory alone (see the module docstring)."""

    banner = "OFFLINE (no OPENAI_API_KEY): replies come from memory only"
    reply_kind = OFFLINE_REPLY_KIND

    def reply(self, mind: Mind, session: str, text: str, user: str | None = None) -> str:
        if not is_question(text):
            return "Noted: I'll remember that."
        facts = relevant_facts(mind.context(session, query=None, user_id=user).facts, text)
        scope = mind.settings.recall_scope
        if user is not None and scope == "user":  # all of her threads, no one else's
            hits = mind.recall(text, 3, user_id=user)
        else:
            hits = mind.recall(text, 3, session_id=None if scope == "all" else session)
        said = [_said(h) for h in hits if _is_answer(h, text)]
        parts: list[str] = []
        if facts:
            parts.append("; ".join(facts) + ".")
        if said:
            parts.append("Related: " + "; ".join(said) + ".")
        if not parts:
            return "From memory: nothing about that yet."
        return "From memory: " + " ".join(parts)


def is_question(text: str) -> bool:
    """``Where do I live?``, ``tell me my name`` → True; ``I live in Oslo.`` → False."""
    stripped = text.strip()
    if stripped.endswith("?"):
        return True
    words = _WORDS.findall(stripped.lower())
    return bool(words) and words[0].split("'")[0] in _QUESTION_STARTS


def relevant_facts(facts: list[str], question: str) -> list[str]:
    """The facts (``"Label: value"``) that ``question`` asks about: by topic words (``where``
    → ``Lives in``/``From``), by a word of the label or the value; all of them for "what do
    you know about me?"."""
    if any(pattern.search(question) for pattern in _EVERYTHING):
        return list(facts)
    words = {w.lower() for w in _WORDS.findall(question)} - _STOP
    if _JOB_QUESTION.search(question):
        words = (words - {"living", "live"}) | {"job"}
    chosen = []
    for fact in facts:
        label, _, value = fact.partition(":")
        topic = _TOPICS.get(label.strip(), frozenset())
        own = {w.lower() for w in _WORDS.findall(label + " " + value)} - _STOP
        if words & (topic | own):
            chosen.append(fact)
    return chosen


def is_offline_reply(hit: Hit) -> bool:
    """An offline reply (stored as an assistant turn by earlier versions)."""
    event = hit.event
    return event.kind == OFFLINE_REPLY_KIND or (
        event.role == "assistant" and event.text.startswith(OFFLINE_PREFIX)
    )


def _is_answer(hit: Hit, question: str) -> bool:
    """Whether a recalled turn can answer: not an offline reply, not this very message,
    not one of the user's own questions."""
    event = hit.event
    if not event.content or is_offline_reply(hit):
        return False
    if event.content.strip() == question.strip():
        return False
    return not (event.role == "user" and is_question(event.content))


def _said(hit: Hit) -> str:
    who = "you" if hit.event.role == "user" else "I"
    return f'{who} said "{snippet(hit.event.text, 100)}" ({hit.event.ts[:10]})'
