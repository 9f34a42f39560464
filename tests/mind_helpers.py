"""Digesters used by the Mind tests (importable by the subprocesses those tests start), and
the suite's bag-of-words ``HashEmbedder`` (from :mod:`pmm.testing.doubles`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from pmm.digest import Digest
from pmm.testing.doubles import HashEmbedder

__all__ = ["BrokenDigester", "HashEmbedder", "RecordingDigester"]


class RecordingDigester:
    """Summarises a turn as ``S(<first 20 chars>)`` and records every batch it got."""

    name = "recording"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        with self.lock:
            self.batches.append(list(texts))
        if self.delay:
            time.sleep(self.delay)
        return [
            Digest(f"S({t[:20]})", [t.split()[0]] if t.split() else [], "recording") for t in texts
        ]


class BrokenDigester:
    """Fails every time, like a backend whose server is down and nothing to fall back to."""

    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        self.calls += 1
        raise RuntimeError("summarizer is down")
