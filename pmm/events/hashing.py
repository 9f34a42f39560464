"""The hash-chain rule, in one place.

Version 1 (every row PMM writes)::

    hash = sha256(canonical_json({id, ts, kind, session_id, role,
                                  content_sha256, meta, prev_hash}))

Version 2 (rows PMM writes for a user, see :class:`pmm.records.NewEvent` ``user_id``)::

    hash = sha256(canonical_json({id, ts, kind, session_id, role,
                                  content_sha256, meta, prev_hash, user_id}))

so that a row moved to another user no longer verifies. Rows without a user are still
written as version 1: a session written before it had a user can be assigned one later
(:meth:`pmm.Mind.assign_user`), which a chained ``user_assigned`` event records.

Version 3 (every row PMM writes since one chain per user, issue 21)::

    hash = sha256(canonical_json({ts, kind, role, content_sha256, meta, prev_hash,
                                  user: keyed digest of user_id or null,
                                  session: keyed digest of session_id or null}))

where ``prev_hash`` is the hash of the previous version-3 row of the same user (rows
without a user form one chain of their own), and the keyed digests are HMAC-SHA256 under
a random secret per chain (:func:`keyed_digest`). See ``docs/design/chains.md``.
Versions 1 and 2 are still verified (rows written before it), in id order as one chain.

Version 0 (rows written by the earlier PMM, kept verifying after migration)::

    hash = sha256((prev_hash or "") + "|" + kind + "|" + content + "|" + meta_json)

Hashing ``content_sha256`` instead of the content lets raw text be redacted later while
the chain still verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

from pmm.errors import InvalidInputError

HASH_VERSION = 1
USER_HASH_VERSION = 2
LEGACY_HASH_VERSION = 0

_dumps = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
).encode
_quote = json.encoder.encode_basestring  # what JSONEncoder(ensure_ascii=False) does for str


def utc_now() -> str:
    """A row's ``ts``: the current UTC time, ISO-8601 with microseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="microseconds")[:-6] + "Z"  # drop "+00:00"


def normalize_ts(value: object) -> str:
    """A caller's conversation time (``datetime`` or ISO-8601 string) as a row's ``ts``:
    UTC, microseconds, ``Z``. A naive time is taken as UTC.

    >>> normalize_ts("2024-01-14T10:00:00+02:00")
    '2024-01-14T08:00:00.000000Z'
    """
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInputError(
                f"ts must be an ISO-8601 time like '2024-01-14T18:30:00Z', got {value!r}"
            ) from None
    elif isinstance(value, datetime):
        when = value
    else:
        raise InvalidInputError(
            f"ts must be a datetime or an ISO-8601 string, got {type(value).__name__}"
        )
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no spaces and raw UTF-8: one text per value.

    >>> canonical_json({"b": 1, "a": [1, "é"]})
    '{"a":[1,"é"],"b":1}'
    """
    return str(_dumps(value))


def sha256_hex(text: str) -> str:
    """SHA-256 of the UTF-8 encoding of ``text``, as 64 hex digits."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _q(value: str | None) -> str:
    return "null" if value is None else str(_quote(value))


def chain_payload(
    *,
    id: int,
    ts: str,
    kind: str,
    session_id: str | None,
    role: str | None,
    content_sha256: str,
    meta_json: str,
    prev_hash: str | None,
    user_id: str | None = None,
    with_user: bool = False,
) -> str:
    """The canonical JSON that a version-1 row's hash covers (version 2 with
    ``with_user``: the same fields and ``user_id``).

    ``meta_json`` must already be ``canonical_json(meta)``; it is spliced in as is, so a
    stored meta edited even in its spacing no longer verifies. Equal, by construction and
    by test, to ``canonical_json`` of the same fields as a dict.
    """
    # Built by hand, keys in sorted order, because verify() runs this for every row.
    return (
        '{"content_sha256":'
        + _q(content_sha256)
        + ',"id":'
        + str(int(id))
        + ',"kind":'
        + _q(kind)
        + ',"meta":'
        + meta_json
        + ',"prev_hash":'
        + _q(prev_hash)
        + ',"role":'
        + _q(role)
        + ',"session_id":'
        + _q(session_id)
        + ',"ts":'
        + _q(ts)
        + (',"user_id":' + _q(user_id) if with_user else "")
        + "}"
    )


def chain_hash(**fields: Any) -> str:
    """The version-1 hash of a row (version 2 with ``with_user=True``; see
    :func:`chain_payload` for the fields)."""
    return sha256_hex(chain_payload(**fields))


def legacy_hash(prev_hash: str | None, kind: str, content: str, meta_json: str) -> str:
    """The version-0 hash used by the earlier PMM."""
    return sha256_hex(f"{prev_hash or ''}|{kind}|{content}|{meta_json}")


CHAIN_HASH_VERSION = 3
"""Rows written since one chain per user (issue 21): see :func:`chain_payload_v3`."""


def keyed_digest(secret: bytes, what: str, value: str) -> str:
    """HMAC-SHA256 of ``what + NUL + value`` under a chain's secret, as 64 hex digits:
    the form in which a version-3 hash covers a user or session id, so that deleting the
    secret (and the id) leaves a digest nobody can link back to the id.

    >>> len(keyed_digest(b"k" * 32, "user", "alice@example.com"))
    64
    """
    return hmac.new(secret, f"{what}\x00{value}".encode(), hashlib.sha256).hexdigest()


def chain_payload_v3(
    *,
    ts: str,
    kind: str,
    role: str | None,
    content_sha256: str,
    meta_json: str,
    prev_hash: str | None,
    user_digest: str | None,
    session_digest: str | None,
) -> str:
    """The canonical JSON that a version-3 row's hash covers: no id (a chain keeps its
    hashes wherever it is imported) and the user and session as keyed digests
    (:func:`keyed_digest`); ``prev_hash`` is the previous row of the same chain (user).
    Equal, by test, to ``canonical_json`` of the same fields as a dict."""
    return payload_v3(
        ts, kind, role, content_sha256, meta_json, prev_hash, user_digest, session_digest
    )


def payload_v3(
    ts: str,
    kind: str,
    role: str | None,
    content_sha256: str,
    meta_json: str,
    prev_hash: str | None,
    user_digest: str | None,
    session_digest: str | None,
) -> str:
    """:func:`chain_payload_v3` with positional arguments, for the loops that run it per
    row (verify, sealing): one f-string, no keyword passing.

    >>> payload_v3("t", "prompt", None, "ab", "{}", None, None, "cd")
    '{"content_sha256":"ab","kind":"prompt","meta":{},"prev_hash":null,"role":null,\
"session":"cd","ts":"t","user":null}'
    """
    q = _quote
    return (
        f'{{"content_sha256":{"null" if content_sha256 is None else q(content_sha256)}'
        f',"kind":{"null" if kind is None else q(kind)},"meta":{meta_json}'
        f',"prev_hash":{"null" if prev_hash is None else q(prev_hash)}'
        f',"role":{"null" if role is None else q(role)}'
        f',"session":{"null" if session_digest is None else q(session_digest)}'
        f',"ts":{"null" if ts is None else q(ts)}'
        f',"user":{"null" if user_digest is None else q(user_digest)}}}'
    )
