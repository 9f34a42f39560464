"""A background thread that digests and embeds pending events in batches.

    worker = BackgroundWorker(mind.process_pending, name="pmm-digest")
    worker.wake()            # after an append: cheap, returns at once
    worker.flush(10.0)       # wait until everything pending now is done
    worker.close(10.0)       # flush, then stop the thread

Work that fails is logged (one line, once per distinct error; the traceback only at DEBUG
level) and retried after a growing pause
(0.5 s doubling up to 30 s) without waiting to be woken; the events stay pending in the
database, so nothing is lost, and a later process picks them up. A thread killed by
something that is not an ``Exception`` (``SystemExit`` from a digester, say) is logged and
restarted by the next :meth:`wake`; :meth:`status` (shown by ``Mind.stats()`` and
``pmm stats``) reports failures, restarts and the last error, so a worker is never
silently dead. Live workers are flushed at
interpreter exit within their timeout. A bound method is held weakly, so a worker never
keeps its owner (a Mind and its open file) alive.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import threading
import weakref
from collections.abc import Callable

from pmm.models.redact import error_text

log = logging.getLogger(__name__)

_LIVE: weakref.WeakSet[BackgroundWorker] = weakref.WeakSet()
MAX_BACKOFF = 30.0


class BackgroundWorker:
    """Runs ``work()`` (which returns how many items it handled; 0 = nothing left)."""

    def __init__(
        self, work: Callable[[], int], *, name: str = "pmm-worker", flush_timeout: float = 10.0
    ) -> None:
        self._work: Callable[[], Callable[[], int] | None] = (
            weakref.WeakMethod(work) if inspect.ismethod(work) else lambda: work
        )
        self.flush_timeout = flush_timeout
        self._cond = threading.Condition()
        self._requested = 0
        self._completed = 0
        self._stopping = False
        self._errors_seen: set[str] = set()
        self.last_error: BaseException | None = None
        self.failures = 0
        self.restarts = 0
        self._name = name
        self._thread = self._start_thread()
        _LIVE.add(self)

    def wake(self) -> None:
        """Ask for a round of work (non-blocking); restarts a thread that died."""
        with self._cond:
            self._requested += 1
            self._cond.notify()
        self.revive()

    def revive(self) -> bool:
        """Start a new thread if the last one died while not asked to stop; True if so."""
        with self._cond:
            if self._stopping or self._thread.is_alive():
                return False
            self.restarts += 1
            log.warning(
                "background digest thread had died (%s); restarted it (restart #%d)",
                _describe(self.last_error),
                self.restarts,
            )
            self._thread = self._start_thread()
            return True

    def status(self) -> dict[str, object]:
        """``alive``, ``failures`` (rounds that raised), ``restarts`` and ``last_error``
        (``"TypeName: message"`` of the latest failure still unresolved, else None)."""
        return {
            "alive": self._thread.is_alive(),
            "stopped": self._stopping,
            "failures": self.failures,
            "restarts": self.restarts,
            "last_error": None if self.last_error is None else _describe(self.last_error),
        }

    def _start_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self._run_guarded, name=self._name, daemon=True)
        thread.start()
        return thread

    def _run_guarded(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by status(); wake() restarts the thread
            self.last_error = exc
            self.failures += 1
            log.error(
                "background digest thread died (%s); pending events stay pending and the "
                "next wake() restarts it",
                _describe(exc),
                exc_info=exc,
            )
            with self._cond:
                self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the work pending at this call is done; False on timeout or error."""
        with self._cond:
            self._requested += 1
            target = self._requested
            self._cond.notify()
            done = self._cond.wait_for(
                lambda: self._completed >= target or not self._thread.is_alive(),
                timeout=self.flush_timeout if timeout is None else timeout,
            )
            return bool(done) and self._completed >= target and self.last_error is None

    def close(self, timeout: float | None = None) -> bool:
        """Flush, then stop the thread. Returns whether the flush finished in time."""
        if not self._thread.is_alive():
            return True
        flushed = self.flush(timeout)
        self.stop()
        if not flushed and self.last_error is not None:
            log.warning(
                "background digest stopped on an error (%s): the remaining events stay "
                "pending and are picked up by the next Mind or `pmm dream`",
                _describe(self.last_error),
            )
        elif not flushed:
            log.warning(
                "background digest did not finish within %.1fs: the remaining events stay "
                "pending and are picked up by the next Mind or `pmm dream`",
                self.flush_timeout if timeout is None else timeout,
            )
        return flushed

    def stop(self) -> None:
        """Stop the thread without flushing (pending events stay pending)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=1.0)
        _LIVE.discard(self)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        backoff = 0.0
        while True:
            with self._cond:
                # After a failure, retry when the pause is over even if nobody asks.
                self._cond.wait_for(
                    lambda: self._stopping or self._requested > self._completed,
                    timeout=backoff or None,
                )
                if self._stopping:
                    return
                target = self._requested
            work = self._work()
            if work is None:  # the owner was garbage-collected
                return
            try:
                while work():
                    if self._stopping:
                        break
                self.last_error = None
                backoff = 0.0
            except Exception as exc:  # logged below; the events stay pending for a retry
                self.last_error = exc
                self.failures += 1
                key = _describe(exc)
                if key not in self._errors_seen:
                    self._errors_seen.add(key)
                    # One line for the user; the traceback only in debug logging.
                    log.warning(
                        "background digest failed (%s); the events stay pending and will "
                        "be retried",
                        key,
                    )
                    log.debug("traceback of the background digest failure", exc_info=exc)
                backoff = min(max(backoff * 2, 0.5), MAX_BACKOFF)
            del work
            with self._cond:
                self._completed = max(self._completed, target)
                self._cond.notify_all()


def _describe(exc: BaseException | None) -> str:
    """``"TypeName: message"``, redacted: a provider's error may echo its API key."""
    return "no error recorded" if exc is None else error_text(exc)


@atexit.register
def _flush_live_workers() -> None:
    for worker in list(_LIVE):
        worker.close()
