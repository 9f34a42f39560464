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
from typing import Any

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
from langgraph.store.base.embed import ensure_embeddings

from pmm.errors import InvalidInputError
from pmm.integrations.store_filters import namespace_matches
from pmm.integrations.store_items import (
    DELETE_KIND,
    namespace_session,
    search_item,
    session_namespace,
    texts_at,
)
from pmm.integrations.store_search import SearchMode, StoreSearch, checked_page
from pmm.integrations.store_ttl import PUT_KIND, StoreTTL, checked_ttl, checked_ttl_config
from pmm.integrations.store_users import (
    NamespaceUser,
    checked_namespace_user,
    namespace_user_id,
    own_session,
    refuse_other_users,
)
from pmm.mind import Mind
from pmm.records import Event, NewEvent

log = logging.getLogger(__name__)

EMBEDDING_MODEL_PREFIX = "langgraph-store"


class PMMStore(StoreTTL, StoreSearch, BaseStore):
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
        refuse_other_users(self.namespace_user, latest[:1], session_namespace)
        if not self._visible(latest[:1], op.refresh_ttl):
            return None
        found = search_item(latest[0])
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
        texts = [t for path in (fields or self.fields) for t in texts_at(value, path)]
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
        checked_page(op.limit, op.offset)
        found = self._live_under(op.namespace_prefix)
        refuse_other_users(self.namespace_user, found, session_namespace)
        live = self._visible(found, refresh=False)
        return self._search_live(op, live)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        checked_page(op.limit, op.offset)
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
