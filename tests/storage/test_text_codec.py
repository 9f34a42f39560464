"""pmm.storage.text_codec: dictionaries trained on the text itself, zstd and zlib, lossless."""

from __future__ import annotations

import random

import pytest

from pmm.errors import ConfigurationError, CorruptDatabaseError, MissingDependencyError
from pmm.retention.compression import CompressAfter
from pmm.storage import text_codec
from pmm.storage.text_codec import Dictionary, TextCodec, train

WORDS = "the plan kitchen budget Lisbon marathon notes risk owner week measure start".split()


def texts(n: int = 300, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [
        f"Reply {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 200)))
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", ["zstd", "zlib"])
def test_round_trip_is_exact_and_smaller(codec: str) -> None:
    corpus = texts()
    name, data = train(corpus, codec)  # type: ignore[arg-type]
    assert name == codec and data
    dictionary = Dictionary(7, name, data)
    tc = TextCodec({7: dictionary})
    odd = ["é ü 🙂 \u2028 \x01 tab\tnew\nline " * 20, "x" * 5000]
    blobs = [tc.encode(t, dictionary) for t in corpus + odd]
    assert all(b is not None for b in blobs)
    assert [tc.decode(b) for b in blobs if b] == corpus + odd
    raw = sum(len(t.encode()) for t in corpus)
    packed = sum(len(b) for b in blobs[: len(corpus)] if b)
    assert packed < 0.5 * raw
    # A fresh codec finds the dictionary through its loader (another process trained it).
    fresh = TextCodec(load=lambda i: dictionary if i == 7 else None)
    assert fresh.decode(blobs[0] or b"") == corpus[0]


def test_the_dictionary_helps() -> None:
    corpus = texts()
    name, data = train(corpus[:200], "zstd")
    with_dict = TextCodec().encode(corpus[250], Dictionary(1, name, data))
    plain = TextCodec().encode(corpus[250], None)
    assert with_dict is not None and plain is not None and len(with_dict) < len(plain)


def test_short_text_that_would_grow_stays_plain() -> None:
    assert TextCodec().encode("hi", None) is None


def test_too_few_samples_still_give_a_dictionary() -> None:
    name, data = train(["just one short text about the kitchen"], "zstd")
    dictionary = Dictionary(1, name, data)
    blob = TextCodec().encode("the kitchen plan " * 30, dictionary)
    assert blob is not None
    assert TextCodec({1: dictionary}).decode(blob) == "the kitchen plan " * 30


def test_damaged_or_unknown_blobs_are_clear_errors() -> None:
    name, data = train(texts(), "zlib")
    dictionary = Dictionary(1, name, data)
    blob = TextCodec().encode(texts()[0], dictionary)
    assert blob is not None
    with pytest.raises(CorruptDatabaseError, match="dictionary 1"):
        TextCodec().decode(blob)
    with pytest.raises(CorruptDatabaseError, match="does not decode"):
        TextCodec({1: dictionary}).decode(blob[:5] + b"\xff" * 8)
    with pytest.raises(CorruptDatabaseError, match="unknown codec"):
        TextCodec().decode(b"\x09" + blob[1:])
    with pytest.raises(CorruptDatabaseError, match="header"):
        TextCodec().decode(b"\x01")


def test_zlib_when_zstd_is_missing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(text_codec, "_zstd", lambda: None)
    monkeypatch.setattr(text_codec, "_warned_zlib", False)
    assert text_codec.default_codec() == "zlib"
    assert text_codec.default_codec() == "zlib"
    assert sum("zstandard is not installed" in r.message for r in caplog.records) == 1
    name, data = train(texts())
    assert name == "zlib"
    blob = TextCodec().encode(texts()[3], Dictionary(2, name, data))
    assert blob is not None and TextCodec({2: Dictionary(2, name, data)}).decode(blob) == texts()[3]
    zstd_blob = b"\x01\x00\x00\x00\x00" + b"\x28\xb5\x2f\xfd"
    with pytest.raises(MissingDependencyError, match="zstandard"):
        TextCodec().decode(zstd_blob)


@pytest.mark.parametrize(
    ("text", "count", "days"),
    [("1000", 1000, None), (250, 250, None), ("30d", None, 30), (" 2w ", None, 14)],
)
def test_policy_parses_a_count_or_an_age(
    text: str | int, count: int | None, days: int | None
) -> None:
    policy = CompressAfter.parse(text)
    assert policy is not None and policy.keep_newest == count
    assert (policy.age.days if policy.age else None) == days
    assert (policy.cutoff_ts() is None) == (days is None)


@pytest.mark.parametrize("text", ["", "off", None, " "])
def test_policy_off(text: str | None) -> None:
    assert CompressAfter.parse(text) is None


@pytest.mark.parametrize("text", ["-3", "30x", "ten", "1.5d", True])
def test_policy_rejects_nonsense(text: object) -> None:
    with pytest.raises(ConfigurationError, match="PMM_COMPRESS_AFTER"):
        CompressAfter.parse(text)  # type: ignore[arg-type]


def test_setting_is_validated_at_load() -> None:
    from pmm.settings import Settings

    assert Settings.load(env={"PMM_COMPRESS_AFTER": "30d"}).compress_after == "30d"
    assert Settings.load(env={}, compress_after=500).compress_after == "500"
    with pytest.raises(ConfigurationError, match="PMM_COMPRESS_AFTER"):
        Settings.load(env={"PMM_COMPRESS_AFTER": "soon"})


def test_dictionary_id_reads_the_header() -> None:
    name, data = train(texts(), "zlib")
    blob = TextCodec().encode(texts()[1], Dictionary(42, name, data))
    assert blob is not None and text_codec.dictionary_id(blob) == 42
    with pytest.raises(CorruptDatabaseError):
        text_codec.dictionary_id(b"\x01")
