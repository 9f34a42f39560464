"""Shared helpers of the ``pmm`` commands: exit codes, output and errors, and opening the
database.

``EXIT_OK``/``EXIT_FAILED``/``EXIT_USAGE`` and ``exit_code_of``; ``_emit`` (text or ``--json``),
``_error``/``_json_error``/``_fail``; ``_db_path``/``_existing_db``/``_sqlite_store``/``_opened``/
``_mind`` to find and open the log; and formatting (``_table``, ``format_size``, ``_percent``,
``_progress``). Command modules import from here; this module imports no other CLI module::

    return _emit(args, {"events": n}, f"events: {n}")
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmm.errors import (
    BackendError,
    CorruptDatabaseError,
    DatabaseError,
    IntegrityError,
    InvalidInputError,
    NotADatabaseError,
    PMMError,
    ReadOnlyDatabaseError,
    UnsupportedOperationError,
)
from pmm.models.redact import mask_url
from pmm.records import Event
from pmm.settings import Settings
from pmm.storage import is_postgres_url, is_url
from pmm.storage.sqlite import EventStore

if TYPE_CHECKING:
    from pmm.mind import Mind


log = logging.getLogger("pmm")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def exit_code_of(exc: PMMError) -> int:
    """1 when a failure was found or happened mid-run (a chain that does not verify, a
    backend or the file failing); 2 when the input is wrong: arguments, settings, a missing
    extra, or a --db that is no PMM database (the same code ``pmm-chat`` exits with)."""
    if isinstance(exc, CorruptDatabaseError):
        return EXIT_FAILED  # a damaged PMM file: a failure found, not a wrong --db
    if isinstance(exc, NotADatabaseError | ReadOnlyDatabaseError):
        return EXIT_USAGE
    if isinstance(exc, IntegrityError | BackendError | DatabaseError):
        return EXIT_FAILED
    return EXIT_USAGE


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    _error(message)
    if getattr(args, "json", False):
        _json_error(message, code)
    return code


def _json_error(message: str, code: int) -> None:
    print(json.dumps({"error": message, "exit_code": code}, ensure_ascii=False))


# -- helpers: database ---------------------------------------------------------------


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.load(db_path=getattr(args, "db", None))


def _db_path(args: argparse.Namespace) -> str:
    """The --db path (or PostgreSQL URL), checked: a folder or a path in a missing folder
    is a usage error."""
    settings = _settings(args)
    path = settings.db_url or settings.db_path
    if path != ":memory:" and not is_url(path):
        target = Path(path)
        if target.is_dir():
            raise InvalidInputError(f"{path} is a folder: give the path of a database file")
        if not target.parent.is_dir():
            raise InvalidInputError(
                f"folder {target.parent} does not exist: create it (mkdir -p "
                f"{target.parent}) or use another path"
            )
    return path


def _abs(path: str) -> str:
    """``path`` made absolute for output (``-`` and ``:memory:`` stay as they are; a
    database URL is shown as it is, without its password)."""
    if "://" in path:
        return mask_url(path)
    return path if path in ("-", ":memory:") else str(Path(path).resolve())


def _existing_db(args: argparse.Namespace) -> str:
    path = _db_path(args)
    if path != ":memory:" and not is_url(path) and not Path(path).exists():
        raise InvalidInputError(
            f"no database at {path}: check --db / PMM_DB_PATH, or create one with "
            f"`pmm init --db {path}`"
        )
    return path


def _sqlite_store(path: str, what: str) -> EventStore:
    """The SQLite log at ``path`` for a command that works on the file itself."""
    if is_postgres_url(path):
        from pmm.storage.postgres.connection import Database

        raise UnsupportedOperationError(
            f"{what} works on SQLite files; {Database.redacted(path)} is a PostgreSQL log "
            "(PostgreSQL applies its migrations on connect; copy it with `pmm migrate-to`)"
        )
    return EventStore(path)


@contextmanager
def _opened(path: str) -> Iterator[tuple[EventStore, list[str]]]:
    """The store at ``path`` and the backups that opening it wrote (a legacy upgrade)."""
    before = set(_backups(path))
    with _sqlite_store(path, "this command") as store:
        yield store, sorted(set(_backups(path)) - before)


def _backups(path: str) -> list[str]:
    target = Path(path)
    if path == ":memory:" or not target.parent.is_dir():
        return []
    return [str(p) for p in target.parent.glob(f"{target.name}.bak-*")]


def _migration_name(migration: Any) -> str:
    return f"{migration.version:04d}_{migration.name}"


def _applied_lines(applied: list[str], backup: str | None) -> list[str]:
    lines = []
    if backup:
        lines.append(f"legacy database backed up to {backup}")
    if applied:
        lines.append("applied migrations: " + ", ".join(applied))
    return lines


@contextmanager
def _mind(path: str, **overrides: Any) -> Iterator[Mind]:
    """A Mind on ``path`` that never starts a background worker (admin runs are one-shot)."""
    from pmm.mind import Mind

    mind = Mind(path, summary_mode="deferred", **overrides)
    try:
        yield mind
    finally:
        mind.close()


def _remove_db(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        target = Path(path + suffix)
        if target.exists():
            target.unlink()


# -- helpers: output -----------------------------------------------------------------


def _emit(args: argparse.Namespace, data: Any, text: str) -> int:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text:
        print(text)
    return EXIT_OK


def _error(message: str) -> None:
    print(f"pmm: error: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the exit flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError) as exc:  # no real stdout (e.g. captured): nothing to do
        log.debug("could not redirect stdout after a broken pipe: %s", exc)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _shown_text(event: Event) -> str:
    return event.content if event.content is not None else "(redacted)"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


@contextmanager
def _progress(label: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback drawing a bar on stderr (plain lines without
    tqdm)."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None

    if tqdm is None:
        shown: list[tuple[int, int]] = []

        def plain(done: int, total: int) -> None:
            if not shown or shown[-1] != (done, total):  # one line per step forward
                shown.append((done, total))
                print(f"{label}: {done:,}/{total:,} {unit}s", file=sys.stderr)

        yield plain
        return
    bars: list[Any] = []  # made on the first call, when the total is known

    def update(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(desc=label, unit=unit, file=sys.stderr, total=total))
        bar = bars[0]
        if bar.total != total:
            bar.total = total
            bar.refresh()
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()
