"""Keywords: the rule extractor, and spaCy (installed model, then the model-free pipeline)."""

from __future__ import annotations

import importlib.util

import pytest
from digest_examples import EXAMPLES

from pmm.digest.keywords import (
    BLANK_PIPELINE,
    SPACY_PIPELINES,
    SpacyKeywords,
    heuristic_keywords,
    load_spacy_pipeline,
    spacy_pipeline_status,
)

NEEDS_SPACY_MODEL = pytest.mark.skipif(
    not any(importlib.util.find_spec(name) for name in SPACY_PIPELINES),
    reason="no spaCy English pipeline installed",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Lisbon in March 2021 with Ana.", ["Lisbon", "March 2021", "Ana"]),
        ("We met in New York, then Paris.", ["New York", "Paris"]),
        ("She works at the Bank of America tower.", ["Bank of America"]),
        ("It costs $40 and starts at 8:15, 10% off.", ["$40", "8:15", "10%"]),
        (
            "The deadline is 14 June and the lease ends 31 January 2025.",
            ["14 June", "31 January 2025"],
        ),
        ("Dr. Okafor prescribed it.", ["Dr. Okafor"]),
        ("We deploy gpt-4o with Python 3.11.", ["gpt-4o", "Python", "3.11"]),
    ],
)
def test_names_and_numbers_come_first(text: str, expected: list[str]) -> None:
    keywords = heuristic_keywords(text, limit=10)
    assert keywords[: len(expected)] == expected


def test_rare_content_words_follow_by_frequency() -> None:
    text = "The kombucha was sour. I brew kombucha at home; kombucha needs a scoby and sugar."
    keywords = heuristic_keywords(text, limit=4)
    assert keywords[0] == "kombucha"
    assert "the" not in keywords and "was" not in keywords
    assert len(keywords) == 4


def test_sentence_openers_are_not_names() -> None:
    keywords = heuristic_keywords("Honestly, it was fine. Thanks again. Anyway, Maria called.", 8)
    assert "Maria" in keywords
    assert not {"Honestly", "Thanks", "Anyway"} & set(keywords)


def test_limit_and_duplicates() -> None:
    text = "Lisbon is lovely. I love lisbon. LISBON again, and Porto, Braga, Faro, Evora, Sintra."
    assert len(heuristic_keywords(text, limit=3)) == 3
    keywords = heuristic_keywords(text, limit=10)
    assert [k.lower() for k in keywords].count("lisbon") == 1
    assert {"Porto", "Braga", "Faro", "Evora", "Sintra"} <= set(keywords)
    assert heuristic_keywords(text, limit=0) == []
    assert heuristic_keywords("", limit=5) == []


@NEEDS_SPACY_MODEL
def test_spacy_entities_and_noun_chunks() -> None:
    extractor = SpacyKeywords()
    assert extractor.pipeline in SPACY_PIPELINES
    keywords = extractor.keywords(EXAMPLES[0].text, limit=10)
    for entity in ("Lisbon", "March 2021", "Ana", "1,450"):
        assert any(entity in k for k in keywords), (entity, keywords)
    assert "I" not in keywords and "we" not in keywords
    batch = extractor.keywords_many([e.text for e in EXAMPLES], limit=6)
    assert len(batch) == len(EXAMPLES)
    assert all(0 < len(k) <= 6 for k in batch)
    assert any("Munich" in k for k in batch[-1])


@NEEDS_SPACY_MODEL
def test_first_installed_pipeline_wins_and_is_cached() -> None:
    installed = next(name for name in SPACY_PIPELINES if importlib.util.find_spec(name))
    candidates = ("pmm_no_such_spacy_model", installed)
    nlp, name = load_spacy_pipeline(candidates)
    assert name == installed
    assert load_spacy_pipeline(candidates)[0] is nlp
    assert SpacyKeywords(candidates).pipeline == installed
    assert spacy_pipeline_status(candidates)[0] == installed


def test_without_a_model_spacy_blank_and_rules() -> None:
    pytest.importorskip("spacy")
    candidates = ("pmm_no_such_spacy_model",)
    assert spacy_pipeline_status(candidates)[0] == BLANK_PIPELINE
    extractor = SpacyKeywords(candidates)
    assert extractor.pipeline == BLANK_PIPELINE
    keywords = extractor.keywords("I moved to Lisbon in March 2021 with Ana.\n\nShe is 6.", 6)
    assert keywords[:4] == ["Lisbon", "March 2021", "Ana", "6"]


def test_long_text_is_clipped_for_spacy() -> None:
    pytest.importorskip("spacy")
    extractor = SpacyKeywords(("pmm_no_such_spacy_model",), max_chars=50)
    [keywords] = extractor.keywords_many(["Lisbon " + "x " * 100 + " Zanzibar"], limit=5)
    assert "Lisbon" in keywords and "Zanzibar" not in keywords
