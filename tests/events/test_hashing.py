"""The hash-chain rule (pmm.events.hashing): version 1 payload and hash, legacy version 0."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmm.events.hashing import (
    HASH_VERSION,
    LEGACY_HASH_VERSION,
    canonical_json,
    chain_hash,
    chain_payload,
    legacy_hash,
    sha256_hex,
)

texts = st.text()  # any code point except lone surrogates, including NUL, quotes, emoji
maybe_text = st.none() | texts
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
metas = st.dictionaries(texts, json_values, max_size=6)


@settings(max_examples=300, deadline=None, database=None)
@given(
    id_=st.integers(min_value=0, max_value=2**62),
    ts=texts,
    kind=texts,
    session_id=maybe_text,
    role=maybe_text,
    content_sha256=texts,
    meta=metas,
    prev_hash=maybe_text,
)
def test_chain_payload_is_canonical_json_of_the_fields(
    id_, ts, kind, session_id, role, content_sha256, meta, prev_hash
):
    meta_json = canonical_json(meta)
    fields = {
        "id": id_,
        "ts": ts,
        "kind": kind,
        "session_id": session_id,
        "role": role,
        "content_sha256": content_sha256,
        "prev_hash": prev_hash,
    }
    payload = chain_payload(**fields, meta_json=meta_json)
    assert payload == canonical_json({**fields, "meta": json.loads(meta_json)})
    # and it is real JSON that reads back to the same fields
    assert json.loads(payload) == {**fields, "meta": json.loads(meta_json)}
    assert (
        chain_hash(**fields, meta_json=meta_json)
        == hashlib.sha256(payload.encode("utf-8")).hexdigest()
    )


def test_chain_payload_exact_text():
    payload = chain_payload(
        id=7,
        ts="2025-01-02T03:04:05.000006Z",
        kind="prompt",
        session_id="alice",
        role=None,
        content_sha256="ab" * 32,
        meta_json=canonical_json({"z": 1, "a": 'é"q'}),
        prev_hash=None,
    )
    assert payload == (
        '{"content_sha256":"' + "ab" * 32 + '","id":7,"kind":"prompt",'
        '"meta":{"a":"é\\"q","z":1},"prev_hash":null,"role":null,'
        '"session_id":"alice","ts":"2025-01-02T03:04:05.000006Z"}'
    )


def test_chain_hash_changes_with_every_field():
    base = dict(
        id=1,
        ts="t",
        kind="k",
        session_id="s",
        role="r",
        content_sha256="c",
        meta_json="{}",
        prev_hash="p",
    )
    reference = chain_hash(**base)
    changed = {
        "id": 2,
        "ts": "t2",
        "kind": "k2",
        "session_id": None,
        "role": None,
        "content_sha256": "c2",
        "meta_json": '{"a":1}',
        "prev_hash": None,
    }
    for name, value in changed.items():
        assert chain_hash(**{**base, name: value}) != reference, name


def test_canonical_json_sorted_compact_utf8():
    assert canonical_json({"b": 1, "a": [1, "é"], "c": {"y": None, "x": True}}) == (
        '{"a":[1,"é"],"b":1,"c":{"x":true,"y":null}}'
    )
    with pytest.raises(ValueError):
        canonical_json({"x": math.nan})
    with pytest.raises(TypeError):
        canonical_json({"x": {1, 2}})


def test_sha256_hex_is_utf8_sha256():
    assert sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_hex("café") == hashlib.sha256("café".encode()).hexdigest()


def _legacy_reference(prev_hash, kind, content, meta_json):
    text = (prev_hash or "") + "|" + kind + "|" + content + "|" + meta_json
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    ("prev_hash", "kind", "content", "meta_json"),
    [
        (None, "event", "Session started", "{}"),
        ("", "event", "Session started", "{}"),
        ("ab" * 32, "prompt", "User said: I moved to Lisbon", '{"source": "cli"}'),
        ("cd" * 32, "response", "I responded: café | 日本語", "{}"),
    ],
)
def test_legacy_hash_formula(prev_hash, kind, content, meta_json):
    assert legacy_hash(prev_hash, kind, content, meta_json) == _legacy_reference(
        prev_hash, kind, content, meta_json
    )


def test_legacy_hash_first_row_uses_empty_prefix():
    expected = hashlib.sha256(b"|event|hello|{}").hexdigest()
    assert legacy_hash(None, "event", "hello", "{}") == expected


@settings(max_examples=200, deadline=None, database=None)
@given(prev=maybe_text, kind=texts, content=texts, meta=texts)
def test_legacy_hash_property(prev, kind, content, meta):
    assert legacy_hash(prev, kind, content, meta) == _legacy_reference(prev, kind, content, meta)


def test_versions():
    assert (HASH_VERSION, LEGACY_HASH_VERSION) == (1, 0)
