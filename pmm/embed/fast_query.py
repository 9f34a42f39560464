"""Faster encoders for recall queries: a copy of the loaded model whose linear layers keep
their weights in float16 or int8.

    from pmm.embed.sentence import SentenceEmbedder

    embedder = SentenceEmbedder()                        # PMM_QUERY_ENCODER=fp16, the default
    embedder.embed_query("where do I live?")             # float32 (384,), unit norm, fp16 copy
    embedder.embed(["I moved to Lisbon"])                # documents: the fp32 model, as before

Only queries take this path: stored vectors keep coming from the fp32 model, so switching
it on or off never re-embeds anything. The copy is made with torch's dynamic quantisation
(``torch.ao.quantization.quantize_dynamic``) of every ``nn.Linear``; the rest (embeddings,
layer norms, attention's softmax, pooling) stays float32:

- ``fp16`` (the default): weights stored as float16, multiplied in float32 (fbgemm's
  packed fp16 GEMM). Vectors within rounding of the fp32 ones (cosine > 0.99999 over
  LoCoMo's questions); about 0.7x the fp32 time on the 2-core AVX2 development machine
  (half the weight bytes and a kernel packed for a few rows; which gains more was not
  measured).
- ``int8``: int8 weights (one scale per output channel), inputs quantised per call. About
  0.5x the fp32 time, but a cosine of about 0.98 with the fp32 vectors: nearly all of the
  error comes from the feed-forward layers (quantised one at a time, each costs 0.001 to
  0.004 of cosine; an attention layer 0.00001 to 0.0003). Opt-in only.

The copy shares the model's float tensors (the token embeddings are half of MiniLM's
weights) and adds only the packed weights: about 40 MB of peak memory for fp16, 29 MB for
int8, against 239 MB for a full copy (max RSS, measured on the development machine).

``bench/fast_query.py`` (in git at ``d733cab``) printed the times and cosines; recall is on
``docs/benchmarks/recall.md``. Where a copy cannot be built (no quantised kernels in this
torch build, a model without linear layers) the embedder logs one warning per model and
encodes queries with the fp32 model; on a GPU (where these kernels do not run, and the
fp32 model is fast) it does so with an info line.
"""

from __future__ import annotations

import copy
import logging
import threading
import warnings
from collections.abc import Callable
from typing import Any, get_args

from pmm.settings import QueryEncoderName

log = logging.getLogger(__name__)

QUERY_ENCODERS: tuple[str, ...] = get_args(QueryEncoderName)
"""``fp32``: queries through the documents' model; ``fp16`` / ``int8``: through its copy;
``onnx``: through ONNX Runtime (:mod:`pmm.embed.onnx_query`); ``auto``: onnx where
onnxruntime is installed, else fp16."""

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


class Unavailable(RuntimeError):
    """This encoder cannot run here; ``quiet``: expected (a GPU model), not worth a warning."""

    def __init__(self, reason: str, *, quiet: bool = False) -> None:
        super().__init__(reason)
        self.quiet = quiet


def warn_once(source: str, encoder: str, reason: str, *, quiet: bool = False) -> None:
    """Log that ``source``'s ``encoder`` query copy is unavailable, once per model and
    process (at info level when ``quiet``)."""
    with _warned_lock:
        if (source, encoder) in _warned:
            return
        _warned.add((source, encoder))
    log.log(
        logging.INFO if quiet else logging.WARNING,
        "PMM_QUERY_ENCODER=%s: %s, so queries of %s are embedded by the %s",
        encoder,
        reason,
        source,
        "fp16 torch copy" if encoder == "onnx" else "float32 model",
    )


def quantised_copy(model: Any, encoder: str) -> Any:
    """A copy of the sentence-transformers ``model`` (on the CPU) whose ``nn.Linear``
    layers are dynamically quantised: ``fp16`` weights, or ``int8`` weights with
    per-channel scales. The original is not touched. Raises :class:`Unavailable` (with
    why) where this torch or this model cannot do it."""
    import torch
    from torch.ao.quantization import (
        float16_dynamic_qconfig,
        per_channel_dynamic_qconfig,
        quantize_dynamic,
    )

    qconfigs = {"fp16": (float16_dynamic_qconfig, torch.float16),
                "int8": (per_channel_dynamic_qconfig, torch.qint8)}  # fmt: skip
    if encoder not in qconfigs:
        raise ValueError(f"no quantised query encoder {encoder!r}: fp16 or int8")
    qconfig, dtype = qconfigs[encoder]
    device = str(getattr(model, "device", "cpu"))
    if device != "cpu":
        raise Unavailable(f"the model runs on {device}, and these kernels are CPU-only", quiet=True)
    engine = torch.backends.quantized.engine
    if engine not in ("x86", "fbgemm", "onednn", "qnnpack"):
        raise Unavailable(f"this torch build has no quantised CPU kernels (engine {engine!r})")
    linear = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    if not linear:
        raise Unavailable("the model has no linear layers to quantise")
    with warnings.catch_warnings():
        # torch >= 2.10 marks torch.ao's eager quantisation as moving to torchao; it works.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        # the copy's modules are new, its tensors the model's own (read, never written):
        # quantising swaps the copy's linear layers and leaves the embeddings shared
        tensors = [*model.parameters(), *model.buffers()]
        shell = copy.deepcopy(model, {id(t): t for t in tensors})
        quantised = quantize_dynamic(  # type: ignore[no-untyped-call]
            shell, {name: qconfig for name in linear}, dtype=dtype, inplace=True
        )
    quantised.eval()
    return quantised


def build_query_single(
    model: Any,
    encoder: str,
    source: str,
    single_path: Callable[[Any], Callable[[str], Any] | None],
) -> Callable[[str], Any] | None:
    """One query text through the ``encoder`` copy of ``model`` (:func:`quantised_copy`)
    as ``single_path`` runs a model, or None, after one warning, where it cannot be built
    or fails on a probe text (the caller then uses the fp32 model)."""
    try:
        single = single_path(quantised_copy(model, encoder))
        if single is None:
            raise Unavailable("this model's encode() does more than one forward pass")
        single("probe")
    except Unavailable as exc:
        warn_once(source, encoder, str(exc), quiet=exc.quiet)
        return None
    except (RuntimeError, ImportError, AttributeError, NotImplementedError) as exc:
        warn_once(source, encoder, f"{type(exc).__name__}: {exc}")
        return None
    return single
