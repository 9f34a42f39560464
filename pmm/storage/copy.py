"""Copy a whole log to another place or backend, verbatim, and verify it on arrival.

    from pmm.storage.copy import copy_log

    report = copy_log("pmm.db", "postgresql://app@db.internal/pmm")   # SQLite -> PostgreSQL
    report = copy_log("postgresql://app@db.internal/pmm", "back.db")  # and back
    report.ok, report.rows, report.head

Every event keeps its id, timestamp, hash, digest and keywords; vectors are copied for every
model. The target must be empty. The source is verified first: a chain that does not verify
is not copied (``IntegrityError``), so a copy never launders a tampered log.
"""

from __future__ import annotations

import os

from pmm.errors import IntegrityError
from pmm.records import VerifyReport
from pmm.storage import open_store


def copy_log(
    source: str | os.PathLike[str], target: str | os.PathLike[str], *, batch: int = 2000
) -> VerifyReport:
    """Copy every event and vector of ``source`` into the empty log ``target``; returns the
    target's verify report (see the module docstring)."""
    with open_store(source) as src:
        checked = src.verify()
        if not checked.ok:
            raise IntegrityError(
                f"{src.path} does not verify at event {checked.first_bad_id}: {checked.reason};"
                " nothing was copied"
            )
        with open_store(target) as dst:
            report = dst.import_events(src.iter_events(batch=batch), keys=src.chain_keys())
            if report.head != checked.head or report.rows != checked.rows:
                raise IntegrityError(
                    f"the copy in {dst.path} ends at {report.head} after {report.rows} rows,"
                    f" the source at {checked.head} after {checked.rows}"
                )
            for model in src.embedding_models():
                vectors = src.embeddings(model)
                if vectors:
                    dim = len(vectors[0][1]) // 4
                    dst.put_embeddings(model, dim, vectors)
            return report
