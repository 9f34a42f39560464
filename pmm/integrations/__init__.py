"""PMM for LangChain v1 agents and LangGraph (needs ``pip install pmm-memory[agents]``).

    from pmm.integrations import PMMMiddleware, PMMStore

    agent = create_agent(model, tools, middleware=[PMMMiddleware(db_path="pmm.db")])
    store = PMMStore("pmm.db")          # a LangGraph BaseStore over the PMM log

The classes are imported on first use, so importing this package loads nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pmm.errors import ConfigurationError

__all__ = ["PMMMiddleware", "PMMStore"]

_LAZY = {"PMMMiddleware": "pmm.integrations.agents", "PMMStore": "pmm.integrations.langgraph"}

if TYPE_CHECKING:
    from pmm.integrations.agents import PMMMiddleware
    from pmm.integrations.langgraph import PMMStore


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pmm.integrations' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in {"langchain", "langgraph"}:
            raise ConfigurationError(
                f"{name} needs LangChain v1 and LangGraph: pip install 'pmm-memory[agents]' "
                f"({exc.name} is missing)"
            ) from exc
        raise
    globals()[name] = value
    return value
