"""A misspelt setting keyword names the closest one ("did you mean"), for Mind and every
LangChain class, as the environment path does for a misspelt variable (issue 22)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pmm import (
    Mind,
    PersistentMindMemory,
    PMMChatMessageHistory,
    PMMMiddleware,
    PMMRetriever,
    PMMStore,
)
from pmm.errors import ConfigurationError


def _builders(db: str) -> dict[str, Any]:
    return {
        "Mind": lambda **kw: Mind(db, **kw),
        "PersistentMindMemory": lambda **kw: PersistentMindMemory(db_path=db, **kw),
        "PMMChatMessageHistory": lambda **kw: PMMChatMessageHistory("s", db_path=db, **kw),
        "PMMRetriever": lambda **kw: PMMRetriever(db_path=db, **kw),
        "PMMMiddleware": lambda **kw: PMMMiddleware(db_path=db, **kw),
        "PMMStore": lambda **kw: PMMStore(db, **kw),
    }


@pytest.mark.parametrize(
    "name",
    [
        "Mind",
        "PersistentMindMemory",
        "PMMChatMessageHistory",
        "PMMRetriever",
        "PMMMiddleware",
        "PMMStore",
    ],
)
def test_a_misspelt_setting_names_the_closest_one(tmp_path: Path, name: str) -> None:
    build = _builders(str(tmp_path / "m.db"))[name]
    with pytest.raises(ValueError, match=r"enable_sumary \(did you mean enable_summary\?\)"):
        build(enable_sumary=True)
    with pytest.raises(ValueError, match=r"recal_k \(did you mean recall_k\?\)"):
        build(recal_k=3)
    with pytest.raises(ValueError, match=r"known: .*enable_summary"):
        build(zzzz_qqq=1)  # nothing close: no guess, the list of names
    made = build(enable_summary=True, summarizer="heuristic")  # spelt right: it works
    getattr(made, "close", lambda: None)()


def test_a_misspelt_field_of_a_langchain_class_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"memory_kye \(did you mean memory_key\?\)"):
        PersistentMindMemory(db_path=str(tmp_path / "m.db"), memory_kye="h")


def test_settings_load_says_did_you_mean() -> None:
    from pmm.settings import Settings

    with pytest.raises(ConfigurationError, match=r"max_token \(did you mean max_tokens\?\)"):
        Settings.load(env={}, max_token=10)
