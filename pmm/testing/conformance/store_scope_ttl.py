"""PMMStore on every backend: a namespace search ranks within its namespace whatever the
rest of the log holds; store items are reached only through the store; LangGraph's TTL
(``ttl=`` on put, ``refresh_ttl`` on reads, ``TTLConfig``) hides an expired item at once
and the sweep erases it. (The fixture is ``kv_store``: ``store`` is the chain suite's.)"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp, TTLConfig

from pmm.errors import InvalidInputError
from pmm.integrations import PMMStore
from pmm.integrations.store_items import namespace_session
from pmm.testing.fixtures import *  # noqa: F403


@pytest.fixture
def kv_store(log_target: str) -> Iterator[PMMStore]:
    s = PMMStore(log_target)
    try:
        yield s
    finally:
        s.close()


def test_a_namespace_search_ranks_within_the_namespace(kv_store: PMMStore) -> None:
    users = 600
    kv_store.batch(
        [
            PutOp(("users", f"u{i}"), "doc", {"text": f"passport of user {i}: code P{i:04d}X"})
            for i in range(users)
        ]
    )
    kv_store.put(("users", "u7", "trips"), "t1", {"text": "passport needed for the trip to Oslo"})
    missing = []
    for i in range(users):
        hits = kv_store.search(("users", f"u{i}"), query="passport", limit=5)
        if [h.key for h in hits if h.namespace == ("users", f"u{i}")] != ["doc"]:
            missing.append(i)
        assert {h.namespace[:2] for h in hits} <= {("users", f"u{i}")}
    assert missing == []
    # children of the namespace are searched too, ranked together
    nested = kv_store.search(("users", "u7"), query="passport oslo", limit=5)
    assert [(h.namespace, h.key) for h in nested] == [
        (("users", "u7", "trips"), "t1"),
        (("users", "u7"), "doc"),
    ]
    # the whole prefix still finds everything, best first
    assert len(kv_store.search(("users",), query="passport", limit=1000)) == users + 1


def test_store_items_are_reached_only_through_the_store(kv_store: PMMStore) -> None:
    kv_store.put(("users", "ann"), "id", {"passport": "ZX9912345Q"})
    session = namespace_session(("users", "ann"))
    mind = kv_store.mind
    for call in (
        lambda: mind.recall("ZX9912345Q", session_id=session),
        lambda: mind.context(session, query="passport"),
        lambda: mind.history(session),
        lambda: mind.remember("hi", role="user", session_id=session),
        lambda: mind.recall("ZX9912345Q", kinds=["store_put"]),
    ):
        with pytest.raises(InvalidInputError, match="PMMStore"):
            call()
    assert mind.recall("ZX9912345Q", k=10) == []  # every session, the default kinds
    assert kv_store.get(("users", "ann"), "id") is not None


def test_ttl_hides_an_expired_item_at_once_and_reads_refresh_it(kv_store: PMMStore) -> None:
    assert kv_store.supports_ttl
    kv_store.put(("s",), "short", {"code": "493021"}, ttl=0.04)  # 2.4 s
    kv_store.put(("s",), "kept", {"code": "111111"})
    first = kv_store.get(("s",), "short")
    assert first is not None
    time.sleep(1.5)
    assert kv_store.get(("s",), "short") is not None  # refreshed: 2.4 s from now
    time.sleep(1.5)
    assert kv_store.get(("s",), "short", refresh_ttl=False) is not None
    time.sleep(1.2)
    assert kv_store.get(("s",), "short") is None  # expired: hidden before any sweep
    assert [i.key for i in kv_store.search(("s",))] == ["kept"]
    assert [i.key for i in kv_store.search(("s",), query="493021")] == []
    assert kv_store.list_namespaces() == [("s",)]
    # a put after expiry starts a new item
    kv_store.put(("s",), "short", {"code": "777777"})
    item = kv_store.get(("s",), "short")
    assert item is not None and item.value == {"code": "777777"}
    assert item.created_at > first.created_at


def test_the_sweep_erases_expired_items_and_their_earlier_versions(kv_store: PMMStore) -> None:
    kv_store.put(("s",), "otp", {"code": "first-493021"})
    kv_store.put(("s",), "otp", {"code": "second-493022"}, ttl=0.01)
    kv_store.put(("s",), "other", {"code": "kept-111111"}, ttl=60)
    assert kv_store.sweep_ttl() == 0
    time.sleep(0.8)
    assert kv_store.sweep_ttl() == 1
    assert kv_store.sweep_ttl() == 0
    events = kv_store.mind.store.events(session_id=namespace_session(("s",)))
    texts = " ".join(e.content or "" for e in events)
    assert "493021" not in texts and "493022" not in texts and "kept-111111" in texts
    assert kv_store.get(("s",), "otp") is None
    assert kv_store.get(("s",), "other") is not None
    assert kv_store.mind.verify().ok


def test_ttl_config_default_refresh_and_background_sweeper(log_target: str) -> None:
    config: TTLConfig = {
        "default_ttl": 0.01,
        "refresh_on_read": False,
        # PMM takes a fraction of a minute where LangGraph types an int
        "sweep_interval_minutes": 0.005,  # type: ignore[typeddict-item]
    }
    store = PMMStore(log_target, ttl=config)
    try:
        store.put(("s",), "a", {"code": "swept-424242"})
        store.put(("s",), "b", {"code": "forever-1"}, ttl=None)
        session = namespace_session(("s",))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            texts = " ".join(e.content or "" for e in store.mind.store.events(session_id=session))
            if "swept-424242" not in texts:
                break
            time.sleep(0.2)
        assert "swept-424242" not in texts and "forever-1" in texts
        assert store.last_sweep_error is None
        assert store.stop_ttl_sweeper(timeout=5)
    finally:
        store.close()


def test_bad_ttl_is_refused_and_nothing_is_stored(kv_store: PMMStore) -> None:
    head = kv_store.mind.store.head()
    for bad in (0, -1, float("nan"), "5", True):
        with pytest.raises(InvalidInputError, match="ttl"):
            kv_store.batch([PutOp(("s",), "k", {"v": 1}, ttl=bad)])  # type: ignore[arg-type]
    assert kv_store.mind.store.head() == head
    with pytest.raises(InvalidInputError, match="TTLConfig"):
        PMMStore(mind=kv_store.mind, ttl={"default_tll": 5})  # type: ignore[arg-type]
    assert kv_store.batch([GetOp(("s",), "k"), SearchOp(("s",))]) == [None, []]
