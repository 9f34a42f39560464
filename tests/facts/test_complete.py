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
        ("Oh, I love making her laugh.", []),
        ("I love fixing it up on Sundays.", []),
        ("Those birds are great, I like watching those birds.", []),
        ("I'm a fan of sounds like this!", []),
        # a definite description: something seen or said in the conversation
        ("Nice shot! I love the shape and light.", []),
        ("I love all the red roofs, so pretty.", []),
        ("I love the noise and crowds.", []),
        # the verb's object was not the liking's: a relative clause
        ("Helping the friends we love is important.", []),
        ("The songs I love make driving fun.", []),
        ("Finding something I love is great.", []),
        # cut inside a noun phrase, at a quotation, or a count without its things
        ("I'm passionate about building a calm, friendly place for kids.", []),
        ('We love playing "Catan" together.', []),
        ("I'm keen on three plans in particular.", []),
        ("It's a town I enjoy every day.", []),
        # a list of people is not an introduction
        ("My brother, Sam and I went sailing.", []),
        # cleaned, not dropped
        ("I like also fresh mango.", [Fact("likes", "fresh mango")]),
        ("I love growing my own tomatoes.", [Fact("likes", "growing their own tomatoes")]),
        ("I'm a fan of hiking - it clears my head.", [Fact("likes", "hiking")]),
        ("We love baking together lately.", [Fact("likes", "baking together")]),
        (
            "I love horror and war movies.",
            [Fact("likes", "horror movies"), Fact("likes", "war movies")],
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
            "I love songs that tell old legends.",
            [Fact("likes", "songs that tell old legends")],
        ),
        ("I love dramas and slow films.", [Fact("likes", "dramas"), Fact("likes", "slow films")]),
        ("My son, Leo, is five.", [Fact("son's name", "Leo")]),
        ("Ana and I love taking long walks.", [Fact("likes", "taking long walks")]),
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
            "Nice shot! I love the shape and light.",
            "I like also fresh mango.",
            "Oh, I love making her laugh.",
            "I love growing my own tomatoes.",
        ]
    )
    assert book.lines() == ["Likes: fresh mango, growing their own tomatoes"]
