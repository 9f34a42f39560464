"""event_from_row (pmm/records.py) builds an Event through its slots, not the dataclass's
__init__: the same Event, field for field, for the rows both storage backends read."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from pmm.records import Event, event_from_row

ROW = (
    "7", "2026-11-26T08:00:00Z", "prompt", "s1", "user", "I live in Lisbon.", "ab" * 32,
    '{"source": "import", "n": [1, 2]}', "cd" * 32, "ef" * 32, "3", "Lives in Lisbon.",
    '["lisbon", "home"]', "heuristic", "alice", "01" * 32, "02" * 32,
)  # fmt: skip


def test_an_event_from_a_row_is_the_one_its_constructor_builds() -> None:
    for width in (14, 15, 17):  # a row before users, with users, with chained digests
        row = ROW[:width]
        got = event_from_row(row)
        want = Event(
            id=7, ts=row[1], kind=row[2], session_id=row[3], role=row[4], content=row[5],
            content_sha256=row[6], meta={"source": "import", "n": [1, 2]}, prev_hash=row[8],
            hash=row[9], hash_version=3, summary=row[11], keywords=["lisbon", "home"],
            digest_method=row[13], user_id=row[14] if width > 14 else None,
            user_digest=row[15] if width > 15 else None,
            session_digest=row[16] if width > 16 else None,
        )  # fmt: skip
        assert got == want and type(got) is Event
        assert [getattr(got, f.name) for f in dataclasses.fields(Event)] == [
            getattr(want, f.name) for f in dataclasses.fields(Event)
        ]
        assert isinstance(got.id, int) and isinstance(got.hash_version, int)
    empty = event_from_row((1, "t", "note", None, None, None, "", "{}", None, "h", 1, None,
                            None, None))  # fmt: skip
    assert empty.meta == {} and empty.keywords == [] and empty.user_id is None
    assert event_from_row(ROW).meta is not event_from_row(ROW).meta  # each its own


def test_an_event_from_a_row_is_still_frozen() -> None:
    event = event_from_row(ROW)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.content = "changed"  # type: ignore[misc]
    assert event.text == "I live in Lisbon."


def test_an_event_from_a_row_repr_pickles_copies_and_replaces_as_the_constructors() -> None:
    got = event_from_row(ROW)
    want = dataclasses.replace(got)  # through __init__, field for field
    assert repr(got) == repr(want)
    for copied in (pickle.loads(pickle.dumps(got)), copy.copy(got), copy.deepcopy(got)):
        assert copied == got and repr(copied) == repr(want) and type(copied) is Event
    changed = dataclasses.replace(got, content=None)
    assert changed.content is None and changed.hash == got.hash and got.content is not None
    assert dataclasses.asdict(got) == dataclasses.asdict(want)
    with pytest.raises(TypeError, match="unhashable"):  # meta is a dict: neither hashes
        hash(got)
    with pytest.raises(TypeError, match="unhashable"):
        hash(want)
    assert not hasattr(got, "__dict__") and not hasattr(want, "__dict__")  # slots only
