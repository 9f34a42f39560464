"""Key facts are complete statements about the user: a value that needs its turn to be read
(a pronoun, "the colour" of a photo, a clause cut at a comma) is dropped, not shown.

Generated sentences, in the shapes the fragments took on real dialog (issue 37)."""

from __future__ import annotations

import pytest

from pmm.facts import Fact, FactBook, extract_facts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a word that points into the conversation
        ("Oh, I love making him happy.", []),
        ("I love working on it to relax.", []),
        ("Those birds are great, I like watching those birds.", []),
        ("I'm a big fan of smells like this!", []),
        # a definite description: something seen or said in the conversation
        ("What a photo! I love the color and texture.", []),
        ("I love all the yellow leaves, so cozy.", []),
        ("I love the energy and food.", []),
        # the verb's object was not the liking's: a relative clause
        ("Remembering the people we love is important.", []),
        ("The books I love make reading fun.", []),
        ("Doing something I love is awesome.", []),
        # cut inside a noun phrase, at a quotation, or a count without its things
        ("I'm passionate about building a calm, friendly place for kids.", []),
        ('We love playing "Catan" together.', []),
        ("I'm keen on two ideas in particular.", []),
        ("It's a job I enjoy every day.", []),
        # a list of people is not an introduction
        ("My brother, Sam and I went fishing.", []),
        # cleaned, not dropped
        ("I like also cheese pizza.", [Fact("likes", "cheese pizza")]),
        ("I love running my own bakery.", [Fact("likes", "running their own bakery")]),
        ("I'm a fan of hiking - it clears my head.", [Fact("likes", "hiking")]),
        ("We love painting together lately.", [Fact("likes", "painting together")]),
        (
            "I love action and horror movies.",
            [Fact("likes", "action movies"), Fact("likes", "horror movies")],
        ),
        (
            "I'm into folk and jazz music.",
            [Fact("likes", "folk music"), Fact("likes", "jazz music")],
        ),
    ],
)
def test_a_fragment_is_dropped_or_completed(text: str, expected: list[Fact]) -> None:
    assert extract_facts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I love the ocean.", [Fact("likes", "the ocean")]),
        ("I'm a huge fan of the Beatles.", [Fact("likes", "the Beatles")]),
        (
            "I love stories that tackle hard questions.",
            [Fact("likes", "stories that tackle hard questions")],
        ),
        ("I love dramas and slow films.", [Fact("likes", "dramas"), Fact("likes", "slow films")]),
        ("My son, Leo, is five.", [Fact("son's name", "Leo")]),
        ("Max and I love taking long walks.", [Fact("likes", "taking long walks")]),
    ],
)
def test_a_complete_statement_is_kept(text: str, expected: list[Fact]) -> None:
    """What reads alone stays (these held before the change too: the guard against dropping
    too much)."""
    assert extract_facts(text) == expected


def test_the_book_shows_only_complete_likes() -> None:
    book = FactBook()
    book.extend(
        [
            "What a photo! I love the color and texture.",
            "I like also cheese pizza.",
            "Oh, I love making him happy.",
            "I love running my own bakery.",
        ]
    )
    assert book.lines() == ["Likes: cheese pizza, running their own bakery"]
