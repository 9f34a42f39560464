"""The digest record and the interface every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Digest:
    """A turn distilled: ``summary`` (1-2 sentences that say who said it), ``keywords``
    (entities and topics) and the ``method`` that made it (``llm``, ``local``,
    ``heuristic`` or ``verbatim`` for turns short enough to be their own summary)."""

    summary: str
    keywords: list[str] = field(default_factory=list)
    method: str = "heuristic"


@runtime_checkable
class Digester(Protocol):
    """A digest backend. ``roles`` (``user``, ``assistant``, ...) tells who said each text."""

    name: str

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]: ...
