"""Emoji-only turns found alike: the published suite
(:mod:`pmm.testing.conformance.symbol_recall`) on SQLite, PostgreSQL and
PostgreSQL with pgvector."""

from pmm.testing.conformance.symbol_recall import *  # noqa: F403
