"""The version-3 chain rule and the root, without a database (issue 21)."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from pmm.events.chain import check_new_event
from pmm.events.chains import ChainState, ChainsWalker, seal_chains, user_digest
from pmm.events.hashing import (
    canonical_json,
    chain_payload_v3,
    keyed_digest,
    payload_v3,
    sha256_hex,
)
from pmm.events.merkle import merkle_root
from pmm.records import NewEvent

SECRET = b"s" * 32


def _leaf(label: str, head: str) -> bytes:
    return hashlib.sha256(b"\x00" + canonical_json([label, head]).encode()).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def test_the_payload_is_the_canonical_json_of_its_fields() -> None:
    fields = {
        "ts": "2024-01-14T08:00:00.000000Z", "kind": "prompt", "role": None,
        "content_sha256": "ab" * 32, "prev_hash": None, "user_digest": "cd" * 32,
        "session_digest": None,
    }  # fmt: skip
    meta = {"é": [1, None], "a": "x"}
    payload = chain_payload_v3(**fields, meta_json=canonical_json(meta))
    expected = {
        "ts": fields["ts"], "kind": "prompt", "role": None, "content_sha256": "ab" * 32,
        "prev_hash": None, "user": "cd" * 32, "session": None, "meta": meta,
    }  # fmt: skip
    assert payload == canonical_json(expected)


@pytest.mark.parametrize("odd", ['say "hi"\\', "tab\there\nnewline\x01", "usér ✓", None])
def test_the_positional_payload_is_the_same_canonical_json(odd: str | None) -> None:
    # verify and sealing build the payload with payload_v3: any difference from the
    # canonical JSON (escaping, a null) would change hashes and fail existing files
    for field in ("ts", "kind", "role", "content_sha256", "prev_hash", "user", "session"):
        values: dict[str, str | None] = {
            "ts": "2024-01-14T08:00:00.000000Z", "kind": "prompt", "role": "user",
            "content_sha256": "ab" * 32, "prev_hash": "ef" * 32, "user": "cd" * 32,
            "session": "01" * 32,
        }  # fmt: skip
        values[field] = odd
        meta = {"é": [1, None], "q": 'a "b"'}
        payload = payload_v3(
            values["ts"], values["kind"], values["role"], values["content_sha256"],
            canonical_json(meta), values["prev_hash"], values["user"], values["session"],
        )  # fmt: skip
        assert payload == canonical_json({**values, "meta": meta}), field


def test_a_version_3_hash_is_the_one_earlier_builds_wrote() -> None:
    # computed by the build before payload_v3 (036dea5): files it wrote must still verify
    payload = payload_v3(
        "2024-01-14T08:00:00.000000Z", 'say "hi"\\', "usér\n", "ab" * 32, '{"a":1}',
        "ef" * 32, None, "cd" * 32,
    )  # fmt: skip
    assert sha256_hex(payload) == (
        "6db3a5af1e052043b5ab519a5672d59f7fa789b9a77a6e1c2c7274f43886af69"
    )


def test_keyed_digests_are_hmac_sha256_of_kind_nul_id() -> None:
    want = hmac.new(SECRET, b"user\x00alice@example.com", hashlib.sha256).hexdigest()
    assert keyed_digest(SECRET, "user", "alice@example.com") == want
    assert keyed_digest(SECRET, "session", "alice@example.com") != want
    assert keyed_digest(b"t" * 32, "user", "alice@example.com") != want


def test_the_root_is_rfc6962_over_the_sorted_pairs() -> None:
    heads = {"c": "3", "a": "1", "b": "2"}
    a, b, c = _leaf("a", "1"), _leaf("b", "2"), _leaf("c", "3")
    assert merkle_root(heads) == _node(_node(a, b), c).hex()
    assert merkle_root({"a": "1"}) == a.hex()
    assert merkle_root({}) is None
    five = {str(i): str(i) for i in range(5)}
    leaves = [_leaf(str(i), str(i)) for i in range(5)]
    four = _node(_node(leaves[0], leaves[1]), _node(leaves[2], leaves[3]))
    assert merkle_root(five) == _node(four, leaves[4]).hex()
    assert merkle_root({**heads, "b": "changed"}) != merkle_root(heads)


def test_sealed_chains_link_per_user_and_verify() -> None:
    entries = [
        NewEvent("prompt", f"turn {i}", f"s{i % 2}", "user", None, None, ["alice", "bob"][i % 2])
        for i in range(6)
    ]
    checked = [check_new_event(e, 1 << 20) for e in entries]
    chains = {u: ChainState(u, SECRET if u == "alice" else b"b" * 32) for u in ("alice", "bob")}
    events = seal_chains(checked, chains, ids=[10, 11, 12, 13, 14, 15], ts="t")
    assert [e.prev_hash for e in events[:2]] == [None, None]
    assert events[2].prev_hash == events[0].hash and events[3].prev_hash == events[1].hash
    assert events[0].user_digest == user_digest(SECRET, "alice")
    walker = ChainsWalker(keys=[("alice", SECRET), ("bob", b"b" * 32)])
    for e, c in zip(events, checked, strict=True):
        assert (
            walker.step(
                e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256,
                c.meta_json, e.prev_hash, e.hash, e.hash_version, e.user_id, e.user_digest,
                e.session_digest,
            )
            is None
        )  # fmt: skip
    report = walker.report()
    assert report.ok and report.rows == 6 and len(report.heads) == 2
    assert report.heads[user_digest(SECRET, "alice")] == events[4].hash
