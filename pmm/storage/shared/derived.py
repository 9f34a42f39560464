"""Derived data read the same way on every backend: edges, vectors, store expiry, stats.

store.edge_targets([summary.id], "summarizes")     # {summary.id: [turn.id, ...]}
store.embeddings_of("all-MiniLM-L6-v2", [3, 4])   # [(3, b"..."), (4, b"...")]
store.set_expiry([(ev.id, 30.0, time.time() + 1800)])
store.stats()["by_kind"]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pmm.storage.shared.primitives import Primitives


class SharedDerived(Primitives):
    """Edges, vectors, expiry and stats over :class:`Primitives`."""

    # -- edges -----------------------------------------------------------------------

    def edge_targets(self, srcs: Iterable[int], kind: str) -> dict[int, list[int]]:
        """``{src: [dst, ...]}`` of the ``kind`` edges leaving ``srcs`` (dst ascending)."""
        found: dict[int, list[int]] = {}
        for src, dst in self._edge_pairs("src", list(dict.fromkeys(srcs)), (kind,)):
            found.setdefault(src, []).append(dst)
        return found

    def edge_sources(self, dsts: Iterable[int], kind: str | Sequence[str]) -> dict[int, list[int]]:
        """``{dst: [src, ...]}`` of the edges of ``kind`` (one or several) reaching ``dsts``."""
        kinds = (kind,) if isinstance(kind, str) else tuple(kind)
        found: dict[int, list[int]] = {}
        for src, dst in self._edge_pairs("dst", list(dict.fromkeys(dsts)), kinds):
            found.setdefault(dst, []).append(src)
        return found

    def edges_from(self, src: int, kind: str) -> list[int]:
        """The targets of the ``kind`` edges leaving ``src``, ascending."""
        return self.edge_targets([src], kind).get(src, [])

    # -- vectors ---------------------------------------------------------------------

    def embeddings(self, model: str, *, after_id: int = 0) -> list[tuple[int, bytes]]:
        """``(event_id, vector bytes)`` of ``model`` for events with ids above ``after_id``."""
        return self._vectors(model, after_id=after_id)

    def embeddings_of(self, model: str, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        """``(event_id, vector bytes)`` of ``model`` for the events ``ids`` that have one,
        by id (a few sessions' vectors, without loading every vector of the model)."""
        wanted = sorted(set(ids))
        return self._vectors(model, ids=wanted) if wanted else []

    # -- LangGraph store TTL (not chained: a read may push the time back) ---------------

    def set_expiry(self, rows: Iterable[tuple[int, float, float]]) -> None:
        """Record ``(event_id, ttl_minutes, expires_at)`` rows (replacing earlier ones)::

        store.set_expiry([(ev.id, 30.0, time.time() + 1800)])   # (event, TTL min, Unix s)
        """
        self._expiry_write(list(rows))

    def refresh_expiry(self, event_ids: Iterable[int], now: float) -> int:
        """Set these events' expiry to ``now`` plus their TTL (those not yet expired);
        returns how many were refreshed."""
        ids = sorted(set(event_ids))
        return self._expiry_refresh(ids, now) if ids else 0

    def expiry(self, event_ids: Iterable[int]) -> dict[int, float]:
        """``{event_id: expires_at}`` of those of ``event_ids`` that have a TTL."""
        ids = sorted(set(event_ids))
        return dict(self._expiry_read(ids=ids)) if ids else {}

    def expired(self, now: float) -> list[int]:
        """The events whose expiry is at or before ``now``, ascending."""
        return [event_id for event_id, _ in self._expiry_read(due_by=now)]

    # -- statistics ------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts by kind, session and role, digest and embedding coverage, and the
        backend's own figures (bytes used, schema version, ...)::

            store.stats()["by_kind"]        # {'prompt': 120, 'response': 118, ...}
        """
        total, digested, with_text = self._coverage()
        return {
            "path": self.path,
            "events": total,
            "by_kind": self._counts_by("kind"),
            "by_session": self._counts_by("session_id"),
            "by_role": self._counts_by("role"),
            "by_digest_method": self._counts_by("digest_method"),
            "digested": digested,
            "with_text": with_text,
            "embeddings": self.embedding_models(),
            **self._storage_stats(),
        }
