"""Query words: plain, lower-cased, without stopwords, possessives or search syntax."""

from __future__ import annotations

from pmm.text.words import search_terms, snippet, words


def test_search_terms() -> None:
    assert search_terms('What is my dog’s name? "AND" (NEAR) Rex*') == [
        "dog",
        "name",
        "near",
        "rex",
    ]
    assert search_terms("O'Brien's pub") == ["o'brien", "pub"]
    assert search_terms("the and of") == ["the", "and", "of"]  # nothing else left
    assert search_terms("   ") == []


def test_words_and_snippet() -> None:
    assert words("Don't stop (now)!") == ["Don't", "stop", "now"]
    assert snippet("a  long\nline", 8) == "a long …"
    assert snippet("short", 8) == "short"
