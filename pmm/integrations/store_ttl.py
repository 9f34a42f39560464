"""LangGraph's TTL for :class:`pmm.integrations.PMMStore`: when items expire, hiding expired
items from reads, refreshing them on read, and the sweep that erases them with ``forget``
(mixed into the store; see :mod:`pmm.integrations.langgraph` for the behaviour)::

    store = PMMStore("pmm.db", ttl={"default_ttl": 30, "sweep_interval_minutes": 1})
    store.put(("sessions", "s1"), "otp", {"code": "493021"}, ttl=5)   # minutes
    store.sweep_ttl()            # expired items erased now, no byte left; returns how many
    store.stop_ttl_sweeper()     # the background sweeper (also stopped by close())
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import threading
import time
from typing import TYPE_CHECKING

from langgraph.store.base import TTLConfig

from pmm.errors import InvalidInputError
from pmm.records import Event

if TYPE_CHECKING:
    from pmm.mind import Mind

log = logging.getLogger("pmm.integrations.langgraph")
PUT_KIND = "store_put"
TTL_REASON = "store item expired (LangGraph TTL)"


class StoreTTL:
    """The TTL half of PMMStore (needs ``self.mind`` and ``self.ttl_config``)."""

    mind: Mind
    ttl_config: TTLConfig | None

    def _init_sweeper(self) -> None:
        self._sweeper: threading.Thread | None = None
        self._stop_sweeping = threading.Event()
        self.last_sweep_error: BaseException | None = None
        """The error of the background sweeper's last pass (None when it succeeded)."""

    def sweep_ttl(self) -> int:
        """Erase every expired item (and its earlier versions) with ``forget``, in one
        request: no byte of their values stays in the file. Returns how many expired
        items were erased (0 when none had expired)."""
        store = self.mind.store
        expired = store.expired(time.time())
        if not expired:
            return 0
        targets: set[int] = set()
        items = 0
        for event in store.get_many(expired).values():
            if event.kind != PUT_KIND or event.session_id is None or event.content is None:
                continue
            items += 1
            key = event.meta.get("key")
            versions = store.events(session_id=event.session_id, kinds=(PUT_KIND,))
            targets.update(
                e.id
                for e in versions
                if e.id <= event.id and e.meta.get("key") == key and e.content is not None
            )
        if targets:
            self.mind.forget(event_ids=sorted(targets), reason=TTL_REASON)
        return items

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep_ttl` every ``sweep_interval_minutes`` (default: the TTL
        config's) in a daemon thread until :meth:`stop_ttl_sweeper` or :meth:`close`; the
        future completes when it stops. A failed pass is logged and kept in
        ``last_sweep_error``; the next pass runs as planned."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        if not interval:
            future.set_result(None)
            return future
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
            raise InvalidInputError(
                f"sweep_interval_minutes must be a positive number, got {interval!r}"
            )
        if self._sweeper is not None and self._sweeper.is_alive():
            future.set_result(None)
            return future
        self._stop_sweeping.clear()

        def sweep_loop() -> None:
            while not self._stop_sweeping.wait(float(interval) * 60):
                try:
                    swept = self.sweep_ttl()
                    self.last_sweep_error = None
                except Exception as exc:  # kept and logged; the next pass runs as planned
                    self.last_sweep_error = exc
                    log.exception("PMMStore TTL sweep failed")
                    continue
                if swept:
                    log.info("PMMStore swept %d expired items", swept)
            future.set_result(None)

        self._sweeper = threading.Thread(target=sweep_loop, daemon=True, name="pmm-ttl-sweeper")
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the background sweeper; returns whether it stopped within ``timeout``."""
        sweeper = self._sweeper
        if sweeper is None or not sweeper.is_alive():
            return True
        self._stop_sweeping.set()
        sweeper.join(timeout)
        if sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    def _visible(self, events: list[Event], refresh: bool) -> list[Event]:
        """The items of ``events`` a read may return: not erased, not expired; their TTL
        pushed back when ``refresh``."""
        kept = [e for e in events if e.content is not None]
        if not kept:
            return kept
        now = time.time()
        expiry = self.mind.store.expiry(e.id for e in kept)
        kept = [e for e in kept if expiry.get(e.id, math.inf) > now]
        if refresh and expiry:
            self.mind.store.refresh_expiry([e.id for e in kept if e.id in expiry], now)
        return kept


def checked_ttl(ttl: float | None) -> float | None:
    """A put's TTL in minutes (None: never expires); raises for anything else."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl):
        raise InvalidInputError(f"ttl must be a number of minutes or None, got {ttl!r}")
    if ttl <= 0:
        raise InvalidInputError(f"ttl must be more than 0 minutes, got {ttl!r}")
    return float(ttl)


def checked_ttl_config(config: TTLConfig | None) -> TTLConfig | None:
    """LangGraph's ``TTLConfig``, checked (unknown keys and bad values raise)."""
    if config is None:
        return None
    if not isinstance(config, dict):
        raise InvalidInputError(f"ttl must be a TTLConfig dict, got {type(config).__name__}")
    known = {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}
    unknown = sorted(set(config) - known)
    if unknown:
        raise InvalidInputError(f"unknown TTLConfig keys {unknown}: use {sorted(known)}")
    checked_ttl(config.get("default_ttl"))
    interval = config.get("sweep_interval_minutes")
    if interval is not None:
        checked_ttl(interval)
    if not isinstance(config.get("refresh_on_read", True), bool):
        raise InvalidInputError("refresh_on_read must be True or False")
    return config
