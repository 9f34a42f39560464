"""Session summaries as cited bullet points, built from the turns' digests (never raw text).

    from pmm.dream.session_summaries import heuristic_bullets, LLMSessionSummarizer, render

    bullets = heuristic_bullets(turns)                 # no model: informative sentences
    result = LLMSessionSummarizer(chat_model).summarize(turns)
    result.bullets, result.dropped                     # bullets citing foreign ids dropped
    render(bullets)   # '- User: I moved to Lisbon in 2021. [12]\\n- ...'

Every bullet cites the ids of the turns that support it. The llm summarizer asks for 6-12
bullets; a bullet citing an id outside the session's covered turns (or none) is dropped and
counted; a reply that is not JSON, or keeps no bullet, is asked again once, then
:class:`~pmm.errors.BackendError` is raised (the caller falls back to the heuristic).

``compress`` is meta-consolidation: a summary over the word limit is rewritten as about N
sentences; the result is refused (:class:`~pmm.errors.BackendError`) when it drops a number
the longer one holds, cites foreign ids, or is not shorter.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from pmm.digest.heuristic import split_sentences
from pmm.errors import BackendError
from pmm.events.roles import speaker_label, without_speaker
from pmm.models.llm_json import json_object
from pmm.text.words import STOPWORDS, WORD

if TYPE_CHECKING:
    from pmm.records import Event

HEURISTIC_VERSION = "heuristic-bullets/1"
SUMMARY_PROMPT_VERSION = "session-summary/1"
COMPRESS_PROMPT_VERSION = "compress-summary/1"
MIN_BULLETS = 6
MAX_BULLETS = 12

SUMMARY_PROMPT = """\
You consolidate the memory of one conversation session. You get the notes of its turns, \
each with its id and speaker. Write 6 to 12 bullet points (fewer only when the session \
holds fewer facts) that together keep every fact worth remembering: names, numbers, dates, \
places, decisions, preferences and plans, exactly as written. Each bullet cites the ids of \
the turns that support it, and only ids that were given. Reply with only a JSON object:
{"bullets": [{"text": "...", "turns": [12, 15]}]}"""

COMPRESS_PROMPT = """\
You compress the memory of a conversation session. Rewrite the bullet points you get as \
about {sentences} sentences that keep every fact (every name, number, date, place and \
preference) and drop only repetition. Each sentence cites the ids of the turns that support \
it, taken from the ids the bullets cite. Reply with only a JSON object:
{{"bullets": [{{"text": "...", "turns": [12, 15]}}]}}"""

_CITATION = re.compile(r"\s*\[(\d+(?:,\s*\d+)*)\]\s*$")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


@dataclass(frozen=True, slots=True)
class Bullet:
    """One line of a session summary and the turn ids that support it."""

    text: str
    turns: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """Bullets and how many the model's reply had that were dropped (foreign citations)."""

    bullets: list[Bullet]
    dropped: int = 0
    calls: int = 0


def render(bullets: Sequence[Bullet]) -> str:
    """The stored text: one ``- text [id, id]`` line per bullet."""
    return "\n".join(f"- {b.text} [{', '.join(str(i) for i in b.turns)}]" for b in bullets)


def parse_rendered(text: str) -> list[Bullet]:
    """The bullets of a stored summary (inverse of :func:`render`)."""
    bullets = []
    for line in text.splitlines():
        line = line.strip().removeprefix("- ").strip()
        match = _CITATION.search(line)
        if not line:
            continue
        ids = tuple(int(i) for i in match.group(1).split(",")) if match else ()
        bullets.append(Bullet(line[: match.start()] if match else line, ids))
    return bullets


def word_count(text: str) -> int:
    return len(text.split())


def _terms(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS}


def heuristic_bullets(turns: Sequence[Event], *, max_bullets: int = MAX_BULLETS) -> list[Bullet]:
    """Bullets from the turns' digests without a model: sentences picked greedily for the
    session's keywords they cover (each term weighted by how many turns mention it),
    divided by the square root of their length, kept in conversation order; the same
    sentence said in several turns becomes one bullet citing them all."""
    units: dict[str, tuple[str, list[int], set[str]]] = {}
    for turn in turns:
        digest = without_speaker(turn.role, turn.summary or "")
        label = speaker_label(turn.role)
        for sentence in split_sentences(digest):
            key = " ".join(sentence.lower().split())
            if not _terms(sentence):
                continue
            text = f"{label}: {sentence}" if label else sentence
            if key in units:
                units[key][1].append(turn.id)
            else:
                units[key] = (text, [turn.id], _terms(sentence))
    if not units:
        return []
    weight: Counter[str] = Counter()
    for turn in turns:
        weight.update(_terms(without_speaker(turn.role, turn.summary or "")))
        weight.update({k.lower() for k in turn.keywords for k in _terms(k)})
    items = list(units.values())
    covered: set[str] = set()
    chosen: list[int] = []
    while len(chosen) < min(max_bullets, len(items)):
        best, best_gain = -1, 0.0
        for index, (text, _, terms) in enumerate(items):
            if index in chosen:
                continue
            fresh = terms - covered
            gain = sum(1.0 + math.log(weight[t]) for t in fresh) + 2.0 * len(
                _NUMBER.findall(text)
            ) * bool(fresh)
            gain /= math.sqrt(max(len(text.split()), 4))
            if gain > best_gain:
                best, best_gain = index, gain
        if best < 0:
            break
        chosen.append(best)
        covered |= items[best][2]
    chosen.sort()  # conversation order: units were made turn by turn, sentence by sentence
    return [Bullet(items[i][0], tuple(items[i][1])) for i in chosen]


class _BulletModel(BaseModel):
    text: str
    turns: list[int] = Field(default_factory=list)


class _BulletReply(BaseModel):
    bullets: list[_BulletModel]


class MalformedSummary(ValueError):
    """A reply that is not a usable list of cited bullets."""


def _parse(content: Any) -> _BulletReply:
    try:
        return _BulletReply.model_validate(json_object(content))
    except ValueError as exc:  # ValidationError is a ValueError
        raise MalformedSummary(f"the reply is not a list of bullets: {exc}") from exc


def _validated(reply: _BulletReply, allowed: Collection[int]) -> tuple[list[Bullet], int]:
    """Bullets whose every citation is one of ``allowed``; the others are counted."""
    if len(reply.bullets) > MAX_BULLETS:
        raise MalformedSummary(f"{len(reply.bullets)} bullets, at most {MAX_BULLETS} wanted")
    kept: list[Bullet] = []
    dropped = 0
    for item in reply.bullets:
        text = " ".join(item.text.split())
        ids = tuple(dict.fromkeys(item.turns))
        if not text or not ids or any(i not in allowed for i in ids):
            dropped += 1
            continue
        kept.append(Bullet(text, ids))
    if not kept:
        raise MalformedSummary(f"no bullet left after dropping {dropped} with bad citations")
    return kept, dropped


class LLMSessionSummarizer:
    """Session summaries and their compression by a LangChain chat model (JSON replies).

    ``retries`` extra calls are made for a malformed reply; every call is counted in the
    result's ``calls``."""

    name = "llm"

    def __init__(self, model: Any, *, retries: int = 1, max_input_chars: int = 24_000) -> None:
        self.model = model
        self.retries = retries
        self.max_input_chars = max_input_chars
        self.calls = 0
        """Chat-model calls made so far (failed and retried ones included)."""

    def _ask(self, system: str, body: str, allowed: Collection[int]) -> SummaryResult:
        from langchain_core.messages import HumanMessage, SystemMessage

        messages = [SystemMessage(content=system), HumanMessage(content=body)]
        problem = ""
        for attempt in range(1, self.retries + 2):
            self.calls += 1
            try:
                content = self.model.invoke(messages).content
            except Exception as exc:
                raise BackendError(
                    f"the chat model call failed: {type(exc).__name__}: {exc}"
                ) from exc
            try:
                bullets, dropped = _validated(_parse(content), allowed)
                return SummaryResult(bullets, dropped, attempt)
            except MalformedSummary as exc:
                problem = str(exc)
        raise BackendError(
            f"the chat model returned a malformed summary {self.retries + 1} times: {problem}"
        )

    def summarize(self, turns: Sequence[Event]) -> SummaryResult:
        """6-12 cited bullets from the turns' digests (see the module docstring)."""
        notes: list[dict[str, Any]] = []
        used = 0
        for turn in reversed(turns):  # the newest notes are kept when the input is long
            used += len(turn.summary or "") + 40
            if used > self.max_input_chars and notes:
                break
            notes.append({"id": turn.id, "speaker": turn.role or "unknown", "note": turn.summary})
        notes.reverse()
        body = json.dumps({"turns": notes}, ensure_ascii=False, indent=1)
        return self._ask(SUMMARY_PROMPT, body, {int(n["id"]) for n in notes})

    def compress(self, bullets: Sequence[Bullet], sentences: int) -> SummaryResult:
        """About ``sentences`` cited sentences that keep every fact of ``bullets``;
        BackendError when the reply loses a number, cites foreign ids or is no shorter."""
        allowed = {i for b in bullets for i in b.turns}
        result = self._ask(COMPRESS_PROMPT.format(sentences=sentences), render(bullets), allowed)
        before = " ".join(b.text for b in bullets)
        after = " ".join(b.text for b in result.bullets)
        lost = set(_NUMBER.findall(before)) - set(_NUMBER.findall(after))
        if lost:
            raise BackendError(f"the compressed summary lost {sorted(lost)[:5]}")
        if word_count(after) >= word_count(before):
            raise BackendError("the compressed summary is not shorter")
        return result
