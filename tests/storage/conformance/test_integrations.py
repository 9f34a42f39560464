"""The LangChain v1 pieces (PMMStore, the middleware's message ids): the published suite
(:mod:`pmm.testing.conformance.integrations`) on SQLite, PostgreSQL and PostgreSQL with pgvector."""

from pmm.testing.conformance.integrations import *  # noqa: F403
