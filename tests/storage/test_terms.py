"""The query-word rules shared by the storage backends (pmm/storage/terms.py)."""

from __future__ import annotations

import pytest

from pmm.errors import InvalidInputError
from pmm.storage.terms import checked_words, pick_terms


def test_checked_words_takes_any_iterable_of_str() -> None:
    assert checked_words(("coffee", "work")) == ["coffee", "work"]
    assert checked_words(w for w in ["violin"]) == ["violin"]
    assert checked_words([]) == []


@pytest.mark.parametrize("bad", ["coffee", 5, ["coffee", 3], [None]])
def test_checked_words_refuses_a_lone_string_or_other_values(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="iterable of str"):
        checked_words(bad)  # type: ignore[arg-type]


def test_pick_terms_drops_words_held_by_most_events() -> None:
    docs = {"the": 900, "violin": 3, "lesson": 40}
    picked = pick_terms(["the", "violin", "lesson"], 5000, docs.__getitem__)
    assert picked.words == ["violin", "lesson"] and not picked.common
    every = pick_terms(["the", "a"], 5000, {"the": 900, "a": 800}.__getitem__)
    assert every.words == ["a"] and every.common
