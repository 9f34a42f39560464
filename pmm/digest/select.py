"""Which digest backend runs: ``PMM_SUMMARIZER`` = auto | llm | local | heuristic, with
fallback to the next one down, and a report for ``doctor``.

    digester = build_digester(Settings.load())           # FallbackDigester
    digester.digest_many(texts, roles)                   # never fails while heuristic works
    for status in backend_status(Settings.load()):
        print(status.name, status.available, status.detail)

The chains:

- ``auto``: llm (only when a chat model is passed in or ``OPENAI_API_KEY`` is set), then
  local (only when ``doctor``'s probe finds torch, transformers and the model's files here;
  the probe is cached per process), then heuristic;
- ``llm``: llm, then heuristic; ``local``: local, then heuristic; ``heuristic``: heuristic.

Turns shorter than ``summary_min_chars`` are their own summary (method ``verbatim``) and never
reach a model. A backend that fails when it loads logs one warning and is not tried again; one
that fails on a batch logs one warning and that batch goes to the next backend (the warning is
not repeated while it keeps failing for the same reason).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from pmm.digest.base import Digest, Digester
from pmm.digest.heuristic import HeuristicDigester
from pmm.digest.keywords import heuristic_keywords, spacy_pipeline_status
from pmm.errors import BackendError
from pmm.events.roles import roles_for, with_speaker
from pmm.models.redact import error_text
from pmm.settings import Settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "BackendFactory",
    "BackendStatus",
    "FallbackDigester",
    "backend_status",
    "build_digester",
    "chain_names",
]

logger = logging.getLogger("pmm.digest")


@dataclass(frozen=True)
class BackendFactory:
    """A backend not loaded yet: ``load()`` builds it (and may raise)."""

    name: str
    load: Callable[[], Digester]


@dataclass(frozen=True)
class BackendStatus:
    """Whether a backend can run here, and why (or why not); see :func:`backend_status`."""

    name: str
    available: bool
    detail: str


class FallbackDigester:
    """Runs a chain of backends, first to last, until one digests the batch.

    ``backends`` are digesters or :class:`BackendFactory` (loaded on first use). Texts shorter
    than ``min_chars`` are their own summary (method ``verbatim``); the others go to the
    chain ``batch_size`` at a time. If every backend fails, :class:`BackendError` is raised.
    """

    name = "fallback"

    def __init__(
        self,
        backends: Sequence[Digester | BackendFactory],
        *,
        min_chars: int = 240,
        batch_size: int = 16,
        max_keywords: int = 8,
    ) -> None:
        if not backends:
            raise ValueError("FallbackDigester needs at least one backend")
        self._chain: list[BackendFactory | Digester] = list(backends)
        self.min_chars = min_chars
        self.batch_size = max(1, batch_size)
        self.max_keywords = max_keywords
        self._failed_at_load: dict[str, str] = {}
        self._last_failure: dict[str, str] = {}
        self._lock = threading.Lock()

    @property
    def chain(self) -> list[str]:
        """Names of the backends, in the order they are tried."""
        return [backend.name for backend in self._chain]

    @property
    def failed(self) -> dict[str, str]:
        """Backends that failed to load (name → reason); they are not tried again."""
        return dict(self._failed_at_load)

    @property
    def active(self) -> str | None:
        """The first backend that has not failed to load: the one tried first."""
        for name in self.chain:
            if name not in self._failed_at_load:
                return name
        return None

    def _loaded(self, index: int) -> Digester | None:
        """Backend ``index``, loaded now if needed; None if it cannot load (warned once)."""
        backend = self._chain[index]
        if not isinstance(backend, BackendFactory):
            return backend
        if backend.name in self._failed_at_load:
            return None
        with self._lock:
            current = self._chain[index]
            if not isinstance(current, BackendFactory):
                return current
            try:
                loaded = current.load()
            except Exception as exc:
                reason = error_text(exc)  # redacted: a provider may echo its API key
                self._failed_at_load[current.name] = reason
                logger.warning(
                    "digest backend %r failed to load (%s); falling back to %s",
                    current.name,
                    reason,
                    self._next_name(index),
                )
                return None
            self._chain[index] = loaded
            return loaded

    def _next_name(self, index: int) -> str:
        rest = [n for n in self.chain[index + 1 :] if n not in self._failed_at_load]
        return repr(rest[0]) if rest else "nothing (no backend left)"

    def _run_chain(self, texts: list[str], roles: list[str | None]) -> list[Digest]:
        problems: list[str] = []
        for index in range(len(self._chain)):
            backend = self._loaded(index)
            if backend is None:
                problems.append(f"{self.chain[index]}: {self._failed_at_load[self.chain[index]]}")
                continue
            try:
                digests = backend.digest_many(texts, roles)
                if len(digests) != len(texts):
                    raise BackendError(f"returned {len(digests)} digests for {len(texts)} turns")
            except Exception as exc:
                reason = error_text(exc, backend)  # redacted: a provider may echo its key
                problems.append(f"{backend.name}: {reason}")
                self._warn_run_failure(backend.name, index, reason)
                continue
            self._last_failure.pop(backend.name, None)
            return digests
        raise BackendError("every digest backend failed: " + "; ".join(problems))

    def _warn_run_failure(self, name: str, index: int, reason: str) -> None:
        kind = reason[:48]  # the same failure again (details such as ids may differ)
        with self._lock:
            repeated = self._last_failure.get(name) == kind
            self._last_failure[name] = kind
        log = logger.debug if repeated else logger.warning
        log(
            "digest backend %r failed (%s); falling back to %s for this batch",
            name,
            reason,
            self._next_name(index),
        )

    def verbatim(self, text: str, role: str | None) -> Digest:
        """The digest of a short turn: the text itself (labelled with its speaker)."""
        stripped = " ".join(text.split())
        return Digest(
            summary=with_speaker(role, stripped),
            keywords=heuristic_keywords(text, self.max_keywords),
            method="verbatim",
        )

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        role_list = roles_for(texts, roles)
        results: list[Digest | None] = [None] * len(texts)
        pending: list[int] = []
        for i, text in enumerate(texts):
            if len(text.strip()) < self.min_chars:
                results[i] = self.verbatim(text, role_list[i])
            else:
                pending.append(i)
        for start in range(0, len(pending), self.batch_size):
            chunk = pending[start : start + self.batch_size]
            digests = self._run_chain([texts[i] for i in chunk], [role_list[i] for i in chunk])
            for i, digest in zip(chunk, digests, strict=True):
                results[i] = digest
        done = [digest for digest in results if digest is not None]
        if len(done) != len(texts):  # every slot is filled above; this guards a future edit
            raise BackendError(f"digested {len(done)} of {len(texts)} turns")
        return done


def _llm_configured(llm: BaseChatModel | None) -> bool:
    return llm is not None or bool(os.environ.get("OPENAI_API_KEY"))


def _llm_factory(settings: Settings, llm: BaseChatModel | None) -> BackendFactory:
    def load() -> Digester:
        from pmm.digest.llm import LLMDigester

        return LLMDigester(
            llm, model_name=settings.llm_model, batch_size=settings.summary_batch_size or 8
        )

    return BackendFactory("llm", load)


def _local_factory(settings: Settings) -> BackendFactory:
    def load() -> Digester:
        from pmm.digest.local import LocalDigester

        return LocalDigester(
            settings.local_summary_model,
            device=settings.device,
            batch_size=min(settings.summary_batch_size or 8, 8),
        )

    return BackendFactory("local", load)


def chain_names(settings: Settings, llm: BaseChatModel | None = None) -> list[str]:
    """The backends ``build_digester`` would try, in order."""
    choice = settings.summarizer
    if choice == "heuristic":
        return ["heuristic"]
    if choice == "llm":
        return ["llm", "heuristic"]
    if choice == "local":
        return ["local", "heuristic"]
    local = ["local"] if local_probe(settings.local_summary_model)[0] else []
    return (["llm"] if _llm_configured(llm) else []) + local + ["heuristic"]


@lru_cache(maxsize=32)
def local_probe(model: str) -> tuple[bool, str]:
    """Whether the local summarizer can load ``model`` here, and why not: torch and
    transformers installed and the model's files on disk (no model is loaded). Cached per
    process; ``local_probe.cache_clear()`` after installing something."""
    missing = [p for p in ("torch", "transformers") if importlib.util.find_spec(p) is None]
    if missing:
        return False, f"{' and '.join(missing)} not installed (pip install 'pmm-memory[local]')"
    from pmm.digest.local import model_resolves_locally

    return model_resolves_locally(model)


def build_digester(settings: Settings, llm: BaseChatModel | None = None) -> FallbackDigester:
    """The digester for ``settings.summarizer`` (see the module docstring). Nothing is loaded
    until the first turn long enough to need a model."""
    backends: list[Digester | BackendFactory] = []
    for name in chain_names(settings, llm):
        if name == "llm":
            backends.append(_llm_factory(settings, llm))
        elif name == "local":
            backends.append(_local_factory(settings))
        else:
            backends.append(HeuristicDigester())
    return FallbackDigester(
        backends,
        min_chars=settings.summary_min_chars,
        batch_size=settings.summary_batch_size,
    )


def _llm_status(settings: Settings, llm: BaseChatModel | None) -> BackendStatus:
    if llm is not None:
        return BackendStatus("llm", True, f"chat model passed in: {type(llm).__name__}")
    if importlib.util.find_spec("langchain_openai") is None:
        return BackendStatus(
            "llm", False, "langchain-openai is not installed (pip install 'pmm-memory[llm]')"
        )
    if not os.environ.get("OPENAI_API_KEY"):
        return BackendStatus("llm", False, "OPENAI_API_KEY is not set")
    base = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
    where = f" at {base}" if base else ""
    return BackendStatus("llm", True, f"ChatOpenAI model {settings.llm_model}{where}")


def _local_status(settings: Settings) -> BackendStatus:
    found, where = local_probe(settings.local_summary_model)
    if not found and "not installed" in where:
        return BackendStatus("local", False, where)
    _, keywords = spacy_pipeline_status()
    return BackendStatus("local", found, f"{where}; device {settings.device}; keywords: {keywords}")


def backend_status(settings: Settings, llm: BaseChatModel | None = None) -> list[BackendStatus]:
    """Each backend (llm, local, heuristic): can it run here, and why not. Loads no model
    and sends no request; for local it only checks that the model resolves to local files."""
    return [
        _llm_status(settings, llm),
        _local_status(settings),
        BackendStatus("heuristic", True, "always available (no model)"),
    ]
