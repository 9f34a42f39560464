"""Users, sessions and assignment: the published suite
(:mod:`pmm.testing.conformance.users`) on SQLite, PostgreSQL and PostgreSQL with pgvector."""

from pmm.testing.conformance.users import *  # noqa: F403
