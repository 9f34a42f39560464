"""Key-information rules: they find what users say about themselves and nothing else."""

from __future__ import annotations

import pytest

from pmm.facts import Fact, FactBook, extract_facts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
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
        "I'm going to Paris tomorrow",
        "I'm English.",
        "I am in a hurry",
        "I'm Sorry",
        "I'm looking for a job",
        "i'm bob",  # not capitalised: too weak to call a name
        "I am Python developer",
        "I like it",
        "I'd like a refund",
        "What is my name?",
        "Do I live in Paris?",
        "I live in the city",
        "I moved to a new flat",
        "The user said my name is Bob?",
        "I'm happy today",
        "I am Monday's host",
    ],
)
def test_small_talk_is_not_a_fact(text: str) -> None:
    assert extract_facts(text) == []


def test_later_statements_replace_single_valued_facts() -> None:
    book = FactBook()
    book.extend(["I live in Porto", "I love jazz.", "I moved to Lisbon", "I love sushi"])
    assert book.lines() == ["Lives in: Lisbon", "Likes: jazz, sushi"]
    assert book.values("location") == ["Lisbon"]


def test_name_comes_first_and_clear_empties() -> None:
    book = FactBook()
    book.extend(["I love tea", "My name is Ana"])
    assert book.lines()[0] == "Name: Ana"
    book.clear()
    assert not book
