"""PMMStore's user rule and paging guards: the published suite
(:mod:`pmm.testing.conformance.store_guards`) on SQLite, PostgreSQL and PostgreSQL with pgvector."""

from pmm.testing.conformance.store_guards import *  # noqa: F403
