"""A tiny, randomly initialised BART summarizer saved to a folder, for tests and the bench.

It is built here, offline, in about a second, and saved like any Hugging Face model, so the
local digest backend loads it through exactly the code path of the real DistilBART. Its output
is noise: it checks the plumbing (loading, batching, truncation, devices), not summary quality.

    path = build_tiny_bart(tmp_path / "tiny-bart")
    LocalDigester(str(path)).digest_many(["..."])
"""

from __future__ import annotations

from pathlib import Path

TRAINING_TEXT = [
    "I moved to Lisbon in March 2021 with my partner Ana.",
    "The user prefers green tea over coffee and is allergic to peanuts.",
    "The assistant suggested the 8:15 train from Santa Apolonia to Porto.",
    "Our budget is 1,450 euros a month for the flat in Alfama.",
    "Remember that the deadline for the Kafka migration is 14 June.",
    "She is 6 years old and loves drawing horses and reading books.",
    "We met Dr. Smith at the Feedzai office on Tuesday at 10am.",
    "Summaries keep every name, number, date and preference of the conversation.",
]

MAX_POSITIONS = 128


def build_tiny_bart(folder: Path, *, seed: int = 0) -> Path:
    """Train a byte-level BPE tokenizer on a few sentences, build a 1-layer BART around it,
    and save both to ``folder`` (created). Returns ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4, as BART expects
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=specials,
        show_progress=False,
    )
    bpe.train_from_iterator(TRAINING_TEXT * 4, trainer=trainer)
    bpe.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=MAX_POSITIONS,
    )
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=2,
    )
    torch.manual_seed(seed)
    model = BartForConditionalGeneration(config)
    model.generation_config.max_length = 40
    model.generation_config.num_beams = 1
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder
