"""Digests: a short summary and keywords for each turn, by an LLM, a local model or rules.

    from pmm.digest import build_digester
    digester = build_digester(Settings.load(summarizer="heuristic"))
    [d] = digester.digest_many(["I moved to Lisbon in 2021 ..."], roles=["user"])
    d.summary, d.keywords, d.method

Every backend has one batched interface, ``digest_many(texts, roles=None)``; none of them
touches the database. Backends: :class:`LLMDigester` (any LangChain chat model),
:class:`LocalDigester` (a transformers seq2seq model + spaCy keywords),
:class:`HeuristicDigester` (no model); :func:`build_digester` chains them per
``PMM_SUMMARIZER`` and :func:`backend_status` tells ``doctor`` which can run here.

Importing this package loads no heavy library (torch, transformers, spaCy, langchain-openai):
each backend imports what it needs when it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pmm.digest.base import Digest, Digester
from pmm.digest.heuristic import HeuristicDigester
from pmm.digest.keywords import SpacyKeywords, heuristic_keywords
from pmm.digest.select import (
    BackendFactory,
    BackendStatus,
    FallbackDigester,
    backend_status,
    build_digester,
    chain_names,
)
from pmm.events.roles import speaker_label, with_speaker

if TYPE_CHECKING:
    from pmm.digest.llm import LLMDigester
    from pmm.digest.local import LocalDigester, load_seq2seq

__all__ = [
    "BackendFactory",
    "BackendStatus",
    "Digest",
    "Digester",
    "FallbackDigester",
    "HeuristicDigester",
    "LLMDigester",
    "LocalDigester",
    "SpacyKeywords",
    "backend_status",
    "build_digester",
    "chain_names",
    "heuristic_keywords",
    "load_seq2seq",
    "speaker_label",
    "with_speaker",
]

_LAZY = {"LLMDigester": ".llm", "LocalDigester": ".local", "load_seq2seq": ".local"}


def __getattr__(name: str) -> Any:
    """``LLMDigester``, ``LocalDigester`` and ``load_seq2seq`` import their module on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pmm.digest' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
