"""Exceptions PMM raises for problems a user can cause and fix.

Every message says what went wrong and what to do about it::

    try:
        store = EventStore("/no/such/dir/pmm.db")
    except PMMError as exc:
        print(exc)   # "folder /no/such/dir does not exist: create it or pick another --db path"
"""

from __future__ import annotations


class PMMError(Exception):
    """Base class of every error PMM raises on purpose."""


class InvalidInputError(PMMError, ValueError):
    """Content, meta or an argument that PMM cannot store as given."""


class DatabaseError(PMMError):
    """The database file cannot be opened, read or written."""


class NotADatabaseError(DatabaseError):
    """The path holds a file that is not a SQLite database."""


class CorruptDatabaseError(NotADatabaseError):
    """The database is damaged (SQLite reports a malformed page): a failure found, not a
    wrong path; ``pmm check``, ``pmm recover`` and ``pmm restore`` are the ways out."""


class StoreRefusedError(CorruptDatabaseError):
    """This store saw its database report damage earlier and refuses every later write
    (nothing more goes into a file known to be corrupt). Reads still work, for salvage.
    The refusal lasts until the file is opened again (a new :class:`pmm.Mind` or store)
    after ``pmm check`` passes, or ``pmm recover`` / ``pmm restore`` replaced it."""


class ReadOnlyDatabaseError(DatabaseError):
    """The database (or its folder) cannot be written."""


class DiskFullError(DatabaseError):
    """A write failed because the disk (or the database's size limit) is full: the write
    was not stored; what was acknowledged before it is safe."""


class UnsupportedOperationError(DatabaseError):
    """The storage backend in use cannot do this (yet); the message names the way out."""


class MigrationError(DatabaseError):
    """A schema migration could not be applied."""


class NewerSchemaError(MigrationError):
    """The database was written by a newer PMM (its schema version is above the newest
    migration this PMM knows): it is neither read nor written; upgrade PMM."""


class IntegrityError(DatabaseError):
    """The hash chain does not verify: the log was edited, cut or forged."""


class ConfigurationError(PMMError, ValueError):
    """A PMM_* setting has a value PMM does not understand."""


class MissingDependencyError(PMMError, ImportError):
    """An optional extra is needed for the requested feature."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the package {package!r}: install it with "
            f"`pip install 'pmm-memory[{extra}]'`"
        )
        self.package = package
        self.extra = extra


class BackendError(PMMError):
    """A summarizer or embedder failed; callers fall back to the next backend."""


class EventNotFoundError(PMMError, KeyError):
    """No event has the requested id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "event not found"
