"""The in-memory session and user rankers: the published suite
(:mod:`pmm.testing.conformance.session_index`) on SQLite, PostgreSQL and
PostgreSQL with pgvector."""

from pmm.testing.conformance.session_index import *  # noqa: F403
