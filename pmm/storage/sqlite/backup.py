"""Backup, restore, salvage and health checks of an event log file.

Usage::

    from pmm.storage.sqlite.backup import backup, restore, recover, check

    backup("pmm.db", "pmm-2026-11-22.db")       # online: writers may keep appending
    restore("pmm-2026-11-22.db", "pmm.db")      # refuses a copy whose chain does not verify,
                                                 # or that holds what was erased since
    report = recover("broken.db", "salvaged.db")
    report.lost, report.unverified               # exactly which ids are gone or do not verify
    report.top, report.damaged, report.derived   # the highest id known, what SQLite found
                                                 # damaged, what became of indexes/vectors
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
    table_counts,
    write_salvaged,
)
from pmm.storage.sqlite.restore_erasures import (
    ErasedDataInBackupError,
    UncheckedErasuresError,
    UndoneErasure,
    reapply,
    undone_erasures,
)
from pmm.storage.sqlite.salvage import Salvage, compress_ids, salvage


@dataclass(frozen=True, slots=True)
class BackupReport:
    """A copy written by :func:`backup` (or :func:`restore`) and its verified chain."""

    source: str
    target: str
    bytes: int
    seconds: float
    verify: VerifyReport
    reapplied: list[UndoneErasure] = field(default_factory=list)
    """Restore ``--force`` only: the erasures the backup undid, applied again."""
    markers: list[int] = field(default_factory=list)
    """The ``redaction`` events that record the erasures applied again."""
    warnings: list[str] = field(default_factory=list)
    """What restore ``--force`` could not check (a current log too damaged to read)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "bytes": self.bytes,
            "seconds": self.seconds,
            "verify": self.verify.to_dict(),
            "reapplied": [e.to_dict() for e in self.reapplied],
            "markers": self.markers,
            "warnings": self.warnings,
        }


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
    """What :func:`recover` salvaged from a damaged file, and what it could not read."""

    source: str
    target: str
    salvaged: int
    """Event rows read and written to the new file."""
    lost: list[int]
    """Every id from 1 to ``top`` that is not in the new file: no read of the damaged file
    returned it (not even on its own), or its row was too damaged to be written."""
    unverified: list[int]
    """Salvaged rows whose own hash or content no longer matches (edited or damaged)."""
    broken_links: list[int]
    """Salvaged rows whose ``prev_hash`` does not reach the row before them (it was lost)."""
    last_id: int | None
    """The newest salvaged id."""
    edges: int
    """Edges copied into the new file (those between salvaged events)."""
    embeddings: int
    """Vectors copied into the new file (those of salvaged events)."""
    errors: list[str] = field(default_factory=list)
    """Read errors (the first few ids whose read failed, claims not believed)."""
    verify: VerifyReport | None = None
    top: int = 0
    """The highest id the damaged file knows of: its chains' highest recorded head (else
    ``max(id)`` and the ids read), moved on by rows found just past it (``top_sources``
    says which record said what)."""
    top_sources: dict[str, int] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    """Tables that could not be read to their end (``name: rows read, then the error``)."""
    damaged: list[str] = field(default_factory=list)
    """Tables and indexes of the damaged file that ``PRAGMA integrity_check`` names."""
    derived: list[str] = field(default_factory=list)
    """What became of the derived data: indexes rebuilt, vectors, edges, chains copied."""

    @property
    def complete(self) -> bool:
        return not (self.lost or self.unverified or self.broken_links or self.unreadable)

    @property
    def lost_ranges(self) -> list[tuple[int, int]]:
        """``lost`` as ``(first, last)`` runs of ids."""
        return compress_ids(self.lost)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verify"] = self.verify.to_dict() if self.verify else None
        data["complete"] = self.complete
        data["lost_ranges"] = [list(r) for r in self.lost_ranges]
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

    Refused (nothing changes) when the backup's chain does not verify, or when it still
    holds what the current log records as erased (``redaction`` events newer than the
    backup: see :mod:`pmm.storage.sqlite.restore_erasures`), raising
    :class:`ErasedDataInBackupError` that names those erasures. With ``force`` it is
    restored anyway, and those erasures are then applied again to the restored log (the
    report's ``reapplied`` lists them, ``markers`` the new redaction events). A current
    file too damaged to read is refused (:class:`UncheckedErasuresError`) unless ``force``:
    then nothing is compared, and ``warnings`` says so. The current file is first copied
    to ``<db_path>.before-restore-<UTC time>``.
    """
    src, dst = str(source), str(db_path)
    if not Path(src).is_file():
        raise InvalidInputError(f"no backup at {src}")
    started = time.perf_counter()
    staged = dst + ".restoring"
    remove_files(staged)
    copy_file(src, staged)
    markers: list[int] = []
    warnings: list[str] = []
    try:
        with EventStore(staged) as copy:
            report = copy.verify()
        if not report.ok and not force:
            raise IntegrityError(
                f"{src} does not verify at event {report.first_bad_id}: {report.reason}; "
                "nothing was restored (--force restores it anyway)"
            )
        undone, unchecked = _erasures(dst, staged, force)
        if undone and not force:
            raise ErasedDataInBackupError(
                f"{src} still holds what {dst} records as erased since the backup was taken:\n"
                + "\n".join(f"  {e.describe()}" for e in undone)
                + (f"\n{unchecked}" if unchecked else "")
                + "\nnothing was restored; --force restores it and erases these again"
            )
        if unchecked and not force:
            raise UncheckedErasuresError(
                f"{unchecked}: nothing was restored (--force restores it, erasing again"
                " what the readable records say was erased)"
            )
        warnings = [unchecked] if unchecked else []
        if Path(dst).exists():
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            copy_file(dst, f"{dst}.before-restore-{stamp}")
        copy_file(staged, dst)
    finally:
        remove_files(staged)
    if undone:
        with EventStore(dst) as store:
            markers = reapply(store, undone, src)
            report = store.verify()
    size = Path(dst).stat().st_size
    seconds = time.perf_counter() - started
    return BackupReport(src, dst, size, seconds, report, undone, markers, warnings)


def _erasures(dst: str, staged: str, force: bool) -> tuple[list[UndoneErasure], str | None]:
    """The erasures of the current log ``dst`` that the backup ``staged`` would undo, and
    what could not be checked; with ``force`` a log that cannot be read at all is that."""
    if not Path(dst).exists():
        return [], None
    try:
        return undone_erasures(dst, staged)
    except UncheckedErasuresError as exc:
        if not force:
            raise
        return [], (
            f"{dst} cannot be read ({exc.__cause__}): no erasure it records was checked"
            " against the backup or erased again"
        )


def check(path: str | os.PathLike[str], *, full: bool = False) -> CheckReport:
    """SQLite's check of every page: ``PRAGMA quick_check`` (or ``integrity_check`` when
    ``full``). Never raises for a damaged file: the damage is the report."""
    pragma = "integrity_check" if full else "quick_check"
    ok, problems = page_check(str(path), pragma)
    return CheckReport(str(path), pragma, ok, problems)


def recover(broken: str | os.PathLike[str], target: str | os.PathLike[str]) -> RecoveryReport:
    """Read every readable event row of the damaged file ``broken`` into a new log
    ``target``, then check each row and its link to the row before.

    No range read is trusted to reach its end (one can stop early, without an error, at a
    damaged page): every id up to the highest the file knows (its chains' recorded heads,
    ``max(id)``, the rows read) that a range read did not return is read on its own
    (:mod:`pmm.storage.sqlite.salvage`); what no read returns is listed in ``lost``.

    The new file keeps the salvaged rows exactly (ids, hashes, digests); its chain
    verifies only when nothing was lost. Chain secrets, edges, embeddings and store TTLs
    are copied where readable and where their events were salvaged; the full-text and
    window indexes are rebuilt from the salvaged rows; compressed text is stored plain.
    """
    src, dst = str(broken), str(target)
    if not Path(src).is_file():
        raise InvalidInputError(f"no file at {src}")
    if Path(dst).exists():
        raise InvalidInputError(f"{dst} exists: recover into a new file")
    found = salvage(src)
    rows = list(found.rows.values())
    verified, refused, mended = write_salvaged(
        dst, rows, found.edges, found.vectors, found.keys, found.expiry
    )
    errors = list(found.errors)
    errors += [f"event {i}: read damaged ({why})" for i, why in mended.items()]
    errors += [
        f"event {i}: read, but too damaged to be written ({why})" for i, why in refused.items()
    ]
    written = [r for r in rows if r[0] not in refused]
    lost = sorted(set(found.lost) | set(refused))
    unverified, broken_links = _check_rows(written)
    unverified = sorted(set(unverified) | set(mended))  # written with damaged fields replaced
    counts = table_counts(dst, ("edges", "embeddings", "store_expiry", "chains"))
    return RecoveryReport(
        source=src,
        target=dst,
        salvaged=len(written),
        lost=lost,
        unverified=unverified,
        broken_links=broken_links,
        last_id=written[-1][0] if written else None,
        edges=counts["edges"],
        embeddings=counts["embeddings"],
        errors=errors,
        verify=verified,
        top=found.top,
        top_sources=dict(found.claims),
        unreadable=list(found.unreadable),
        damaged=list(found.damaged),
        derived=_derived(found, len(written), counts),
    )


def _derived(found: Salvage, written: int, counts: dict[str, int]) -> list[str]:
    """What became of each kind of derived data, in words for the report."""
    compressed = sum(1 for r in found.rows.values() if isinstance(r[5], bytes))
    lines = [
        f"full-text and window indexes: rebuilt from the {written} salvaged rows"
        " (the damaged file's indexes are not copied)",
        f"embeddings: {counts['embeddings']} of {len(found.vectors)} read were copied"
        " (the others belong to lost events; `pmm embed` embeds what has no vector)",
        f"edges: {counts['edges']} of {len(found.edges)} read were copied"
        " (the others touch a lost event)",
        f"chain secrets: {counts['chains']} of {len(found.keys)} read were copied;"
        " each chain's head was recomputed from the salvaged rows",
        f"store TTLs: {counts['store_expiry']} of {len(found.expiry)} read were copied",
        "digests (summary, keywords) are part of each salvaged row and kept as they were",
    ]
    if compressed:
        lines.append(
            f"{compressed} compressed texts could not be decoded (their dictionary is lost):"
            " those rows are kept as they are and do not verify"
        )
    return lines


# -- internals -------------------------------------------------------------------------


def _check_rows(rows: list[tuple[Any, ...]]) -> tuple[list[int], list[int]]:
    """``(rows that do not verify on their own, rows whose link to the one before is cut)``."""
    unverified: list[int] = []
    broken: list[int] = []
    prev_id, prev_hash = 0, None
    chains: dict[str | None, str] = {}  # version 3: each user's chain links on its own
    for row in rows:
        id_, prev, digest, version = row[0], row[8], row[9], row[10]
        try:
            own = _verifies(row)
        except (TypeError, ValueError, AttributeError, UnicodeError):
            own = False  # a damaged row whose fields are not even of their types
        if not own:
            unverified.append(id_)
        if version == CHAIN_HASH_VERSION:
            user_dig = row[15]
            if prev != chains.get(user_dig):
                broken.append(id_)
            chains[user_dig] = digest
            continue
        if id_ != prev_id + 1 or prev != prev_hash:
            broken.append(id_)
        prev_id, prev_hash = id_, digest
    return unverified, broken


def _verifies(row: tuple[Any, ...]) -> bool:
    """Whether a salvaged row's text matches its SHA-256 and its hash its fields."""
    id_, ts, kind, session, role, content, sha, meta, prev, digest, version, *rest = row
    ok = content is None or (isinstance(content, str) and sha256_hex(content) == sha)
    if version == CHAIN_HASH_VERSION:
        expected = sha256_hex(
            chain_payload_v3(
                ts=ts, kind=kind, role=role, content_sha256=sha, meta_json=meta,
                prev_hash=prev, user_digest=rest[4], session_digest=rest[5],
            )
        )  # fmt: skip
    elif version in (HASH_VERSION, USER_HASH_VERSION):
        user = rest[3] if len(rest) > 3 else None  # after summary, keywords, digest_method
        expected = sha256_hex(
            chain_payload(
                id=id_, ts=ts, kind=kind, session_id=session, role=role, content_sha256=sha,
                meta_json=meta, prev_hash=prev, user_id=user,
                with_user=version == USER_HASH_VERSION,
            )
        )  # fmt: skip
    elif version == LEGACY_HASH_VERSION and content is not None:
        expected = legacy_hash(prev, kind, content, meta)
    else:
        expected = None
    return ok and expected == digest
