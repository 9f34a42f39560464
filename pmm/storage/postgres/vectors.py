"""Vectors on PostgreSQL: pgvector + HNSW when the server has it, exact search otherwise.

    backend, detail = setup_vectors(db)        # at store setup: "pgvector" or "bytea"
    store.vector_backend                       # what `pmm doctor` reports
    store.search_vectors(model, query, 10)     # None on "bytea": PMM searches exactly

Vectors are always kept as float32 ``bytea`` (what :meth:`embeddings` hands out and copies
carry). When ``CREATE EXTENSION IF NOT EXISTS vector`` succeeds, each vector is also kept
as a pgvector ``vector`` column, each (model, dimension) gets an HNSW index (cosine), and
:meth:`search_vectors` asks the index for candidates with ``<=>`` and re-scores them
exactly from the float32 bytes. When it fails (the extension is not installed on the
server, or this user may not create it), PMM warns once and recall searches the float32
bytes exactly, in memory (:class:`pmm.embed.index.VectorIndex`), as on SQLite.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pmm.storage.postgres.connection import MIGRATE_LOCK, Database

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

PGVECTOR, BYTEA = "pgvector", "bytea"
CANDIDATES = 4
"""The HNSW index is asked for this many times ``k`` candidates before the exact re-score."""
EF_SEARCH = 40
"""The least ``hnsw.ef_search`` (pgvector's default; raised to the candidate count): the
width of the index walk, recall against latency (``bench/postgres.py --pgvector``, in git
at ``44d630e``)."""
_warned = False

_SEARCH_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', %s, true), CASE WHEN %s AND (SELECT"
    " string_to_array(extversion, '.')::int[] >= '{0,8,0}' FROM pg_extension"
    " WHERE extname = 'vector') THEN set_config('hnsw.iterative_scan', 'relaxed_order', true)"
    " END"
)
"""The index's candidate list, and for filtered searches pgvector 0.8's iterative scan:
without it the index hands out ``ef_search`` candidates and the filter may keep none."""


def setup_vectors(db: Database) -> tuple[str, str]:
    """Create the ``vector`` extension if the server has it, and the ``vec`` column;
    returns ``(backend, detail)``: ``("pgvector", version)`` or ``("bytea", why not)``."""
    global _warned
    failure = db.try_statement("CREATE EXTENSION IF NOT EXISTS vector")
    if failure is not None:
        if not _warned:
            _warned = True
            log.warning(
                "pgvector is not available on %s (%s): vectors are searched exactly by PMM "
                "(float32 bytea), which is fine up to about a million vectors",
                db.where,
                failure,
            )
        return BYTEA, f"pgvector not available: {failure}"
    # ALTER TABLE locks the table even when the column exists: only the first open runs it.
    # The partial index keeps the backfill's "any vector without vec?" probe from reading
    # every vector on each open.
    has_column = db.read(
        "SELECT 1 FROM pg_attribute WHERE attrelid = 'embeddings'::regclass"
        " AND attname = 'vec' AND NOT attisdropped"
    )
    if not has_column:
        with db.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            conn.execute("ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS vec vector")
            conn.execute(
                "CREATE INDEX IF NOT EXISTS embeddings_vec_missing ON embeddings (model)"
                " WHERE vec IS NULL"
            )
    _backfill(db)
    version = db.read("SELECT extversion FROM pg_extension WHERE extname = 'vector'")[0][0]
    return PGVECTOR, f"pgvector {version}, HNSW (cosine) per model"


def vector_literal(blob: bytes) -> str:
    """float32 bytes as pgvector's text form ``[x,y,...]``."""
    values = np.frombuffer(blob, dtype=np.float32)
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def _backfill(db: Database) -> None:
    """Fill ``vec`` for vectors stored before the extension was there."""
    while True:
        rows = db.read(
            "SELECT event_id, model, vector FROM embeddings WHERE vec IS NULL LIMIT 1000"
        )
        if not rows:
            return
        with db.write() as conn, conn.cursor() as cur:
            cur.executemany(
                "UPDATE embeddings SET vec = %s::vector WHERE event_id = %s AND model = %s",
                [(vector_literal(bytes(r[2])), r[0], r[1]) for r in rows],
            )
        for model, dim in {(r[1], len(bytes(r[2])) // 4) for r in rows}:
            with db.write() as conn:
                ensure_index(conn, model, dim)


def ensure_index(conn: psycopg.Connection[Any], model: str, dim: int) -> None:
    """The HNSW index of one (model, dimension), created once (under the migration lock)."""
    name = "embeddings_hnsw_" + hashlib.sha256(f"{model}\0{dim}".encode()).hexdigest()[:16]
    found = conn.execute("SELECT to_regclass(%s) IS NOT NULL, quote_literal(%s)", (name, model))
    exists, literal = found.fetchall()[0]
    if exists:
        return
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {name} ON embeddings USING hnsw"
        f" ((vec::vector({int(dim)})) vector_cosine_ops)"
        f" WHERE model = {literal} AND dim = {int(dim)}"
    )


def search_candidates(
    db: Database,
    model: str,
    query: npt.NDArray[np.float32],
    k: int,
    *,
    session_id: str | None,
    kinds: Sequence[str] | None,
    exclude_ids: Iterable[int],
    user_id: str | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` nearest vectors of ``model`` by the HNSW index (``<=>``, cosine distance),
    re-scored exactly from their float32 bytes: ``(event_id, cosine)``, best first. Within
    one session (or one user's sessions) those vectors are ordered exactly instead (an
    index walk would pass over the other sessions' vectors)."""
    dim = int(query.shape[0])
    clauses = ["m.model = %s", "m.dim = %s", "m.vec IS NOT NULL"]
    params: list[Any] = [model, dim]
    if session_id is not None:
        clauses.append("e.session_id = %s")
        params.append(session_id)
    if user_id is not None:
        clauses.append("e.user_id = %s")
        params.append(user_id)
    if kinds is not None:
        clauses.append("e.kind = ANY(%s)")
        params.append(list(kinds))
    excluded = [int(i) for i in exclude_ids]
    if excluded:
        clauses.append("m.event_id <> ALL(%s)")
        params.append(excluded)
    wanted = max(1, k) * CANDIDATES
    select = (
        "SELECT m.event_id, m.vector FROM embeddings m JOIN events e ON e.id = m.event_id"
        f" WHERE {' AND '.join(clauses)} ORDER BY "
    )
    # The index orders by the expression it was built on; the bare column does not match
    # it, so PostgreSQL orders the filtered rows exactly (through events_by_session).
    indexed = select + f"m.vec::vector({dim}) <=> %s::vector({dim}) LIMIT %s"
    exact = select + "m.vec <=> %s::vector LIMIT %s"
    literal = vector_literal(query.astype(np.float32).tobytes())
    args = [*params, literal, wanted]
    with db.write() as conn:
        if session_id is not None or user_id is not None:
            return _rescored(conn.execute(exact, args).fetchall(), query, k)
        filtered = len(clauses) > 3
        conn.execute(_SEARCH_SETTINGS, (str(max(EF_SEARCH, wanted)), filtered))
        rows = conn.execute(indexed, args).fetchall()
        if filtered and len(rows) < wanted:
            # The index ran out of candidates before the filter kept enough (rare kinds
            # in a large log): the few rows that pass, exactly.
            rows = conn.execute(exact, args).fetchall()
    return _rescored(rows, query, k)


def _rescored(
    rows: list[tuple[Any, ...]], query: npt.NDArray[np.float32], k: int
) -> list[tuple[int, float]]:
    """The ``k`` best of ``(event_id, float32 bytes)`` rows by exact cosine."""
    dim = int(query.shape[0])
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32)
    matrix = matrix.reshape(len(rows), dim)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    scores = (matrix @ (query / np.linalg.norm(query))) / norms
    ranked = sorted(zip((int(r[0]) for r in rows), scores.tolist(), strict=True),
                    key=lambda pair: (-pair[1], pair[0]))  # fmt: skip
    return [(i, float(s)) for i, s in ranked[:k]]
