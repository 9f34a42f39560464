"""One user never sees another user's data: the published suite
(:mod:`pmm.testing.conformance.users_isolation`) on SQLite, PostgreSQL and
PostgreSQL with pgvector."""

from pmm.testing.conformance.users_isolation import *  # noqa: F403
