"""Each agent message stored once when writers race: the published suite
(:mod:`pmm.testing.conformance.exactly_once`) on SQLite, PostgreSQL and PostgreSQL with pgvector."""

from pmm.testing.conformance.exactly_once import *  # noqa: F403
