"""PMMStore reads cross no more users than its writes do, and its paging is checked, on
every backend (issue 36): a store whose ``namespace_user`` names another user for a
namespace cannot ``get`` or ``search`` it (before: only its puts were refused), and
``search``/``list_namespaces`` refuse a negative ``limit`` or ``offset``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pmm.errors import InvalidInputError
from pmm.integrations import PMMStore
from pmm.testing.fixtures import *  # noqa: F403

PASSPORT = {"text": "passport ZQ-ANA-7731 in the oak drawer"}


@pytest.fixture
def ana_store(log_target: str) -> Iterator[PMMStore]:
    store = PMMStore(log_target, namespace_user=1)
    store.put(("memories", "ana"), "passport", PASSPORT)
    store.put(("memories", "bob"), "car", {"text": "the red car is in the garage"})
    try:
        yield store
    finally:
        store.close()


def test_a_store_whose_rule_names_another_user_cannot_read_her_namespace(
    ana_store: PMMStore,
) -> None:
    mallory = PMMStore(mind=ana_store.mind, namespace_user=lambda ns: "mallory")
    with pytest.raises(InvalidInputError, match="belongs to another user") as refused:
        mallory.get(("memories", "ana"), "passport")
    assert "ana" not in str(refused.value).replace("('memories', 'ana')", "")
    with pytest.raises(InvalidInputError, match="belongs to another user"):
        mallory.search(("memories", "ana"), query="passport")
    with pytest.raises(InvalidInputError, match="belongs to another user"):
        mallory.search(("memories",))  # a prefix over her namespace
    shifted = PMMStore(mind=ana_store.mind, namespace_user=0)  # a different rule
    with pytest.raises(InvalidInputError):
        shifted.get(("memories", "ana"), "passport")


def test_the_owners_rule_and_a_store_without_users_still_read(ana_store: PMMStore) -> None:
    item = ana_store.get(("memories", "ana"), "passport")
    assert item is not None and item.value == PASSPORT
    assert {tuple(i.namespace) for i in ana_store.search(("memories",))} == {
        ("memories", "ana"),
        ("memories", "bob"),
    }
    plain = PMMStore(mind=ana_store.mind)  # no rule: LangGraph's own semantics
    found = plain.get(("memories", "ana"), "passport")
    assert found is not None and found.value == PASSPORT
    agrees = PMMStore(mind=ana_store.mind, namespace_user=lambda ns: ns[1])
    assert len(agrees.search(("memories",), query="passport")) == 1


@pytest.mark.parametrize(("limit", "offset"), [(-1, 0), (10, -5), (-1, -5), (1.5, 0)])
def test_search_and_list_refuse_negative_paging(
    ana_store: PMMStore, limit: object, offset: object
) -> None:
    with pytest.raises(InvalidInputError, match=r"limit|offset"):
        ana_store.search(("memories",), limit=limit, offset=offset)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"limit|offset"):
        ana_store.list_namespaces(limit=limit, offset=offset)  # type: ignore[arg-type]
    assert ana_store.search(("memories",), limit=0) == []
