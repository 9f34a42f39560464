"""PMMStore: LangGraph long-term memory (a ``BaseStore``) over the PMM event log.

    from pmm.integrations import PMMStore

    store = PMMStore("pmm.db")                         # or PMMStore(mind=mind)
    store.put(("users", "alice"), "home", {"city": "Lisbon"})
    store.get(("users", "alice"), "home").value         # {'city': 'Lisbon'}
    store.search(("users",), query="Lisbon", limit=5)   # keyword recall (BM25)
    agent = create_agent(model, tools, store=store)     # or graph.compile(store=store)

Every put is a chained ``store_put`` event (the value as JSON, the key in meta) and every
delete a chained ``store_delete`` tombstone, in the session ``lgstore/<namespace>``: history
is never rewritten, ``get`` returns the newest value, and ``pmm verify`` covers the store.

Search ranks by PMM recall: keyword (FTS5 BM25 over the value's JSON) always, and semantic
when an ``index`` config gives an embedding function (``{"embed": fn, "dims": 384,
"fields": ["text"]}``: the fields' text is embedded once per put and the vector kept in the
log's ``embeddings`` table); both are fused by reciprocal rank (``mode="hybrid"``, the default
with an index). ``filter`` matches values (``{"type": "note"}`` or operators ``$eq``, ``$ne``,
``$gt``, ``$gte``, ``$lt``, ``$lte``); ``limit`` and ``offset`` page the result. A search
ranks within its namespace and the namespaces under it, whatever the rest of the log holds
(each namespace session is searched on its own, the hits merged by score).

The namespace sessions (``lgstore/...``) are reserved: ``Mind.remember/context/recall/
history`` refuse them and ``Mind.recall`` refuses the store's kinds, so items are reached
only through this store (``Mind.forget`` and ``pmm forget`` still erase them).

TTL (LangGraph's, ``supports_ttl`` is True): ``put(..., ttl=minutes)`` or
``PMMStore(..., ttl={"default_ttl": 60, "refresh_on_read": True,
"sweep_interval_minutes": 5})``. An item expires ``ttl`` minutes after it was written or
last read (reads refresh it unless ``refresh_ttl=False`` or ``refresh_on_read`` is False);
an expired item is hidden from get, search and list_namespaces at once, and
:meth:`PMMStore.sweep_ttl` (run every ``sweep_interval_minutes`` by a background thread,
:meth:`PMMStore.stop_ttl_sweeper` stops it) erases it and its earlier versions with
``forget``: no byte of its value stays in the file. The expiry time is kept outside the
chain (``store_expiry``), so a read writes no event.

    store = PMMStore("pmm.db", ttl={"default_ttl": 30, "sweep_interval_minutes": 1})
    store.put(("sessions", "s1"), "otp", {"code": "493021"}, ttl=5)
    store.sweep_ttl()                                    # items erased now (0 if none)

Users: ``namespace_user=1`` (LangGraph's ``("memories", user_id)``, LangMem's
``{langgraph_user_id}``) or a callable (:mod:`pmm.integrations.store_users`) makes items
under a user's namespace her events: ``forget --user`` erases them, ``stats/export --user``
count them, and another user's rule cannot write to her namespace.
    store = PMMStore("pmm.db", namespace_user=1)
    store.put(("memories", "alice"), "home", {"city": "Lisbon"})   # alice's event
    store.mind.forget(user_id="alice", reason="asked")             # her items go too
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote, unquote

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from pmm.context.sessions import STORE_SESSION_ROOT
from pmm.errors import InvalidInputError
from pmm.integrations.store_filters import namespace_matches, value_matches
from pmm.integrations.store_ttl import PUT_KIND, StoreTTL, checked_ttl, checked_ttl_config
from pmm.integrations.store_users import (
    NamespaceUser,
    checked_namespace_user,
    namespace_user_id,
    own_session,
)
from pmm.mind import Mind
from pmm.recall.fusion import rrf_fuse
from pmm.records import Event, NewEvent

log = logging.getLogger(__name__)

DELETE_KIND = "store_delete"
SESSION_ROOT = STORE_SESSION_ROOT
EMBEDDING_MODEL_PREFIX = "langgraph-store"
SearchMode = Literal["hybrid", "keyword", "semantic"]


def namespace_session(namespace: Sequence[str]) -> str:
    """The PMM session that holds a namespace: ``("users", "a/b")`` → ``lgstore/users/a%2Fb``."""
    return "/".join([SESSION_ROOT, *(quote(label, safe="") for label in namespace)])


def session_namespace(session: str) -> tuple[str, ...]:
    """The inverse of :func:`namespace_session`."""
    parts = session.split("/")
    return tuple(unquote(p) for p in parts[1:])


class PMMStore(StoreTTL, BaseStore):
    """A LangGraph ``BaseStore`` whose items live in a PMM log (see the module docstring).

    Args:
        db_path: The SQLite file or a ``postgresql://`` URL to open (default
            ``PMM_DB_PATH``); ignored when ``mind`` is given.
        mind: Share an open :class:`~pmm.Mind` instead of opening one.
        index: LangGraph's ``IndexConfig`` (``embed``, ``dims``, ``fields``); without it
            search is keyword-only.
        mode: The rankers ``search`` uses when an index is configured.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``,
            ``sweep_interval_minutes``: a background sweeper starts with the store).
        namespace_user: Which namespace label is the user id: an index (``1`` for
            ``("memories", user_id)``; a namespace too short to hold it names no user;
            negative counts from the end) or a callable ``namespace -> user id or None``.
            None (the default): items belong to no user.
        **settings: PMM settings for the Mind it opens.

    Raises:
        InvalidInputError: ``index`` lacks ``dims`` or ``embed``, ``mode`` is unknown, or
            ``namespace_user`` is neither an int nor a callable. A put whose namespace
            names an invalid user id (see :meth:`pmm.Mind.remember`) is refused.
    """

    supports_ttl = True

    def __init__(
        self,
        db_path: str | None = None,
        *,
        mind: Mind | None = None,
        index: IndexConfig | None = None,
        mode: SearchMode | None = None,
        ttl: TTLConfig | None = None,
        namespace_user: NamespaceUser | None = None,
        **settings: Any,
    ) -> None:
        self.namespace_user = checked_namespace_user(namespace_user)
        self.ttl_config = checked_ttl_config(ttl)
        self._init_sweeper()
        self.mind = mind if mind is not None else Mind(db_path, **settings)
        self._own_mind = mind is None
        self.index_config = index
        if index is not None:
            if "dims" not in index or "embed" not in index:
                raise InvalidInputError("index needs 'dims' and 'embed' (LangGraph IndexConfig)")
            self.embeddings = ensure_embeddings(index["embed"])
            self.fields = list(index.get("fields") or ["$"])
            self.embedding_model = f"{EMBEDDING_MODEL_PREFIX}:{index['dims']}"
        if mode is None:
            mode = "hybrid" if index is not None else "keyword"
        if mode != "keyword" and index is None:
            raise InvalidInputError(f"mode={mode!r} needs an index config with an embed function")
        self.mode: SearchMode = mode
        if self.ttl_config and self.ttl_config.get("sweep_interval_minutes"):
            self.start_ttl_sweeper()

    def close(self) -> None:
        """Stop the TTL sweeper and close the Mind this store opened (not one passed in)."""
        self.stop_ttl_sweeper()
        if self._own_mind:
            self.mind.close()

    # -- BaseStore ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run Get/Put/Search/ListNamespaces operations in order.

        A put the log refuses (a value over ``max_content_bytes``, a value that is not a
        dict, NUL in a key...) does not stop the others: every other operation runs, and
        then one :class:`~pmm.errors.InvalidInputError` names each refused put::

            store.batch([PutOp(("memories", "alice"), "home", {"city": "Lisbon"})])

        Args:
            ops: LangGraph store operations (``GetOp``, ``PutOp``, ``SearchOp``,
                ``ListNamespacesOp``), run in order.

        Returns:
            One result per operation: an ``Item``, ``None``, a list of ``SearchItem`` or
            of namespaces.

        Raises:
            InvalidInputError: One or more puts were refused (after every other operation
                ran).
        """
        results: list[Result] = []
        refused: list[str] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                try:
                    self._put(op)
                except InvalidInputError as exc:
                    refused.append(f"put {op.namespace!r}/{op.key!r}: {exc}")
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInputError(f"unknown store operation: {type(op).__name__}")
        if refused:
            raise InvalidInputError(
                f"{len(refused)} put(s) refused, every other operation done: " + "; ".join(refused)
            )
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (SQLite and embedding calls block).

        Args:
            ops: As for :meth:`batch`.

        Returns:
            As :meth:`batch` returns.
        """
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations --------------------------------------------------------------------

    def _latest(self, namespace: Sequence[str], key: str | None = None) -> list[Event]:
        return self.mind.store.latest_per_meta_key(
            kinds=(PUT_KIND, DELETE_KIND),
            field="key",
            session_id=namespace_session(namespace),
            value=key,
        )

    def _get(self, op: GetOp) -> Item | None:
        latest = self._latest(op.namespace, op.key)
        if not latest or latest[0].kind != PUT_KIND:
            return None
        if not self._visible(latest[:1], op.refresh_ttl):
            return None
        found = _item(latest[0])
        return Item(
            value=found.value,
            key=found.key,
            namespace=found.namespace,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    def user_of(self, namespace: Sequence[str]) -> str | None:
        """The user ``namespace`` names (see ``namespace_user``), checked; None: no user::

            PMMStore("pmm.db", namespace_user=1).user_of(("memories", "alice"))  # 'alice'

        Args:
            namespace: A store namespace, such as ``("memories", "alice")``.

        Returns:
            The user id, or None when the namespace names none.

        Raises:
            InvalidInputError: The label (or what the callable returned) is not a valid
                user id.
        """
        return namespace_user_id(self.namespace_user, namespace)

    def _put(self, op: PutOp) -> None:
        session = namespace_session(op.namespace)
        user = self.user_of(op.namespace)
        ttl = checked_ttl(op.ttl)
        previous = self._latest(op.namespace, op.key)
        live = previous[0] if previous and previous[0].kind == PUT_KIND else None
        if live is not None and not self._visible([live], refresh=False):
            live = None  # expired or erased: a put starts a new item
        if op.value is None:
            if live is not None:
                own_session(self.mind.store, session, user)
                self.mind.remember_many(
                    [NewEvent(DELETE_KIND, "", session, None, {"key": op.key}, None, user)]
                )
            return
        if not isinstance(op.value, dict):
            raise InvalidInputError(f"a store value must be a dict, got {type(op.value).__name__}")
        now = datetime.now().astimezone().isoformat()
        meta = {
            "key": op.key,
            "created_at": (live.meta.get("created_at") if live else None) or now,
        }
        content = json.dumps(op.value, ensure_ascii=False, sort_keys=True, default=str)
        own_session(self.mind.store, session, user)
        [event] = self.mind.remember_many(
            [NewEvent(PUT_KIND, content, session, None, meta, None, user)]
        )
        if ttl is not None:
            self.mind.store.set_expiry([(event.id, ttl, time.time() + ttl * 60)])
        if self.index_config is not None and op.index is not False:
            self._embed(event.id, op.value, op.index)

    def _embed(self, event_id: int, value: dict[str, Any], fields: list[str] | None) -> None:
        texts = [t for path in (fields or self.fields) for t in _texts_at(value, path)]
        if not texts:
            return
        vector = np.asarray(self.embeddings.embed_documents(["\n".join(texts)])[0], np.float32)
        self.mind.store.put_embeddings(
            self.embedding_model, int(vector.shape[0]), [(event_id, vector.tobytes())]
        )

    def _live_under(self, prefix: Sequence[str]) -> list[Event]:
        root = namespace_session(prefix)
        found = self.mind.store.latest_per_meta_key(
            kinds=(PUT_KIND, DELETE_KIND), field="key", session_prefix=root
        )
        width = len(prefix)
        return [
            e
            for e in found
            if e.kind == PUT_KIND
            and e.session_id is not None
            and session_namespace(e.session_id)[:width] == tuple(prefix)
        ]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        live = self._visible(self._live_under(op.namespace_prefix), refresh=False)
        if op.filter:
            live = [e for e in live if value_matches(_value(e), op.filter)]
        if not op.query or not op.query.strip():
            live.sort(key=lambda e: e.id, reverse=True)  # newest first
            return self._page(live[op.offset : op.offset + op.limit], None, op.refresh_ttl)
        by_id = {e.id: e for e in live}
        rankings: dict[str, list[int]] = {}
        scores: dict[int, float] = {}
        if self.mode != "semantic":
            rankings["keyword"] = self._keyword_ranking(op.query, live)
        if self.mode != "keyword":
            similarity = self._similarity(op.query, list(by_id))
            rankings["semantic"] = sorted(similarity, key=lambda i: -similarity[i])
            scores = similarity
        if self.mode == "semantic":
            ranked = [(i, scores[i]) for i in rankings["semantic"]]
        else:
            ranked = [(i, s) for i, s, _ in rrf_fuse(rankings)]
        page = ranked[op.offset : op.offset + op.limit]
        return self._page([by_id[i] for i, _ in page], [float(s) for _, s in page], op.refresh_ttl)

    def _page(
        self, events: list[Event], scores: list[float] | None, refresh: bool
    ) -> list[SearchItem]:
        """The search result for ``events``; their TTL pushed back when ``refresh``."""
        if refresh and events:
            self.mind.store.refresh_expiry([e.id for e in events], time.time())
        return [_item(e, None if scores is None else scores[n]) for n, e in enumerate(events)]

    def _keyword_ranking(self, query: str, live: list[Event]) -> list[int]:
        """The live items' ids by BM25 (best first), ranked within their namespaces only:
        each namespace session is searched on its own, as deep as it holds puts, so that
        no other namespace's items can push them out of the result."""
        wanted = {e.id for e in live}
        store = self.mind.store
        hits: list[tuple[int, float]] = []
        for session in sorted({e.session_id for e in live if e.session_id is not None}):
            depth = store.count(session_id=session, kinds=(PUT_KIND,))
            hits += store.search_text(query, limit=depth, session_id=session, kinds=(PUT_KIND,))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return [i for i, _ in hits if i in wanted]

    def _similarity(self, query: str, event_ids: list[int]) -> dict[int, float]:
        wanted = set(event_ids)
        stored = [
            (i, v) for i, v in self.mind.store.embeddings(self.embedding_model) if i in wanted
        ]
        if not stored:
            return {}
        matrix = np.stack([np.frombuffer(v, dtype=np.float32) for _, v in stored])
        query_vector = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query_vector) or 1.0)
        sims = matrix @ query_vector / np.where(norms == 0, 1.0, norms)
        return {i: float(s) for (i, _), s in zip(stored, sims, strict=True)}

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {
            session_namespace(e.session_id)
            for e in self._visible(self._live_under(()), refresh=False)
            if e.session_id
        }
        if op.match_conditions:
            namespaces = {
                ns
                for ns in namespaces
                if all(namespace_matches(c, ns) for c in op.match_conditions)
            }
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        ordered = sorted(namespaces)
        return ordered[op.offset : op.offset + op.limit]


def _value(event: Event) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(event.content or "{}")
    return value


def _item(event: Event, score: float | None = None) -> SearchItem:
    if event.session_id is None:  # every store event has one; keeps mypy sure
        raise InvalidInputError(f"event {event.id} has no session")
    updated = datetime.fromisoformat(event.ts.replace("Z", "+00:00"))
    created_raw = event.meta.get("created_at")
    created = datetime.fromisoformat(created_raw) if isinstance(created_raw, str) else updated
    return SearchItem(
        namespace=session_namespace(event.session_id),
        key=str(event.meta["key"]),
        value=_value(event),
        created_at=created,
        updated_at=updated,
        score=score,
    )


def _texts_at(value: dict[str, Any], path: str) -> list[str]:
    if path == "$":
        return [json.dumps(value, ensure_ascii=False, sort_keys=True)]
    return get_text_at_path(value, tokenize_path(path))
