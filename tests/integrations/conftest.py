"""Shared pieces for the LangChain v1 / LangGraph tests (not collected without the [agents]
extra)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if (
    importlib.util.find_spec("langchain.agents") is None
    or importlib.util.find_spec("langgraph") is None
):
    collect_ignore_glob = ["test_*.py"]

sys.path.insert(0, str(Path(__file__).parent))  # fake_models, agent_helpers
