"""Digests: a short summary and keywords for each turn, by an LLM, a local model or rules.

    from pmm.digest import build_digester
    digester = build_digester(Settings.load(summarizer="heuristic"))
    [d] = digester.digest_many(["I moved to Lisbon in 2021 ..."], roles=["user"])
    d.summary, d.keywords, d.method

Every backend has one batched interface, ``digest_many(texts, roles=None)``; none of them
touches the database.
"""

from __future__ import annotations

from .base import Digest, Digester

__all__ = ["Digest", "Digester"]
