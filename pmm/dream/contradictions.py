"""Contradictions: a newer user statement that replaces an older one of the same user.

    from pmm.dream.contradictions import find_contradictions

    report = find_contradictions(store, chat_model, embedder, similarity=0.4)
    report.candidates, report.llm_calls, report.superseded

Two ways to decide, both recorded the same way (a chained ``superseded`` event naming both
ids and the reason, and a ``SUPERSEDES`` edge newer → older, written once):

- Slots, no model: statements that set the same single-valued key fact (name, location,
  origin, age, job, employer; :mod:`pmm.facts` rules) to different values: the newer wins
  ("Lives in: Oslo" → "Lives in: Bergen"). The edge is ``SUPERSEDES_SLOT``: recall ranks the
  older statement below the newer one, and key facts (where FactBook already keeps the
  newest value of a slot) keep the older statement's other facts.
- With a chat model: only pairs of user statements of one session that share a keyword AND
  whose cosine similarity is above ``similarity`` are candidates (never every pair); the
  model is asked once per candidate pair whether the newer contradicts the older. Each pair
  asked is recorded (a ``CONTRADICTION_CHECKED`` edge), so a later dream does not ask again.

Cosine is taken over the embedder's vectors when there is an embedder, else over bag-of-word
counts. Only statements not scanned before are compared against the older ones.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pmm.embed.base import embed_texts
from pmm.facts import SINGLE_VALUED, extract_facts
from pmm.models.llm_json import json_object
from pmm.models.redact import error_text
from pmm.records import NewEvent
from pmm.text.words import STOPWORDS, WORD

if TYPE_CHECKING:
    from pmm.embed.base import Embedder
    from pmm.records import Event
    from pmm.storage.base import EventLog

log = logging.getLogger(__name__)

SUPERSEDES = "SUPERSEDES"
"""The newer statement makes the older one untrue as a whole (llm): left out of key facts."""
SLOT_SUPERSEDES = "SUPERSEDES_SLOT"
"""The newer statement replaces one key fact of the older one (its other facts stay)."""
CHECKED = "CONTRADICTION_CHECKED"
SCANNED = "CONTRADICTION_SCANNED"
MARKER_KIND = "superseded"
JUDGE_PROMPT_VERSION = "contradiction/1"
JUDGE_PROMPT = """\
You check a user's memory for outdated statements. You get an older and a newer statement \
by the same user. Answer whether the newer one contradicts or replaces the older one (it is \
no longer true), e.g. a new city, job, name or changed preference; statements that merely \
add information do not. Reply with only a JSON object: {"contradicts": true, "reason": "..."}"""


@dataclass(frozen=True, slots=True)
class ContradictionReport:
    """What one pass found: statements scanned, candidate pairs (after the pre-filter),
    chat-model calls made, and older statements marked superseded."""

    scanned: int = 0
    candidates: int = 0
    llm_calls: int = 0
    superseded: int = 0


def terms(text: str) -> set[str]:
    """Content words of a statement (lower-cased, no stopwords, 3+ characters)."""
    return {w for w in WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS}


def _keywords(event: Event) -> set[str]:
    found = {w for k in event.keywords for w in terms(k)}
    return found or terms(event.content or "")


def _bag_cosine(a: str, b: str) -> float:
    ca = Counter(w for w in WORD.findall(a.lower()) if w not in STOPWORDS)
    cb = Counter(w for w in WORD.findall(b.lower()) if w not in STOPWORDS)
    dot = sum(ca[w] * cb[w] for w in ca.keys() & cb.keys())
    norm = math.sqrt(sum(v * v for v in ca.values())) * math.sqrt(sum(v * v for v in cb.values()))
    return dot / norm if norm else 0.0


def candidate_pairs(
    statements: Sequence[Event],
    new_from: int,
    embedder: Embedder | None,
    similarity: float,
) -> list[tuple[Event, Event, float]]:
    """``(older, newer, cosine)`` for every newer statement (id > ``new_from``) and older
    one that share a keyword and whose cosine is above ``similarity``."""
    if not statements:
        return []
    texts = [s.content or "" for s in statements]
    vectors: np.ndarray[Any, Any] | None = None
    if embedder is not None:
        raw = embed_texts(embedder, texts)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        vectors = raw / np.where(norms == 0, 1, norms)
    keys = [_keywords(s) for s in statements]
    pairs: list[tuple[Event, Event, float]] = []
    for j, newer in enumerate(statements):
        if newer.id <= new_from:
            continue
        for i in range(j):
            if not keys[i] & keys[j]:
                continue
            if vectors is not None:
                cosine = float(vectors[i] @ vectors[j])
            else:
                cosine = _bag_cosine(texts[i], texts[j])
            if cosine > similarity:
                pairs.append((statements[i], newer, cosine))
    return pairs


def slot_supersessions(statements: Sequence[Event]) -> list[tuple[Event, Event, str]]:
    """``(older, newer, reason)`` where the newer statement sets a single-valued key fact
    to another value (no model call)."""
    holder: dict[str, tuple[Event, str]] = {}
    found: list[tuple[Event, Event, str]] = []
    for statement in statements:
        for fact in extract_facts(statement.content or ""):
            if fact.attribute not in SINGLE_VALUED:
                continue
            previous = holder.get(fact.attribute)
            if (
                previous is not None
                and previous[1].lower() != fact.value.lower()
                and previous[0].id != statement.id
            ):
                reason = f"{fact.attribute}: {previous[1]} -> {fact.value}"
                found.append((previous[0], statement, reason))
            holder[fact.attribute] = (statement, fact.value)
    return found


class MalformedJudgement(ValueError):
    """A reply that is not ``{"contradicts": bool, ...}``."""


def parse_judgement(content: Any) -> tuple[bool, str]:
    """``(contradicts, reason)`` from the model's reply text."""
    try:
        data = json_object(content)
    except ValueError as exc:
        raise MalformedJudgement(str(exc)) from exc
    if not isinstance(data.get("contradicts"), bool):
        raise MalformedJudgement(f"no boolean 'contradicts' in {str(data)[:80]!r}")
    return data["contradicts"], str(data.get("reason") or "").strip()


def ask_model(model: Any, older: str, newer: str) -> tuple[bool, str]:
    """One chat-model call: does ``newer`` contradict ``older``?"""
    from langchain_core.messages import HumanMessage, SystemMessage

    body = json.dumps({"older": older, "newer": newer}, ensure_ascii=False)
    reply = model.invoke([SystemMessage(content=JUDGE_PROMPT), HumanMessage(content=body)])
    return parse_judgement(reply.content)


def _mark(store: EventLog, older: Event, newer: Event, reason: str, method: str, kind: str) -> bool:
    marker = NewEvent(
        MARKER_KIND,
        f"event {older.id} superseded by event {newer.id}: {reason}",
        newer.session_id,
        "system",
        {"older": older.id, "newer": newer.id, "method": method},  # text only in content
    )
    return store.append_supersession(marker, newer=newer.id, older=older.id, kind=kind) is not None


def find_contradictions(
    store: EventLog,
    chat_model: Any,
    embedder: Embedder | None,
    *,
    similarity: float = 0.4,
    prefilter: bool = True,
) -> ContradictionReport:
    """One pass over the user statements not scanned yet (see the module docstring).

    ``prefilter=False`` asks the model about every pair (for the benchmark only)."""
    new_from = store.max_edge_src(SCANNED)
    newest = store.last_id(kinds=("prompt",))
    if newest <= new_from:
        return ContradictionReport()
    scanned = candidates = calls = superseded = 0
    warned = False
    sessions = {e.session_id for e in store.events(kinds=("prompt",), after_id=new_from)}
    for session in sorted(s for s in sessions if s is not None):
        statements = [
            e
            for e in store.events(session_id=session, kinds=("prompt",), before_id=newest + 1)
            if e.content and (e.role or "user") == "user"
        ]
        scanned += sum(1 for s in statements if s.id > new_from)
        for older, newer, reason in slot_supersessions(statements):
            if newer.id > new_from:
                superseded += _mark(store, older, newer, reason, "slot", SLOT_SUPERSEDES)
        if chat_model is None:
            continue
        if prefilter:
            pairs = candidate_pairs(statements, new_from, embedder, similarity)
        else:
            pairs = [
                (o, n, 0.0)
                for j, n in enumerate(statements)
                if n.id > new_from
                for o in statements[:j]
            ]
        asked = store.edge_targets({n.id for _, n, _ in pairs}, CHECKED)
        for older, newer, _ in pairs:
            if older.id in asked.get(newer.id, []):
                continue
            candidates += 1
            calls += 1
            try:
                contradicts, reason = ask_model(
                    chat_model, older.content or "", newer.content or ""
                )
            except Exception as exc:  # the pair stays unchecked: a later dream asks again
                if not warned:
                    warned = True
                    log.warning(  # redacted: a provider may echo the API key it refused
                        "contradiction check by the chat model failed (%s); "
                        "those pairs are asked again at the next dream",
                        error_text(exc, chat_model),
                    )
                continue
            store.add_edges([(newer.id, older.id, CHECKED)])
            if contradicts:
                superseded += _mark(
                    store, older, newer, reason or "contradicted", "llm", SUPERSEDES
                )
    store.add_edges([(newest, newest, SCANNED)])
    return ContradictionReport(scanned, candidates, calls, superseded)
