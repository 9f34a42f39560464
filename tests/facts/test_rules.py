"""Key-information rules: they find what users say about themselves and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmm import Mind
from pmm.facts import Fact, FactBook, extract_facts, slot_group


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the cases of issue 13, word for word
        ("I live in Évora.", [Fact("location", "Évora")]),
        ("My name is Ana Évora.", [Fact("name", "Ana Évora")]),
        ("I live in Łódź.", [Fact("location", "Łódź")]),
        ("Hi, I'm Bob from Oslo.", [Fact("name", "Bob"), Fact("origin", "Oslo")]),
        (
            "Hello, I am Ines from Faro and I teach chemistry.",
            [Fact("name", "Ines"), Fact("origin", "Faro"), Fact("job", "chemistry teacher")],
        ),
        ("I have a grey cat called Pixel who is 7 years old.", [Fact("cat's name", "Pixel")]),
        ("I have a dog named Rex.", [Fact("dog's name", "Rex")]),
        # what the rules found before, still found
        (
            "Hi, my name is Ana Sousa and I live in Lisbon.",
            [Fact("name", "Ana Sousa"), Fact("location", "Lisbon")],
        ),
        ("I'm Bob.", [Fact("name", "Bob")]),
        ("Call me Liz.", [Fact("name", "Liz")]),
        ("MY NAME IS Carl", [Fact("name", "Carl")]),
        ("I moved to New York last year.", [Fact("location", "New York")]),
        ("I live in Rio de Janeiro now.", [Fact("location", "Rio de Janeiro")]),
        ("I'm from São Paulo, Brazil.", [Fact("origin", "São Paulo, Brazil")]),
        ("I'm 34 years old.", [Fact("age", "34")]),
        ("I'm a data scientist.", [Fact("job", "data scientist")]),
        ("I work at Acme Corp.", [Fact("works_at", "Acme Corp")]),
        ("I love hiking in the mountains.", [Fact("likes", "hiking in the mountains")]),
        ("I don't like loud music.", [Fact("dislikes", "loud music")]),
        ("My favorite color is green.", [Fact("favorite color", "green")]),
        ("My dog is called Rex.", [Fact("dog's name", "Rex")]),
        # ordinary statements of each slot
        ("I'm 34", [Fact("age", "34")]),
        ("I am 34 years old.", [Fact("age", "34")]),
        ("My sister Joana is a doctor.", [Fact("sister's name", "Joana")]),
        ("My wife is called María José.", [Fact("wife's name", "María José")]),
        ("I love hiking.", [Fact("likes", "hiking")]),
        ("I hate olives.", [Fact("dislikes", "olives")]),
        ("I love to swim.", [Fact("likes", "swimming")]),
        ("I love swimming and cycling.", [Fact("likes", "swimming"), Fact("likes", "cycling")]),
        ("I work as a chef in a small restaurant.", [Fact("job", "chef")]),
        ("I'm a teacher in Graz.", [Fact("job", "teacher"), Fact("location", "Graz")]),
        (
            "I am Henrik, a retired history teacher from Aarhus.",
            [
                Fact("name", "Henrik"),
                Fact("job", "retired history teacher"),
                Fact("origin", "Aarhus"),
            ],
        ),
        ("We have a golden retriever named Max.", [Fact("dog's name", "Max")]),
        ("I'm 38, is that too late?", [Fact("age", "38")]),
        ("I live in the Netherlands.", [Fact("location", "Netherlands")]),
        ("I’m Ørjan and I’m from Tromsø.", [Fact("name", "Ørjan"), Fact("origin", "Tromsø")]),
    ],
)
def test_statements_about_the_user_are_found(text: str, expected: list[Fact]) -> None:
    assert extract_facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I am tired",
        "I'm tired.",
        "I am not sure",
        "I'm not sure.",
        "I'm going to Paris tomorrow",
        "I'm from the future.",
        "I'm English.",
        "I am in a hurry",
        "I'm Sorry",
        "I'm Exhausted after today.",
        "I'm looking for a job",
        "i'm bob",  # not capitalised: too weak to call a name without a parser
        "I am Python developer",
        "I am happy to help",
        "I like it",
        "I'd like a refund",
        "I love that idea!",
        "I'm a beginner.",
        "What is my name?",
        "Do I live in Paris?",
        "Do you live in Oslo?",
        "Do you live in Oslo",
        "I don't live in Oslo anymore.",
        "I no longer work at Google.",
        "I'm not from Oslo.",
        "I used to live in Boston.",
        "My friend lives in Rome.",
        "My friend is from Łódź.",
        "My friend's dog is named Bolt.",
        "He is 34 years old.",
        "My cat is 7 years old.",
        'He said, "I live in Rome."',
        "If I lived in Paris I would eat croissants every day.",
        "The book says I am Spartacus.",
        "I live in the city",
        "I moved to a new flat",
        "The user said my name is Bob?",
        "I'm 5 minutes away.",
        "I am Monday's host",
    ],
)
def test_small_talk_is_not_a_fact(text: str) -> None:
    assert extract_facts(text) == []


def test_curly_apostrophes_and_offsets_survive() -> None:
    assert extract_facts("My husband’s name is Ólafur.") == [Fact("husband's name", "Ólafur")]


@pytest.mark.parametrize(
    ("attribute", "group"),
    [
        ("sister's name", "family"),
        ("cat's name", "pet"),
        ("favorite color", "favorite"),
        ("name", "name"),
    ],
)
def test_slot_groups(attribute: str, group: str) -> None:
    assert slot_group(attribute) == group


def test_later_statements_replace_single_valued_facts() -> None:
    book = FactBook()
    book.extend(["I live in Porto", "I love jazz.", "I moved to Lisbon", "I love sushi"])
    assert book.lines() == ["Lives in: Lisbon", "Likes: jazz, sushi"]
    assert book.values("location") == ["Lisbon"]


def test_a_pet_or_relative_keeps_its_newest_name() -> None:
    book = FactBook()
    book.extend(["I have a dog named Rex.", "My dog is called Bolt.", "My sister Joana is here."])
    assert book.lines() == ["Dog's name: Bolt", "Sister's name: Joana"]


def test_name_comes_first_and_clear_empties() -> None:
    book = FactBook()
    book.extend(["I love tea", "My name is Ana"])
    assert book.lines()[0] == "Name: Ana"
    book.clear()
    assert not book


def test_only_the_users_own_turns_give_facts(tmp_path: Path) -> None:
    with Mind(str(tmp_path / "pmm.db")) as mind:
        mind.remember_turn(
            "Do you live in Oslo?", "I live in Évora and my name is Eva.", session_id="s"
        )
        mind.remember("I live in Łódź.", role="assistant", session_id="s")
        mind.remember("My name is Sys.", role="system", session_id="s")
        assert mind.context("s").facts == []
        mind.remember_turn("Hi, I'm Bob from Oslo.", "Hi Bob!", session_id="s")
        assert mind.context("s").facts == ["Name: Bob", "From: Oslo"]
