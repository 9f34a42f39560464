"""The ONNX Runtime query encoder (``PMM_QUERY_ENCODER=onnx``, and ``auto`` where
onnxruntime is installed): the loaded fp32 model exported once to ONNX, pooling and L2
normalisation inside the graph, one query run by ONNX Runtime on the CPU.

    from pmm.embed.sentence import SentenceEmbedder

    embedder = SentenceEmbedder(query_encoder="onnx")
    embedder.embed_query("where do I live?")   # float32 (384,), unit norm, through ONNX Runtime
    embedder.embed(["I moved to Lisbon"])       # documents: the fp32 torch model, as before

Why: the same fp32 weights, the same vector to float rounding (cosine >= 0.9999996 with the
torch model's over 4,055 LoCoMo and generated questions), in 0.62x the time of the fp16
torch copy on the 2-core development machine (``bench/fast_query.py``, ``d733cab``: 9.95 vs
16.13 ms): one ONNX Runtime call instead of some hundred small torch calls, each taking the
GIL back. One thread: inside recall the encoder runs beside the FTS5 queries, and two
ONNX Runtime threads made hybrid recall slower there (``bench/recall_ab.py``, ``d733cab``). It costs
memory: ONNX Runtime holds the weights again, pre-packed (about +210 MB max RSS for MiniLM
against +41 MB for the fp16 copy).

The exported graph is cached in ``$XDG_CACHE_HOME/pmm/query-encoders`` (else
``~/.cache/pmm/query-encoders``), one file per model, named by a hash of the model's
architecture, its weights and the export format, so a changed or different model never
reuses another's graph; it is written atomically (a temporary file renamed into place). A
cache file that ONNX Runtime cannot read, or whose vector is not the torch model's, is
rebuilt, with one warning. Before first use the graph's vectors of probe texts are compared
with the torch model's (cosine >= 0.9999): where they differ, or ONNX Runtime (or the
``onnx`` package, which torch's exporter needs) is missing, or the export fails, the
caller gets :class:`~pmm.embed.fast_query.Unavailable` and keeps a torch encoder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pmm.embed.fast_query import Unavailable, build_query_single, warn_once

log = logging.getLogger(__name__)

FORMAT = b"pmm-onnx-query-v1 opset 17 mean+l2 in graph"
"""Part of every cache key: change it when the export changes."""
OPSET = 17
MIN_COSINE = 0.9999
PROBES = ("probe", "When did Caroline go to the LGBTQ support group last summer?")


def cache_dir() -> Path:
    """Where exported query encoders are kept: ``$XDG_CACHE_HOME/pmm/query-encoders``,
    else ``~/.cache/pmm/query-encoders`` (created when the first one is written)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "pmm" / "query-encoders"


def model_key(model: Any) -> str:
    """A hex digest of ``model``'s architecture (its repr: modules, pooling, max length),
    every parameter's and buffer's name, shape, dtype and bytes, and :data:`FORMAT`."""
    import torch

    digest = hashlib.blake2b(FORMAT, digest_size=20)
    digest.update(repr(model).encode())
    for name, tensor in model.state_dict().items():
        array = tensor.detach().cpu().contiguous()
        digest.update(f"{name} {tuple(array.shape)} {array.dtype}".encode())
        digest.update(array.view(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _export(model: Any, names: list[str], sample: dict[str, Any]) -> bytes:
    """``model``'s forward (``sentence_embedding``, then L2 normalisation) as ONNX bytes,
    by torch's TorchScript exporter (``dynamo=False``: it exports MiniLM in about a
    second, needs the ``onnx`` package, not ``onnxscript``). Raises :class:`Unavailable`."""
    import torch

    class Normalised(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *inputs: Any) -> Any:
            vector = self.inner(dict(zip(names, inputs, strict=True)))["sentence_embedding"]
            return torch.nn.functional.normalize(vector, p=2, dim=1)

    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    try:
        with (
            tempfile.TemporaryDirectory(prefix="pmm-onnx-") as folder,
            warnings.catch_warnings(),
            torch.inference_mode(False),
            torch.no_grad(),
        ):
            warnings.simplefilter("ignore")  # tracer warnings about python control flow
            target = Path(folder) / "query.onnx"
            torch.onnx.export(
                Normalised().eval(),
                tuple(sample[name] for name in names),
                target,
                input_names=names,
                output_names=["vector"],
                dynamic_axes={**axes, "vector": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )
            return target.read_bytes()
    except Exception as exc:  # the exporter raises many kinds; all mean "no graph"
        raise Unavailable(f"exporting to ONNX failed ({type(exc).__name__}: {exc})") from exc


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def build_onnx_single(
    model: Any,
    source: str,
    reference: Callable[[str], Any],
    threads: int | None = 1,
    *,
    directory: Path | None = None,
) -> Callable[[str], Any]:
    """One query text through an ONNX Runtime session over ``model`` exported (or read
    from the cache in ``directory``, default :func:`cache_dir`), returning float32
    ``(1, dim)`` as ``reference`` (the torch model's single-text path) does. ``threads``:
    ONNX Runtime's intra-op threads (None: its default). Raises :class:`Unavailable`
    (with why) where it cannot run here or its vectors are not ``reference``'s."""
    device = str(getattr(model, "device", "cpu"))
    if device != "cpu":
        raise Unavailable(f"the model runs on {device}; this encoder is CPU-only", quiet=True)
    preprocess = getattr(model, "preprocess", None)
    if not callable(preprocess):
        raise Unavailable("this sentence-transformers has no preprocess() (before 6.0)")
    try:
        import onnxruntime
    except ImportError as exc:
        raise Unavailable(f"onnxruntime is not installed ({exc})") from exc

    options = onnxruntime.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: its optimiser's notes are not ours

    def session(graph: str | bytes) -> Any:
        # from the file where there is one: ONNX Runtime then keeps no copy of its bytes
        # (124 MB of resident memory for MiniLM, against 208 MB loaded from bytes)
        return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    sample = preprocess([PROBES[1]])
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]
    if "input_ids" not in names or "attention_mask" not in names:
        raise Unavailable(f"the model's inputs ({', '.join(sample)}) are not a BERT-like encoder")

    def single_of(runner: Any) -> Callable[[str], Any]:
        def single(text: str) -> Any:
            features = preprocess([text])
            feeds = {name: features[name].numpy() for name in names}
            return runner.run(None, feeds)[0]

        return single

    def matches(single: Callable[[str], Any]) -> float:
        return min(
            float(np.dot(np.ravel(single(t)), np.ravel(reference(t)).astype(np.float32)))
            for t in PROBES
        )

    path = (directory or cache_dir()) / f"{model_key(model)}.onnx"
    if path.exists():
        try:
            single = single_of(session(str(path)))
            cosine = matches(single)
        except Exception as exc:  # ONNX Runtime's errors derive from Exception only
            log.warning("the cached query encoder %s is unreadable (%s: %s): rebuilt",
                        path, type(exc).__name__, exc)  # fmt: skip
        else:
            if cosine >= MIN_COSINE:
                return single
            log.warning("the cached query encoder %s gives other vectors (cosine %.6f): "
                        "rebuilt", path, cosine)  # fmt: skip
    data = _export(model, names, sample)
    graph: str | bytes = data
    try:
        _write_atomically(path, data)
        graph = str(path)
    except OSError as exc:
        log.warning("cannot cache the query encoder of %s in %s (%s): it is exported again "
                    "by each process", source, path.parent, exc)  # fmt: skip
    del data
    try:
        single = single_of(session(graph))
        cosine = matches(single)
    except Exception as exc:
        path.unlink(missing_ok=True)  # a graph that cannot run is not kept for the next process
        reason = f"ONNX Runtime cannot run the export ({type(exc).__name__}: {exc})"
        raise Unavailable(reason) from exc
    if cosine < MIN_COSINE:
        path.unlink(missing_ok=True)
        raise Unavailable(f"its vectors differ from the torch model's (cosine {cosine:.6f})")
    return single


def build_query_encoder(
    model: Any,
    encoder: str,
    source: str,
    single_path: Callable[[Any], Callable[[str], Any] | None],
    threads: int | None = 1,
) -> Callable[[str], Any] | None:
    """One query text through the ``encoder`` of ``model``: ``onnx`` (falling back to
    ``fp16`` after one warning), ``auto`` (``onnx`` where onnxruntime is installed,
    else ``fp16`` without a word), ``fp16`` or ``int8``; None: the caller uses the fp32
    model. ``threads``: ONNX Runtime's intra-op threads."""
    if encoder == "auto":
        if not _importable("onnxruntime"):
            return build_query_single(model, "fp16", source, single_path)
        encoder = "onnx"
    if encoder != "onnx":
        return build_query_single(model, encoder, source, single_path)
    reference = single_path(model)
    try:
        if reference is None:
            raise Unavailable("this model's encode() does more than one forward pass")
        return build_onnx_single(model, source, reference, threads)
    except Unavailable as exc:
        warn_once(source, "onnx", str(exc), quiet=exc.quiet)
    return build_query_single(model, "fp16", source, single_path)


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
