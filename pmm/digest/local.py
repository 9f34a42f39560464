"""The local digest: a seq2seq summarizer through transformers, keywords from spaCy.

The model (DistilBART by default, any local folder or hub id via ``PMM_LOCAL_SUMMARY_MODEL``)
runs on CUDA when available, else Apple MPS, else CPU (``PMM_DEVICE`` overrides), in batches,
with inputs truncated to the model's limit. It is loaded once per process and per device::

    digester = LocalDigester("sshleifer/distilbart-cnn-12-6")   # loads now, or raises
    digester.digest_many(["...a long turn..."], roles=["user"])  # [Digest('User: ...', ...)]

Loading never hangs on a machine without internet: the model is looked up in the folder or
the local Hugging Face cache first (``local_files_only``), and the hub is asked only when it
answers; otherwise :class:`~pmm.errors.BackendError` says how to get the model.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pmm.digest.base import Digest
from pmm.digest.keywords import SpacyKeywords, heuristic_keywords
from pmm.errors import BackendError, MissingDependencyError
from pmm.events.roles import roles_for, with_speaker
from pmm.models.devices import pick_device
from pmm.models.loading import quiet_model_loading

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "LocalDigester",
    "Seq2SeqModel",
    "clear_model_cache",
    "hub_reachable",
    "load_seq2seq",
    "model_resolves_locally",
]

logger = logging.getLogger("pmm.digest")

DEFAULT_LOCAL_MODEL = "sshleifer/distilbart-cnn-12-6"
_TRUE = {"1", "true", "yes", "on"}
_UNBOUNDED = 1_000_000  # tokenizers without a limit report a huge model_max_length
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")
_SPACES = re.compile(r"\s+")

KeywordFunction = Callable[[Sequence[str], int], list[list[str]]]


@dataclass(frozen=True)
class Seq2SeqModel:
    """A loaded tokenizer + model pair, on ``device``, with its input limit in tokens."""

    name: str
    device: str
    tokenizer: Any
    model: Any
    max_input_tokens: int


_MODELS: dict[tuple[str, str], Seq2SeqModel] = {}
_LOAD_FAILURES: dict[tuple[str, str], BackendError] = {}
"""Models that failed to load, by (model, device asked for): asked again in the same
process, :func:`load_seq2seq` raises the same error at once instead of trying for seconds."""
_MODELS_LOCK = threading.Lock()


def clear_model_cache() -> None:
    """Forget every loaded model and every remembered load failure (tests; freeing
    memory; after installing a model)."""
    with _MODELS_LOCK:
        _MODELS.clear()
        _LOAD_FAILURES.clear()


def _offline() -> bool:
    return any(
        os.environ.get(name, "").strip().lower() in _TRUE
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


@lru_cache(maxsize=1)
def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub (``HF_ENDPOINT``, or the HTTPS proxy in front of it)
    accepts a TCP connection within ``timeout`` seconds. Asked once per process."""
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
    target = urlsplit(proxy or os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = target.hostname
    if not host:
        return False
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or "\\" in name or name.count("/") > 1


def model_resolves_locally(name: str) -> tuple[bool, str]:
    """Whether ``name`` (a folder or hub id) can be loaded without a download, and where
    from; checks files only, never loads or downloads the model."""
    path = Path(name).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            return True, f"local folder {path}"
        return False, f"folder {path} has no config.json: it is not a saved model"
    if path.exists() or _looks_like_path(name):
        return False, f"{name} is not a folder with a saved model"
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False, "huggingface_hub is not installed (pip install 'pmm-memory[local]')"
    found = try_to_load_from_cache(name, "config.json")
    if isinstance(found, str):
        return True, f"{name} is in the Hugging Face cache"
    return False, (
        f"{name} is not in the local Hugging Face cache: download it once with "
        f"`hf download {name}` (or point PMM_LOCAL_SUMMARY_MODEL at a folder)"
    )


def _import_transformers() -> tuple[Any, Any]:
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise MissingDependencyError("the local summarizer", package, "local")
    try:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    except ImportError as exc:
        raise MissingDependencyError("the local summarizer", "transformers", "local") from exc
    return AutoTokenizer, AutoModelForSeq2SeqLM


def _from_pretrained(name: str, **kwargs: Any) -> tuple[Any, Any]:
    auto_tokenizer, auto_model = _import_transformers()
    with quiet_model_loading():
        tokenizer = auto_tokenizer.from_pretrained(name, **kwargs)
        model = auto_model.from_pretrained(name, **kwargs)
    return tokenizer, model


def _load_files(name: str) -> tuple[Any, Any]:
    """Tokenizer and model from a folder, the HF cache, or (only when it answers) the hub."""
    path = Path(name).expanduser()
    if path.is_dir():
        return _from_pretrained(str(path))
    try:
        return _from_pretrained(name, local_files_only=True)
    except OSError as cached_error:
        if _offline():
            raise BackendError(
                f"local summary model {name!r} is not in the Hugging Face cache and "
                "HF_HUB_OFFLINE is set: download it where there is internet "
                f"(`hf download {name}`) or set PMM_LOCAL_SUMMARY_MODEL to a folder"
            ) from cached_error
        if not hub_reachable():
            raise BackendError(
                f"local summary model {name!r} is not in the Hugging Face cache and the hub "
                "cannot be reached: download it where there is internet "
                f"(`hf download {name}`) or set PMM_LOCAL_SUMMARY_MODEL to a folder"
            ) from cached_error
    logger.info("downloading summary model %s from the Hugging Face hub", name)
    return _from_pretrained(name)


def load_seq2seq(model: str = DEFAULT_LOCAL_MODEL, device: str = "auto") -> Seq2SeqModel:
    """The tokenizer and seq2seq model ``model`` on ``device`` (auto, cpu, cuda, mps), loaded
    once per process and cached by (model, resolved device).

    Raises :class:`~pmm.errors.MissingDependencyError` without torch/transformers and
    :class:`~pmm.errors.BackendError` when the model cannot be found or loaded; a model
    that failed to load is not tried again in this process (the same error is raised at
    once; :func:`clear_model_cache` forgets it).
    """
    remembered = _LOAD_FAILURES.get((model, device))
    if remembered is not None:
        raise BackendError(f"{remembered} (remembered from an earlier attempt)")
    path = Path(model).expanduser()
    if not path.is_dir() and (path.exists() or _looks_like_path(model)):
        raise BackendError(
            f"local summary model {model!r} is not a folder: set PMM_LOCAL_SUMMARY_MODEL to a "
            "folder holding a saved seq2seq model, or to a Hugging Face model id"
        )
    _import_transformers()
    resolved = pick_device(device)
    key = (model, resolved)
    with _MODELS_LOCK:
        cached = _MODELS.get(key)
        if cached is not None:
            return cached
        try:
            tokenizer, network = _load_files(model)
        except MissingDependencyError:
            raise
        except BackendError as exc:
            _LOAD_FAILURES[(model, device)] = exc
            raise
        except Exception as exc:
            failure = BackendError(f"cannot load seq2seq model {model!r}: {exc}")
            _LOAD_FAILURES[(model, device)] = failure
            raise failure from exc
        if not getattr(network.config, "is_encoder_decoder", False):
            raise BackendError(
                f"{model!r} is not a seq2seq (encoder-decoder) model: the local summarizer "
                "needs one, such as sshleifer/distilbart-cnn-12-6"
            )
        network.to(resolved)
        network.eval()
        limits = [
            int(getattr(tokenizer, "model_max_length", _UNBOUNDED) or _UNBOUNDED),
            int(getattr(network.config, "max_position_embeddings", _UNBOUNDED) or _UNBOUNDED),
        ]
        limit = min(limits)
        loaded = Seq2SeqModel(
            name=model,
            device=resolved,
            tokenizer=tokenizer,
            model=network,
            max_input_tokens=limit if limit < _UNBOUNDED else 1024,
        )
        _MODELS[key] = loaded
        return loaded


def _clean(text: str) -> str:
    text = _CONTROL.sub("", text)
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    return _SPACES.sub(" ", text).strip()


class LocalDigester:
    """Summaries from a local seq2seq model, keywords from spaCy (or the heuristic rules when
    spaCy is not installed). Loads the model when constructed.

    ``max_new_tokens`` / ``min_new_tokens`` bound each summary; ``num_beams`` None keeps the
    model's own setting (4 for DistilBART-CNN).
    """

    name = "local"

    def __init__(
        self,
        model_name_or_path: str = DEFAULT_LOCAL_MODEL,
        device: str = "auto",
        batch_size: int = 8,
        max_new_tokens: int = 64,
        *,
        min_new_tokens: int = 8,
        num_beams: int | None = None,
        max_keywords: int = 8,
        keywords: KeywordFunction | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if not 0 < min_new_tokens <= max_new_tokens:
            raise ValueError("need 0 < min_new_tokens <= max_new_tokens")
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.min_new_tokens = min_new_tokens
        self.num_beams = num_beams
        self.max_keywords = max_keywords
        self.seq2seq = load_seq2seq(model_name_or_path, device)
        self.keywords_many = keywords or self._default_keywords()

    @staticmethod
    def _default_keywords() -> KeywordFunction:
        if importlib.util.find_spec("spacy") is None:
            logger.warning(
                "spaCy is not installed: the local summarizer takes its keywords from the "
                "heuristic rules (pip install 'pmm-memory[local]' for entity keywords)"
            )
            return lambda texts, limit: [heuristic_keywords(t, limit) for t in texts]
        extractor = SpacyKeywords()
        extractor.load()
        return extractor.keywords_many

    @property
    def device(self) -> str:
        return self.seq2seq.device

    def summarize(self, texts: Sequence[str]) -> list[str]:
        """One summary per text (no speaker label), generated ``batch_size`` at a time."""
        import torch

        tokenizer, model = self.seq2seq.tokenizer, self.seq2seq.model
        options: dict[str, Any] = {
            # lengths count the decoder start token; max_length/min_length rather than
            # *_new_tokens so the model's own max_length does not trigger a warning
            "max_length": self.max_new_tokens + 1,
            "min_length": self.min_new_tokens + 1,
        }
        if self.num_beams is not None:
            options["num_beams"] = self.num_beams
        summaries: list[str] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [_SPACES.sub(" ", t).strip() for t in texts[start : start + self.batch_size]]
            encoded = tokenizer(
                batch,
                truncation=True,
                max_length=self.seq2seq.max_input_tokens,
                padding=True,
                return_tensors="pt",
            ).to(self.seq2seq.device)
            with torch.inference_mode():
                output = model.generate(**encoded, **options)
            decoded = tokenizer.batch_decode(output, skip_special_tokens=True)
            summaries.extend(_clean(str(text)) for text in decoded)
        return summaries

    def digest_many(
        self, texts: Sequence[str], roles: Sequence[str | None] | None = None
    ) -> list[Digest]:
        role_list = roles_for(texts, roles)
        if not texts:
            return []
        summaries = self.summarize(texts)
        empty = [i for i, summary in enumerate(summaries) if not summary]
        if empty:
            raise BackendError(
                f"the local model {self.seq2seq.name!r} produced an empty summary "
                f"for {len(empty)} of {len(texts)} turns"
            )
        keywords = self.keywords_many(texts, self.max_keywords)
        return [
            Digest(summary=with_speaker(role, summary), keywords=kw, method=self.name)
            for summary, kw, role in zip(summaries, keywords, role_list, strict=True)
        ]
