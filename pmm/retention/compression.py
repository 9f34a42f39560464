"""Which old turns keep their text compressed: ``PMM_COMPRESS_AFTER``.

    policy = CompressAfter.parse("1000")   # all but the 1,000 newest texts
    policy = CompressAfter.parse("30d")    # texts older than 30 days
    CompressAfter.parse("")                # None: compression is off (the default)
    policy.cutoff_ts(now)                  # "2026-10-26T...Z" for an age, None for a count

A count keeps that many of the newest texts plain (recent turns are read most); an age
keeps the turns of that period plain. Compression is lossless, so either may change at
any time: texts compressed under an older policy simply stay compressed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pmm.errors import ConfigurationError

AGE_PATTERN = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
"""An age: a count and a unit (``30d``), shared with :func:`pmm.retention.compaction.parse_age`."""
AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_OFF = {"", "off", "none", "false"}


@dataclass(frozen=True, slots=True)
class CompressAfter:
    """Either ``keep_newest`` (a count) or ``age`` is set."""

    keep_newest: int | None = None
    age: timedelta | None = None

    @classmethod
    def parse(
        cls, text: str | int | None, source: str = "PMM_COMPRESS_AFTER"
    ) -> CompressAfter | None:
        """A policy from ``"1000"`` / ``1000`` / ``"30d"``; None for off (``""``, ``off``)."""
        if text is None or isinstance(text, bool):
            if text is None:
                return None
            raise ConfigurationError(f"{source}={text!r} is not valid: use a count or an age")
        if isinstance(text, int):
            text = str(text)
        if not isinstance(text, str):
            raise ConfigurationError(f"{source}={text!r} is not valid: use a count or an age")
        value = text.strip().lower()
        if value in _OFF:
            return None
        if value.isdigit():
            return cls(keep_newest=int(value))
        found = AGE_PATTERN.match(value)
        if found is None:
            raise ConfigurationError(
                f"{source}={text!r} is not valid: a count of newest turns kept plain (1000) "
                "or an age (30d; units s, m, h, d, w), or empty for off"
            )
        return cls(age=timedelta(**{AGE_UNITS[found[2]]: int(found[1])}))

    def cutoff_ts(self, now: datetime | None = None) -> str | None:
        """For an age: the ``ts`` before which texts are compressed; None for a count."""
        if self.age is None:
            return None
        cutoff = ((now or datetime.now(UTC)) - self.age).astimezone(UTC)
        return cutoff.isoformat(timespec="microseconds")[:-6] + "Z"

    def __str__(self) -> str:
        if self.keep_newest is not None:
            return f"all but the {self.keep_newest:,} newest texts"
        assert self.age is not None
        return f"texts older than {self.age}"
