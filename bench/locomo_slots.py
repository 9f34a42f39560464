"""``bench/locomo.py`` with a wider set of slot questions (:mod:`pmm.recall.slots`) than PMM
ships: the lever "key facts as extra keys" (issue 24) measured on LoCoMo, where hardly any
question asks for a job in the shipped words.

    python bench/locomo.py --lists BEFORE.json                  # at the commit before
    python bench/locomo_slots.py --variant broad --lists AFTER.json
    python bench/locomo_refit.py --before BEFORE.json --after AFTER.json

Variants (each replaces :data:`pmm.recall.slots.SLOTS` for the run; other arguments go to
``bench/locomo.py``):

- ``shipped``: the slots as shipped (the same as ``bench/locomo.py``);
- ``broad``: a question naming a job ("job", "career", "occupation", "profession", "for a
  living", "for work"), a home ("where does X live", "what city") or a pet's name ("the
  name of X's dog") searches the slot's words, and the named person's turns whose facts
  fill the slot lead;
- ``broad-words``: ``broad``'s slot words only (no turn moves: every slot's attributes empty);
- ``broad-facts``: ``broad``'s fact rule only (no words added).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from pmm.recall import slots  # noqa: E402

_I = re.IGNORECASE
BROAD = {
    "job": slots.Slot(
        re.compile(r"\b(?:jobs?|careers?|occupation|profession|for a living|for work)\b", _I),
        re.compile(r"\bfor a living\b", _I),
        "work job occupation profession career",
        frozenset({"job", "works_at"}),
    ),
    "home": slots.Slot(
        re.compile(r"\bwhere (?:do|does|did) \w+ (?:live|move)\b|\bwhat (?:city|town)\b", _I),
        None,
        "live home city moved",
        frozenset({"location", "origin"}),
    ),
    "pet": slots.Slot(
        re.compile(r"\bname of \w+(?:'s)? (?:pet|dog|cat|puppy|pup)\b", _I),
        None,
        "pet dog cat named name",
        frozenset({"pet"}),
    ),
}


def variant(name: str) -> dict[str, slots.Slot]:
    """The slots of variant ``name`` (see the module docstring)."""
    if name == "shipped":
        return dict(slots.SLOTS)
    if name == "broad":
        return BROAD
    if name == "broad-words":
        return {k: s._replace(attributes=frozenset()) for k, s in BROAD.items()}
    if name == "broad-facts":
        return {k: s._replace(idiom=None, words="") for k, s in BROAD.items()}
    raise SystemExit(f"unknown variant {name!r}: shipped, broad, broad-words, broad-facts")


def main(argv: list[str]) -> int:
    import locomo

    if len(argv) < 2 or argv[0] != "--variant":
        raise SystemExit("usage: locomo_slots.py --variant NAME [bench/locomo.py arguments]")
    shipped = dict(slots.SLOTS)
    chosen = variant(argv[1])
    slots.SLOTS.clear()
    slots.SLOTS.update(chosen)
    try:
        print(f"slot variant {argv[1]}: {', '.join(slots.SLOTS) or 'none'}")
        return int(locomo.main(argv[2:]) or 0)
    finally:  # as shipped again (a test runs this in its own process's PMM)
        slots.SLOTS.clear()
        slots.SLOTS.update(shipped)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
