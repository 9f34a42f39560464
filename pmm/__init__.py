"""PMM — Persistent Mind Memory: persistent, compressed conversation memory for LangChain.

    from pmm import Mind
    with Mind("pmm.db") as mind:
        mind.remember("I moved to Lisbon", role="user", session_id="alice")
        print(mind.context("alice").text())

The LangChain classes are imported on first use, so ``import pmm`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pmm.errors import PMMError
from pmm.records import DreamReport, Event, Hit, VerifyReport

__version__ = "0.1.0"

__all__ = [
    "DreamReport",
    "Event",
    "Hit",
    "Mind",
    "PMMChatMessageHistory",
    "PMMError",
    "PMMMiddleware",
    "PMMRetriever",
    "PMMStore",
    "PersistentMindMemory",
    "VerifyReport",
    "__version__",
]

_LAZY = {
    "Mind": "pmm.mind",
    "PersistentMindMemory": "pmm.integrations.memory",
    "PMMChatMessageHistory": "pmm.integrations.chat_history",
    "PMMRetriever": "pmm.integrations.retriever",
    "PMMMiddleware": "pmm.integrations",
    "PMMStore": "pmm.integrations",
}

if TYPE_CHECKING:
    from pmm.integrations import PMMMiddleware, PMMStore
    from pmm.integrations.chat_history import PMMChatMessageHistory
    from pmm.integrations.memory import PersistentMindMemory
    from pmm.integrations.retriever import PMMRetriever
    from pmm.mind import Mind


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pmm' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
