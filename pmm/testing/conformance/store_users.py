"""PMMStore with ``namespace_user`` on every backend: a namespace that names a user
(LangGraph's ``("memories", user_id)``) stores her items as her events, so that they get
her isolation (another user's namespace session refuses her), her erasure
(``Mind.forget(user_id=...)`` leaves every other user's items) and her stats and export."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from langgraph.store.base import PutOp

from pmm.errors import InvalidInputError
from pmm.integrations import PMMStore
from pmm.integrations.store_items import namespace_session
from pmm.integrations.store_ttl import PUT_KIND
from pmm.testing.fixtures import *  # noqa: F403

USERS = [f"u{i}" for i in range(6)]


def _secret(user: str) -> str:
    return f"ZQ{user.upper()}PASS7731"


@pytest.fixture
def users_store(log_target: str) -> Iterator[PMMStore]:
    s = PMMStore(log_target, namespace_user=1)
    try:
        yield s
    finally:
        s.close()


def fill(store: PMMStore) -> None:
    store.batch(
        [
            PutOp(("memories", u, *sub), key, {"text": f"{key} of {u}: {_secret(u)}"})
            for u in USERS
            for sub, key in (((), "passport"), (("trips",), "oslo"))
        ]
    )
    store.put(("shared",), "notice", {"text": "a note of no user"})


def test_items_are_their_users_events(users_store: PMMStore) -> None:
    fill(users_store)
    log = users_store.mind.store
    for u in USERS:
        mine = log.events(user_id=u)
        assert {e.kind for e in mine} == {PUT_KIND}
        assert {e.session_id for e in mine} == {
            namespace_session(("memories", u)),
            namespace_session(("memories", u, "trips")),
        }
        assert all(_secret(u) in (e.content or "") for e in mine)
    assert log.session_owner(namespace_session(("shared",))) == (True, None)
    assert users_store.user_of(("memories",)) is None  # too short to name a user
    hits = users_store.search(("memories", "u3"), query=_secret("u3"), limit=10)
    assert {h.namespace[:2] for h in hits} == {("memories", "u3")}
    stats = users_store.mind.stats(user_id="u3")
    assert stats["events"] == 2
    out = io.StringIO()
    assert users_store.mind.export(out, user_id="u3") == 2
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    keys = [r for r in rows if "chain_key" in r]  # her chain's secret comes first
    assert [k["chain_key"] for k in keys] == ["u3"] and rows[0] is keys[0]
    assert {r["user_id"] for r in rows if "chain_key" not in r} == {"u3"}


def test_forget_a_user_erases_her_items_and_only_hers(users_store: PMMStore) -> None:
    fill(users_store)
    users_store.put(("memories", "u2"), "passport", {"text": f"renewed: {_secret('u2')} v2"})
    log = users_store.mind.store
    before = {u: len(log.events(user_id=u)) for u in USERS}
    report = users_store.mind.forget(user_id="u2", reason="asked")
    assert len(report.erased) == before["u2"] == 3
    assert users_store.get(("memories", "u2"), "passport") is None
    assert users_store.search(("memories", "u2"), query="passport") == []
    for u in USERS:
        if u == "u2":
            continue
        assert len(log.events(user_id=u)) == before[u]
        item = users_store.get(("memories", u), "passport")
        assert item is not None and _secret(u) in item.value["text"]
    assert users_store.get(("shared",), "notice") is not None
    assert users_store.mind.verify().ok


def test_a_namespace_user_is_checked_and_owns_her_session(log_target: str) -> None:
    by_name = PMMStore(log_target, namespace_user=lambda ns: ns[-1] if ns[0] == "u" else None)
    try:
        by_name.put(("u", "ana"), "k", {"v": 1})
        assert by_name.mind.store.session_owner(namespace_session(("u", "ana"))) == (True, "ana")
        with pytest.raises(InvalidInputError, match="namespace_user"):
            PMMStore(mind=by_name.mind, namespace_user="1")  # type: ignore[arg-type]
        bad = PMMStore(mind=by_name.mind, namespace_user=lambda ns: 7)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="user id"):
            bad.put(("u", "bob"), "k", {"v": 1})
        # the same namespace session read as another user's: refused, nothing stored
        other = PMMStore(mind=by_name.mind, namespace_user=lambda ns: "mallory")
        with pytest.raises(InvalidInputError):
            other.put(("u", "ana"), "k", {"v": 2})
        item = by_name.get(("u", "ana"), "k")
        assert item is not None and item.value == {"v": 1}
    finally:
        by_name.close()


def test_a_namespace_written_without_users_is_given_hers_once(log_target: str) -> None:
    plain = PMMStore(log_target)
    try:
        plain.put(("memories", "ana"), "old", {"text": "written before users"})
        session = namespace_session(("memories", "ana"))
        assert plain.mind.store.session_owner(session) == (True, None)
        mapped = PMMStore(mind=plain.mind, namespace_user=1)
        mapped.put(("memories", "ana"), "new", {"text": "written with users"})
        assert plain.mind.store.session_owner(session) == (True, "ana")
        assert {e.meta.get("key") for e in plain.mind.store.events(user_id="ana")} >= {
            "old",
            "new",
        }
        assert [i.key for i in mapped.search(("memories", "ana"))] == ["new", "old"]
        assert plain.mind.verify().ok
    finally:
        plain.close()
