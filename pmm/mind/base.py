"""What every part of :class:`pmm.Mind` shares: the parts ``Mind.__init__`` wires, its
settings and the session check. ``Mind``'s methods are split by what a caller does:
writing (:mod:`pmm.mind.writing`), administration (:mod:`pmm.mind.admin`), and the wiring,
lifecycle, reading and derived data (:mod:`pmm.mind.core`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pmm.context.checks import checked_session
from pmm.context.sessions import SessionContexts
from pmm.context.tokens import TokenCounter
from pmm.context.users import (
    SessionOwners,
)
from pmm.dream.processing import Processor
from pmm.dream.upkeep import Upkeep
from pmm.settings import Settings
from pmm.storage import EventLog

log = logging.getLogger("pmm")

if TYPE_CHECKING:
    pass


class MindParts:
    """The attributes ``Mind.__init__`` sets, declared once for its mixins."""

    store: EventLog
    counter: TokenCounter
    _settings: Settings
    _closed: bool
    _processor: Processor
    _contexts: SessionContexts
    _upkeep: Upkeep
    _owners: SessionOwners

    @property
    def settings(self) -> Settings:
        """The settings in force; assigning new ones applies them to context and upkeep."""
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self._settings = self._contexts.settings = self._upkeep.settings = settings

    @property
    def _derived_enabled(self) -> bool:
        return self.settings.enable_summary or self.settings.enable_embeddings

    def _session(self, session_id: str | None) -> str:
        return checked_session(session_id, self.settings.session_id)
