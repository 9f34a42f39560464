"""spaCy over the fact rules: loaded lazily and once, it drops what its parse contradicts and
adds what the rules miss; without it the rules answer after one warning."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from pmm import Mind
from pmm.errors import MissingDependencyError
from pmm.facts import Fact, FactBook, extract_facts, nlp
from pmm.facts.evaluate import evaluate, load_cases

CASES = Path(__file__).resolve().parent / "data" / "facts_cases.jsonl"


@pytest.fixture
def no_spacy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """spaCy made unloadable; yields the list of load attempts."""
    import pmm.digest.keywords as keywords

    attempts: list[int] = []

    def refuse(*args: object, **kwargs: object) -> object:
        attempts.append(1)
        raise MissingDependencyError("spaCy keywords", "spacy", "local")

    monkeypatch.setattr(keywords, "load_spacy_pipeline", refuse)
    monkeypatch.setattr(nlp, "_STATE", {})
    yield attempts


def test_without_spacy_the_rules_answer_after_one_warning(
    no_spacy: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="pmm.facts"):
        first = extract_facts("Hi, I'm Bob from Oslo.", nlp=True)
        second = extract_facts("I live in Łódź.", nlp=True)
    assert first == [Fact("name", "Bob"), Fact("origin", "Oslo")]
    assert second == [Fact("location", "Łódź")]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "rules only" in warnings[0].getMessage()
    assert len(no_spacy) == 1  # tried once per process, not once per turn


def test_importing_pmm_does_not_load_spacy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pmm, pmm.facts; pmm.facts.extract_facts('I am Bob'); "
        "print('spacy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def parser() -> object:
    pytest.importorskip("spacy")
    loaded = nlp.pipeline()
    if loaded is None:
        pytest.skip("no spaCy model with a parser installed")
    return loaded


@pytest.mark.parametrize(
    ("text", "rules", "refined"),
    [
        ("I'm Overjoyed.", [Fact("name", "Overjoyed")], []),
        ("I'm Mongolian.", [Fact("name", "Mongolian")], []),
        ("i live in oslo", [], [Fact("location", "oslo")]),
        ("I live with my parents in Braga.", [], [Fact("location", "Braga")]),
        (
            "Hello, I am Ines from Faro and I teach chemistry.",
            [Fact("name", "Ines"), Fact("origin", "Faro"), Fact("job", "chemistry teacher")],
            [Fact("name", "Ines"), Fact("origin", "Faro"), Fact("job", "chemistry teacher")],
        ),
        ("Do you live in Oslo?", [], []),
        ("i don't live in oslo", [], []),
        ("my friend lives in rome", [], []),
    ],
)
def test_the_parse_corrects_the_rules(
    parser: object, text: str, rules: list[Fact], refined: list[Fact]
) -> None:
    assert extract_facts(text) == rules
    assert extract_facts(text, nlp=True) == refined


def test_rules_with_spacy_stay_above_their_floors(parser: object) -> None:
    report = evaluate(load_cases(CASES), nlp=True)
    assert report.overall.precision >= 0.98
    assert report.overall.recall >= 0.97


def test_mind_uses_spacy_only_when_the_setting_asks(parser: object, tmp_path: Path) -> None:
    with Mind(str(tmp_path / "a.db"), facts_nlp=True) as mind:
        mind.remember_turn("i live in oslo", "ok", session_id="s")
        assert "Lives in: oslo" in mind.context("s").facts
    with Mind(str(tmp_path / "b.db")) as mind:
        mind.remember_turn("i live in oslo", "ok", session_id="s")
        assert mind.context("s").facts == []


def test_fact_book_passes_the_flag(no_spacy: list[int]) -> None:
    book = FactBook(nlp=True)
    book.add("I'm Bob.")
    assert book.lines() == ["Name: Bob"] and len(no_spacy) == 1
