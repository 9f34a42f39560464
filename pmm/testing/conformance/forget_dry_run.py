"""forget(dry_run=True) on every backend: it picks what the real forget erases and writes
nothing (same head, same rows, same text)."""

from __future__ import annotations

from pmm.storage.base import EventLog
from pmm.testing.fixtures import *  # noqa: F403


def test_dry_run_picks_what_forget_erases_and_writes_nothing(log: EventLog) -> None:
    a = log.append("prompt", "I live in Porto.", session_id="ana", role="user")
    b = log.append("prompt", "locker 4471 at the Quokkaberry gym", session_id="ana", role="user")
    c = log.append("prompt", "quokkaberry again", session_id="bo", role="user")
    head = log.head()
    dry = log.forget(match="QUOKKABERRY", reason="asked", dry_run=True)
    assert dry.dry_run and dry.erased == [b.id, c.id] and dry.markers == []
    assert log.head() == head and log.count() == 3
    assert log.get(b.id).content == "locker 4471 at the Quokkaberry gym"
    real = log.forget(match="QUOKKABERRY", reason="asked")
    assert real.erased == dry.erased and not real.dry_run
    assert log.get(b.id).content is None and log.get(a.id).content == "I live in Porto."
