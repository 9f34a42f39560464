"""PMM's storage conformance suite, published for backends that live outside this repo.

A backend's own test module imports the suite and defines one fixture, ``pmm_backend``,
that says where a fresh, empty store of the backend lives and how to open one:

    import pytest

    from pmm.testing import Backend
    from pmm.testing.conformance import *  # noqa: F403

    @pytest.fixture
    def pmm_backend(tmp_path):
        return Backend("mine", new_target=..., open=MyStore)

Every behaviour test of :mod:`pmm.testing.conformance` then runs against that backend
(PMM's own SQLite and PostgreSQL backends run the same tests, from ``tests/storage/``).
See ``docs/guides/writing-a-backend.md``. Nothing in ``pmm`` imports this package: it needs
pytest and the ``[testing]`` extra.
"""

from pmm.testing.backend import Backend

__all__ = ["Backend"]
