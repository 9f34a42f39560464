"""The file format of ``pmm export`` / ``pmm import`` / ``Mind.import_events``: one JSON
object a line, every field of an event.

``read_export(file)`` yields
the :class:`~pmm.records.Event` of each line, checked against ``_EVENT_FIELDS`` (an unknown
field, a missing one or a wrong type is an ``InvalidInputError`` naming ``file:line``), or
the ``(chain, secret)`` of a chain-key line (``{"chain_key": ..., "secret": hex}``, written
first: version-3 rows need their chain's secret to verify)::

    events, keys = read_export_file("backup.jsonl")   # both lists, as import_events takes them
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import IO

from pmm.errors import InvalidInputError
from pmm.records import Event

_EVENT_FIELDS = {
    # name: (required, accepted types)
    "id": (True, (int,)),
    "ts": (True, (str,)),
    "kind": (True, (str,)),
    "session_id": (True, (str, type(None))),
    "role": (True, (str, type(None))),
    "content": (True, (str, type(None))),
    "content_sha256": (True, (str,)),
    "meta": (True, (dict,)),
    "prev_hash": (True, (str, type(None))),
    "hash": (True, (str,)),
    "hash_version": (False, (int,)),
    "summary": (False, (str, type(None))),
    "keywords": (False, (list,)),
    "digest_method": (False, (str, type(None))),
    "user_id": (False, (str, type(None))),
    "user_digest": (False, (str, type(None))),
    "session_digest": (False, (str, type(None))),
}


def key_line(chain: str, secret: bytes) -> str:
    """The export line of one chain's secret."""
    return json.dumps({"chain_key": chain, "secret": secret.hex()}, ensure_ascii=False) + "\n"


def read_export(file: str | IO[str]) -> Iterator[Event | tuple[str, bytes]]:
    """Events and chain keys of an export file (a path, ``-`` for stdin, or an open text
    file), validated field by field (InvalidInputError if not)."""
    if not isinstance(file, str):
        yield from _lines(file, getattr(file, "name", "the file"))
        return
    stream = sys.stdin if file == "-" else open(file, encoding="utf-8")  # noqa: SIM115
    name = "stdin" if file == "-" else file
    try:
        yield from _lines(stream, name)
    finally:
        if stream is not sys.stdin:
            stream.close()


def read_export_file(file: str | IO[str]) -> tuple[list[Event], list[tuple[str, bytes]]]:
    """The events and the chain keys of an export file (see :func:`read_export`), as
    ``import_events(events, keys=keys)`` takes them."""
    items = list(read_export(file))
    return [i for i in items if isinstance(i, Event)], [
        i for i in items if not isinstance(i, Event)
    ]


def _lines(stream: IO[str], name: str) -> Iterator[Event | tuple[str, bytes]]:
    try:
        for number, line in enumerate(stream, start=1):
            if line.strip():
                yield _parse_event(line, f"{name}:{number}")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{name} is not UTF-8 text ({exc.reason})") from None


def _parse_key(data: dict[str, object], where: str) -> tuple[str, bytes]:
    chain, secret = data.get("chain_key"), data.get("secret")
    if set(data) != {"chain_key", "secret"} or not isinstance(chain, str):
        raise InvalidInputError(f"{where}: a chain key line holds chain_key and secret alone")
    try:
        return chain, bytes.fromhex(str(secret))
    except ValueError:
        raise InvalidInputError(f"{where}: the chain key's secret is not hex") from None


def _parse_event(line: str, where: str) -> Event | tuple[str, bytes]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where}: not a JSON object ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if "chain_key" in data:
        return _parse_key(data, where)
    unknown = sorted(set(data) - set(_EVENT_FIELDS))
    if unknown:
        raise InvalidInputError(f"{where}: unknown field(s) {', '.join(unknown)}")
    for name, (required, types) in _EVENT_FIELDS.items():
        if name not in data:
            if required:
                raise InvalidInputError(f"{where}: the field {name!r} is missing")
            continue
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise InvalidInputError(f"{where}: {name} has the wrong type ({value!r})")
    if not all(isinstance(k, str) for k in data.get("keywords", [])):
        raise InvalidInputError(f"{where}: keywords must be a list of strings")
    return Event(**data)
