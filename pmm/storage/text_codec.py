"""Lossless compression of stored text with a dictionary trained on the file's own text.

    data = train(texts)                                  # ("zstd", bytes) or ("zlib", bytes)
    codec = TextCodec({1: Dictionary(1, *data)})
    blob = codec.encode("a long reply ...", codec.dictionaries[1])  # None: not worth it
    codec.decode(blob)                                   # -> "a long reply ..."

Backend-neutral: no database access; the storage backend keeps the dictionaries (each with
an id, so a file may hold several versions) and the blobs. A blob names its codec and its
dictionary in a 5-byte header (codec byte, dictionary id as uint32), so every blob decodes on
its own given the dictionaries. ``zstd`` (the ``[compress]`` extra) is used when installed,
else ``zlib`` with a preset dictionary (its last 32 KiB), after one warning. A file written
with zstd needs zstd to be read back: :class:`MissingDependencyError` says so.
"""

from __future__ import annotations

import logging
import random
import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pmm.errors import CorruptDatabaseError, MissingDependencyError

log = logging.getLogger(__name__)

CodecName = Literal["zstd", "zlib"]
FORMAT_VERSION = 1
"""The blob layout below; stored beside each dictionary."""

_HEADER = struct.Struct(">BI")  # codec id, dictionary id (0 = none)
_CODEC_IDS: dict[str, int] = {"zstd": 1, "zlib": 2}
_CODEC_NAMES = {v: k for k, v in _CODEC_IDS.items()}
_ZLIB_WINDOW = 32 * 1024  # zlib's preset dictionary is at most its window
_ZSTD_LEVEL = 12
_warned_zlib = False


@dataclass(frozen=True, slots=True)
class Dictionary:
    """One trained dictionary: its id in the file, its codec and its bytes."""

    id: int
    codec: str
    data: bytes


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:
        return None
    return zstandard


def default_codec() -> CodecName:
    """``zstd`` when the ``zstandard`` package is installed, else ``zlib`` (warned once)."""
    global _warned_zlib
    if _zstd() is not None:
        return "zstd"
    if not _warned_zlib:
        _warned_zlib = True
        log.warning(
            "zstandard is not installed: old text is compressed with zlib instead "
            "(larger files); pip install 'pmm-memory[compress]' for zstd"
        )
    return "zlib"


def train(
    texts: Sequence[str], codec: CodecName | None = None, size: int | None = None, seed: int = 0
) -> tuple[CodecName, bytes]:
    """A dictionary for ``codec`` (default :func:`default_codec`) trained on ``texts``.

    ``size`` defaults to about a twentieth of the sample, between 4 and 64 KiB (zlib: at
    most 32 KiB). zstd's trainer needs enough distinct samples; when it refuses, the
    dictionary is the samples' own bytes ("raw content", still a good prefix).
    """
    codec = codec or default_codec()
    if codec not in _CODEC_IDS:
        raise ValueError(f"unknown text codec {codec!r}; known: zstd, zlib")
    samples = [t.encode("utf-8") for t in texts if t]
    total = sum(len(s) for s in samples)
    limit = _ZLIB_WINDOW if codec == "zlib" else 64 * 1024
    size = max(1024, min(size or max(4096, total // 20), limit))
    if codec == "zstd":
        zstandard = _require_zstd()
        try:
            trained = zstandard.train_dictionary(size, samples, level=_ZSTD_LEVEL)
            return codec, bytes(trained.as_bytes())
        except zstandard.ZstdError as exc:
            log.info("zstd could not train a dictionary (%s): using raw content", exc)
    return codec, _raw_content(samples, size, seed)


def _raw_content(samples: list[bytes], size: int, seed: int) -> bytes:
    """A preset dictionary made of whole samples, most typical last (zlib reaches the end
    of its window best)."""
    picked = list(samples)
    random.Random(seed).shuffle(picked)
    out = b""
    for sample in picked:
        if len(out) + len(sample) > size:
            break
        out += sample
    return out or b"".join(samples)[-size:]


def _require_zstd() -> Any:
    zstandard = _zstd()
    if zstandard is None:
        raise MissingDependencyError("text compressed with zstd", "zstandard", "compress")
    return zstandard


def dictionary_id(blob: bytes) -> int:
    """The id of the dictionary a blob was encoded with (0: none)."""
    if len(blob) < _HEADER.size:
        raise CorruptDatabaseError("a compressed text is shorter than its header")
    return int(_HEADER.unpack_from(blob)[1])


class TextCodec:
    """Encodes and decodes text blobs with the dictionaries it knows.

    ``load`` (optional) is asked for a dictionary id the codec has not seen, e.g. one that
    another process trained after this one started.
    """

    def __init__(
        self,
        dictionaries: Mapping[int, Dictionary] | None = None,
        load: Callable[[int], Dictionary | None] | None = None,
    ) -> None:
        self.dictionaries: dict[int, Dictionary] = dict(dictionaries or {})
        self._load = load
        self._compressors: dict[int, Any] = {}
        self._decompressors: dict[int, Any] = {}

    def add(self, dictionary: Dictionary) -> None:
        self.dictionaries[dictionary.id] = dictionary

    def encode(self, text: str, dictionary: Dictionary | None) -> bytes | None:
        """The blob for ``text``, or None when it would not be smaller than the text."""
        raw = text.encode("utf-8")
        codec = dictionary.codec if dictionary else default_codec()
        dict_id = dictionary.id if dictionary else 0
        if codec == "zstd":
            payload = self._zstd_compressor(dictionary).compress(raw)
        elif codec == "zlib":
            zdict = dictionary.data[-_ZLIB_WINDOW:] if dictionary else b""
            packer = zlib.compressobj(9, zdict=zdict) if zdict else zlib.compressobj(9)
            payload = packer.compress(raw) + packer.flush()
        else:
            raise ValueError(f"unknown text codec {codec!r}")
        blob = _HEADER.pack(_CODEC_IDS[codec], dict_id) + payload
        return blob if len(blob) < len(raw) else None

    def decode(self, blob: bytes) -> str:
        """The text a blob holds; :class:`CorruptDatabaseError` for a damaged blob."""
        if len(blob) < _HEADER.size:
            raise CorruptDatabaseError("a compressed text is shorter than its header")
        codec_id, dict_id = _HEADER.unpack_from(blob)
        codec = _CODEC_NAMES.get(codec_id)
        if codec is None:
            raise CorruptDatabaseError(f"a compressed text names an unknown codec {codec_id}")
        dictionary = self._dictionary(dict_id) if dict_id else None
        payload = memoryview(blob)[_HEADER.size :]
        try:
            if codec == "zstd":
                raw = self._zstd_decompressor(dictionary).decompress(payload)
            else:
                zdict = dictionary.data[-_ZLIB_WINDOW:] if dictionary else b""
                unpacker = zlib.decompressobj(zdict=zdict) if zdict else zlib.decompressobj()
                raw = unpacker.decompress(payload) + unpacker.flush()
            return bytes(raw).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as exc:
            raise CorruptDatabaseError(f"a compressed text does not decode: {exc}") from exc
        except Exception as exc:
            zstandard = _zstd()
            if zstandard is not None and isinstance(exc, zstandard.ZstdError):
                raise CorruptDatabaseError(f"a compressed text does not decode: {exc}") from exc
            raise

    def _dictionary(self, dict_id: int) -> Dictionary:
        found = self.dictionaries.get(dict_id)
        if found is None and self._load is not None:
            found = self._load(dict_id)
            if found is not None:
                self.add(found)
        if found is None:
            raise CorruptDatabaseError(
                f"a compressed text needs dictionary {dict_id}, which the file does not hold"
            )
        return found

    def _zstd_compressor(self, dictionary: Dictionary | None) -> Any:
        key = dictionary.id if dictionary else 0
        if key not in self._compressors:
            zstandard = _require_zstd()
            self._compressors[key] = zstandard.ZstdCompressor(
                level=_ZSTD_LEVEL,
                dict_data=_zstd_dict(zstandard, dictionary),
                write_checksum=False,
                write_content_size=True,
                write_dict_id=False,
            )
        return self._compressors[key]

    def _zstd_decompressor(self, dictionary: Dictionary | None) -> Any:
        key = dictionary.id if dictionary else 0
        if key not in self._decompressors:
            zstandard = _require_zstd()
            self._decompressors[key] = zstandard.ZstdDecompressor(
                dict_data=_zstd_dict(zstandard, dictionary)
            )
        return self._decompressors[key]


def _zstd_dict(zstandard: Any, dictionary: Dictionary | None) -> Any:
    if dictionary is None:
        return None
    if dictionary.codec != "zstd":
        raise CorruptDatabaseError(f"dictionary {dictionary.id} is no zstd dictionary")
    # AUTO: a trained dictionary is used as one; raw content (no magic number) as a prefix.
    return zstandard.ZstdCompressionDict(dictionary.data, dict_type=zstandard.DICT_TYPE_AUTO)
