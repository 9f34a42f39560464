"""The root over every chain's head that a deployment pins (issue 21): RFC 6962's Merkle
tree hash over the sorted ``(label, head)`` pairs, so that one value covers every user's
chain and a later proof can show one user's head is in it.

    root = merkle_root({"legacy": "ab12...", "no-user": "cd34..."})
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from pmm.events.hashing import canonical_json


def merkle_root(heads: Mapping[str, str]) -> str | None:
    """RFC 6962's Merkle tree hash over the sorted ``(label, head)`` pairs: leaf =
    sha256(0x00 || canonical_json([label, head])), node = sha256(0x01 || left || right),
    split at the largest power of two below the count. None for no chains.

    >>> merkle_root({"legacy": "ab"}) == hashlib.sha256(b'\\x00["legacy","ab"]').hexdigest()
    True
    """
    if not heads:
        return None
    level = [
        hashlib.sha256(b"\x00" + canonical_json([label, heads[label]]).encode()).digest()
        for label in sorted(heads)
    ]
    return _tree(level).hex()


def _tree(nodes: list[bytes]) -> bytes:
    if len(nodes) == 1:
        return nodes[0]
    split = 1 << ((len(nodes) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + _tree(nodes[:split]) + _tree(nodes[split:])).digest()
