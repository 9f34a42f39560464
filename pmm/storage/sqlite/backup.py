"""Backup, restore, salvage and health checks of an event log file.

Usage::

    from pmm.storage.sqlite.backup import backup, restore, recover, check

    backup("pmm.db", "pmm-2026-11-22.db")       # online: writers may keep appending
    restore("pmm-2026-11-22.db", "pmm.db")      # refuses a copy whose chain does not verify
    report = recover("broken.db", "salvaged.db")
    report.lost, report.unverified               # exactly which ids are gone or do not verify
    check("pmm.db", full=True).ok                # PRAGMA integrity_check (quick_check if not full)

``pmm backup``, ``pmm restore``, ``pmm recover`` and ``pmm doctor`` call these.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pmm.errors import IntegrityError, InvalidInputError
from pmm.events.hashing import (
    CHAIN_HASH_VERSION,
    HASH_VERSION,
    LEGACY_HASH_VERSION,
    USER_HASH_VERSION,
    chain_payload,
    chain_payload_v3,
    legacy_hash,
    sha256_hex,
)
from pmm.records import VerifyReport
from pmm.storage.sqlite import EventStore
from pmm.storage.sqlite.files import (
    copy_file,
    page_check,
    remove_files,
    salvage,
    salvage_keys,
    write_salvaged,
)


@dataclass(frozen=True, slots=True)
class BackupReport:
    """A copy written by :func:`backup` (or :func:`restore`) and its verified chain."""

    source: str
    target: str
    bytes: int
    seconds: float
    verify: VerifyReport

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verify"] = self.verify.to_dict()
        return data


@dataclass(frozen=True, slots=True)
class CheckReport:
    """SQLite's own check of the file: ``quick_check`` or, with ``full``, ``integrity_check``."""

    path: str
    pragma: str
    ok: bool
    problems: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What :func:`recover` salvaged from a damaged file."""

    source: str
    target: str
    salvaged: int
    """Event rows read and written to the new file."""
    lost: list[int]
    """Ids between the first and the last salvaged id that could not be read."""
    unverified: list[int]
    """Salvaged rows whose own hash or content no longer matches (edited or damaged)."""
    broken_links: list[int]
    """Salvaged rows whose ``prev_hash`` does not reach the row before them (it was lost)."""
    last_id: int | None
    """The newest salvaged id: rows after it, if any, cannot be known."""
    edges: int
    embeddings: int
    errors: list[str] = field(default_factory=list)
    verify: VerifyReport | None = None

    @property
    def complete(self) -> bool:
        return not (self.lost or self.unverified or self.broken_links)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verify"] = self.verify.to_dict() if self.verify else None
        data["complete"] = self.complete
        return data


def backup(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> BackupReport:
    """Copy the log at ``source`` to a new file ``target`` through SQLite's online backup
    API, in one step: a consistent snapshot, while other processes keep appending (WAL
    readers do not block writers). The copy is verified before it is given its name.

    Raises :class:`InvalidInputError` when ``target`` exists, :class:`IntegrityError` when
    the copy does not verify (the source is damaged: see :func:`recover`).
    """
    src, dst = str(source), Path(target)
    if not Path(src).is_file():
        raise InvalidInputError(f"no database at {src}")
    if dst.exists():
        raise InvalidInputError(f"{dst} exists: pick a new file name for the backup")
    started = time.perf_counter()
    partial = dst.with_name(dst.name + ".partial")
    copy_file(src, str(partial))
    try:
        with EventStore(partial) as copy:
            report = copy.verify()
    except BaseException:
        remove_files(partial)
        raise
    if not report.ok:
        remove_files(partial)
        raise IntegrityError(
            f"the copy of {src} does not verify at event {report.first_bad_id}: "
            f"{report.reason}; no backup was written (try `pmm recover`)"
        )
    os.replace(partial, dst)
    return BackupReport(src, str(dst), dst.stat().st_size, time.perf_counter() - started, report)


def restore(
    source: str | os.PathLike[str], db_path: str | os.PathLike[str], *, force: bool = False
) -> BackupReport:
    """Replace the log at ``db_path`` with the backup ``source``, through the backup API
    (safe while the file is open elsewhere: others see the restored log on their next read).

    The backup's chain must verify, unless ``force``; the current file is first copied to
    ``<db_path>.before-restore-<UTC time>``.
    """
    src, dst = str(source), str(db_path)
    if not Path(src).is_file():
        raise InvalidInputError(f"no backup at {src}")
    started = time.perf_counter()
    staged = dst + ".restoring"
    remove_files(staged)
    copy_file(src, staged)
    try:
        with EventStore(staged) as copy:
            report = copy.verify()
        if not report.ok and not force:
            raise IntegrityError(
                f"{src} does not verify at event {report.first_bad_id}: {report.reason}; "
                "nothing was restored (--force restores it anyway)"
            )
        if Path(dst).exists():
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            copy_file(dst, f"{dst}.before-restore-{stamp}")
        copy_file(staged, dst)
    finally:
        remove_files(staged)
    return BackupReport(src, dst, Path(dst).stat().st_size, time.perf_counter() - started, report)


def check(path: str | os.PathLike[str], *, full: bool = False) -> CheckReport:
    """SQLite's check of every page: ``PRAGMA quick_check`` (or ``integrity_check`` when
    ``full``). Never raises for a damaged file: the damage is the report."""
    pragma = "integrity_check" if full else "quick_check"
    ok, problems = page_check(str(path), pragma)
    return CheckReport(str(path), pragma, ok, problems)


def recover(broken: str | os.PathLike[str], target: str | os.PathLike[str]) -> RecoveryReport:
    """Read every readable event row of the damaged file ``broken`` (rows on a damaged page
    are found by splitting the id range until each readable row is read on its own) into
    a new log ``target``, then check each row and its link to the row before.

    The new file keeps the salvaged rows exactly (ids, hashes, digests); its chain
    verifies only when nothing was lost. Edges and embeddings are copied when readable.
    """
    src, dst = str(broken), str(target)
    if not Path(src).is_file():
        raise InvalidInputError(f"no file at {src}")
    if Path(dst).exists():
        raise InvalidInputError(f"{dst} exists: recover into a new file")
    errors: list[str] = []
    rows, failed, edges, vectors = salvage(src, errors)
    rows.sort(key=lambda r: r[0])
    ids = {r[0] for r in rows}
    lost = sorted(set(range(1, max(ids, default=0) + 1)) - ids | set(failed))
    unverified, broken_links = _check_rows(rows)
    report = write_salvaged(dst, rows, edges, vectors, salvage_keys(src, errors))
    return RecoveryReport(
        src,
        dst,
        len(rows),
        lost,
        unverified,
        broken_links,
        rows[-1][0] if rows else None,
        len(edges),
        len(vectors),
        errors,
        report,
    )


# -- internals -------------------------------------------------------------------------


def _check_rows(rows: list[tuple[Any, ...]]) -> tuple[list[int], list[int]]:
    """``(rows that do not verify on their own, rows whose link to the one before is cut)``."""
    unverified: list[int] = []
    broken: list[int] = []
    prev_id, prev_hash = 0, None
    chains: dict[str | None, str] = {}  # version 3: each user's chain links on its own
    for id_, ts, kind, session, role, content, sha, meta, prev, digest, version, *rest in rows:
        ok = content is None or (isinstance(content, str) and sha256_hex(content) == sha)
        if version == CHAIN_HASH_VERSION:
            user_dig, session_dig = rest[4], rest[5]
            expected_v3 = sha256_hex(
                chain_payload_v3(
                    ts=ts, kind=kind, role=role, content_sha256=sha, meta_json=meta,
                    prev_hash=prev, user_digest=user_dig, session_digest=session_dig,
                )
            )  # fmt: skip
            if not ok or expected_v3 != digest:
                unverified.append(id_)
            if prev != chains.get(user_dig):
                broken.append(id_)
            chains[user_dig] = digest
            continue
        if version in (HASH_VERSION, USER_HASH_VERSION):
            user = rest[3] if len(rest) > 3 else None  # after summary, keywords, digest_method
            expected = sha256_hex(
                chain_payload(
                    id=id_,
                    ts=ts,
                    kind=kind,
                    session_id=session,
                    role=role,
                    content_sha256=sha,
                    meta_json=meta,
                    prev_hash=prev,
                    user_id=user,
                    with_user=version == USER_HASH_VERSION,
                )
            )
        elif version == LEGACY_HASH_VERSION and content is not None:
            expected = legacy_hash(prev, kind, content, meta)
        else:
            expected = None
        if not ok or expected != digest:
            unverified.append(id_)
        if id_ != prev_id + 1 or prev != prev_hash:
            broken.append(id_)
        prev_id, prev_hash = id_, digest
    return unverified, broken
