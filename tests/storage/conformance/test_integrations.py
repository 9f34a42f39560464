"""The LangChain v1 pieces over either backend: PMMStore's key/value view and the
middleware's exactly-once message ids read the log through the same protocol calls."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

from pmm import Mind
from pmm.integrations import PMMStore


def test_pmmstore_put_get_search_delete_alike(log_target: str) -> None:
    store = PMMStore(log_target)
    try:
        store.put(("users", "alice"), "home", {"city": "Lisbon"})
        store.put(("users", "alice"), "home", {"city": "Porto"})
        store.put(("users", "alice"), "pet", {"text": "a grey cat called Pixel"})
        store.put(("users", "bob"), "home", {"city": "Oslo"})
        item = store.get(("users", "alice"), "home")
        assert item is not None and item.value == {"city": "Porto"}
        hits = store.search(("users", "alice"), query="Pixel cat", limit=5)
        assert [h.key for h in hits][:1] == ["pet"]
        assert {tuple(ns) for ns in store.list_namespaces(prefix=("users",))} == {
            ("users", "alice"),
            ("users", "bob"),
        }
        store.delete(("users", "alice"), "home")
        assert store.get(("users", "alice"), "home") is None
    finally:
        store.close()
    with Mind(log_target) as mind:  # every put and delete is a chained event
        report = mind.verify()
        assert report.ok and report.rows == 5


def test_stored_message_ids_alike(log_target: str) -> None:
    with Mind(log_target) as mind:
        mind.remember("hi", role="user", session_id="t1", meta={"message_id": "m1"})
        mind.remember("hello", role="assistant", session_id="t1", meta={"message_id": "m2"})
        mind.remember("other", role="user", session_id="t2", meta={"message_id": "m3"})
        assert mind.stored_message_ids("t1", ["m1", "m2", "m3", "m4"]) == {"m1", "m2"}
