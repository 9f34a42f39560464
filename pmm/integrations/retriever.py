"""PMMRetriever: a LangChain retriever over PMM's recall (keyword + vector, fused).

    from pmm import Mind, PMMRetriever

    retriever = PMMRetriever(mind=Mind("pmm.db", enable_embeddings=True), k=5)
    docs = retriever.invoke("where does Alice live?")
    docs[0].page_content, docs[0].metadata["session_id"], docs[0].metadata["event_id"]

Each ``Document`` holds the turn's text (its summary when ``use_summaries`` and one exists);
metadata carries ``event_id``, ``session_id``, ``role``, ``kind``, ``ts``, ``keywords``,
``summary``, ``score`` and ``rankers`` (which rankers found it, at which rank).

``user_id`` keeps recall to one user's threads (all of them, or ``session_id`` among
them): no other user's turn is ever a candidate. Without it the whole log is searched,
which is for single-user apps::

    PMMRetriever(mind=mind, user_id="alice").invoke("where do I live?")
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from pmm.events.turns import turn_role
from pmm.mind import Mind
from pmm.settings import gather_setting_keywords


class PMMRetriever(BaseRetriever):
    """Retrieves remembered turns relevant to a query (see the module docstring).

    Its fields are its keyword arguments (``k``, ``session_id`` and ``mode`` may also be
    given per call to ``invoke``); any other keyword is a PMM setting for the Mind it opens.
    Each hit is a ``Document`` whose metadata holds the event's id, session, role, time,
    fused score and rankers.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    mind: Mind | None = Field(default=None, exclude=True)
    """An open Mind to search; if None, ``db_path`` (or PMM_DB_PATH) is opened."""
    db_path: str | None = None
    k: int = 10
    session_id: str | None = None
    """Search one session; None searches every session (of ``user_id``, when set)."""
    user_id: str | None = None
    """Search only this user's sessions; None: every user's (single-user apps)."""
    mode: Literal["hybrid", "keyword", "semantic"] | None = None
    """``hybrid``, ``keyword`` or ``semantic``; None = hybrid with embeddings, else keyword."""
    kinds: list[str] | None = None
    use_summaries: bool = False
    """Put the turn's summary (when it has one) in ``page_content`` instead of its text."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """PMM settings for the Mind this retriever opens (``enable_embeddings=True`` lands
    here); ignored when ``mind`` is given."""

    @model_validator(mode="before")
    @classmethod
    def _collect_settings(cls, data: Any) -> Any:
        return gather_setting_keywords(
            data, exclude=frozenset({"db_path", "session_id", "user_id"}), own=cls.model_fields
        )

    _own_mind: Mind | None = PrivateAttr(default=None)

    @property
    def pmm(self) -> Mind:
        if self.mind is not None:
            return self.mind
        if self._own_mind is None:
            self._own_mind = Mind(self.db_path, **self.settings)
        return self._own_mind

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        session_id: str | None = None,
        mode: Literal["hybrid", "keyword", "semantic"] | None = None,
        kinds: list[str] | None = None,
        user_id: str | None = None,
    ) -> list[Document]:
        """``k``, ``session_id``, ``mode``, ``kinds`` and ``user_id`` given at call time
        (``retriever.invoke(q, k=1)``) win over the fields."""
        return self._documents(
            query, k=k, session_id=session_id, mode=mode, kinds=kinds, user_id=user_id
        )

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        session_id: str | None = None,
        mode: Literal["hybrid", "keyword", "semantic"] | None = None,
        kinds: list[str] | None = None,
        user_id: str | None = None,
    ) -> list[Document]:
        """Runs the (blocking) search in a worker thread, off the event loop."""
        return await asyncio.to_thread(
            self._documents,
            query,
            k=k,
            session_id=session_id,
            mode=mode,
            kinds=kinds,
            user_id=user_id,
        )

    def _documents(
        self,
        query: str,
        *,
        k: int | None,
        session_id: str | None,
        mode: Literal["hybrid", "keyword", "semantic"] | None,
        kinds: list[str] | None,
        user_id: str | None = None,
    ) -> list[Document]:
        hits = self.pmm.recall(
            query,
            self.k if k is None else k,
            session_id=self.session_id if session_id is None else session_id,
            mode=self.mode if mode is None else mode,
            kinds=self.kinds if kinds is None else kinds,
            user_id=self.user_id if user_id is None else user_id,
        )
        documents = []
        for hit in hits:
            event = hit.event
            role, text = turn_role(event)
            if self.use_summaries and event.summary:
                text = event.summary
            metadata: dict[str, Any] = {
                "event_id": event.id,
                "session_id": event.session_id,
                "user_id": event.user_id,
                "role": role,
                "kind": event.kind,
                "ts": event.ts,
                "keywords": list(event.keywords),
                "summary": event.summary,
                "score": hit.score,
                "rankers": dict(hit.rankers),
            }
            documents.append(Document(page_content=text, metadata=metadata, id=str(event.id)))
        return documents

    def close(self) -> None:
        """Close the Mind this retriever opened (not one passed in)."""
        if self._own_mind is not None:
            self._own_mind.close()
            self._own_mind = None
