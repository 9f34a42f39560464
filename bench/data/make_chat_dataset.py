"""Writes bench/data/chat_dataset.json: long, casual, multi-session chats between two friends
and questions about them, in the shape bench/recall.py reads.

    python bench/data/make_chat_dataset.py                 # rewrites chat_dataset.json
    python bench/data/make_chat_dataset.py --seed 7 --conversations 3 --out /tmp/small.json

Why: the hand-written bench/data/recall_dataset.json is a person talking to an assistant in
full, self-contained sentences, and a third of its questions are paraphrases by design; it
rewards embedding similarity. Real chat between people (the LoCoMo benchmark is the public
example; it is deliberately not part of this project) is mostly small talk, and a fact is
often split over turns ("I signed up for a pottery class!" / "That sounds great! When?" /
"Next Tuesday!"), referred to later by "it", "she" or "that place", or shared as a photo.

How (all seeded; the same seed writes the same bytes):

- Each conversation is two friends from chat_pools.PEOPLE. Speaker A is stored with role
  ``user``, speaker B with role ``assistant`` (both are people); the turn's ``speaker``
  field holds the name, and the text is what that person typed, without a name prefix (a
  chat app stores no prefix either). Conversation records also carry ``speakers``.
- Each friend gets a random selection of stories (chat_stories.BUILDERS: a pet, a hobby
  class, two trips, a job change, a family event, a book, a concert, a purchase shown in a
  photo, a move, an injury, volunteering, likes and dislikes). A story has one to three
  stages that land in increasing sessions, so events evolve across weeks; some stages
  mention other people with similar names and similar activities (distractors), and the
  two friends have stories of the same kinds with different details.
- 16 to 22 sessions per conversation, 4 to 16 days apart, starting in the first half of
  2023; turns a minute or two apart. Every session opens with a greeting and ends with a
  goodbye; between and around the story lines go small-talk exchanges (chat_pools) until
  the conversation reaches its drawn length (430 to 760 lines). 40% of the owner's story
  lines get a small-talk sentence before or after them ("Ugh, this week. We booked
  flights to Lisbon!"), and lines in a row by one speaker merge into one turn (a turn is
  one message; a photo goes with the words around it), which leaves 360 to 650 turns.
- Questions come with the stories: ``single`` (one fact; evidence is the turn that carries
  it and, where the fact is split, the turn before it), ``multi`` (facts from two or more
  sessions), ``temporal`` ("When did ...?": answered from the session date and a relative
  phrase like "yesterday" or "next Tuesday", computed here), ``commonsense`` (an inference,
  "Would Gina enjoy a ski trip?", from a stated like or dislike or a story). Question
  wording was written once per template, not tuned against any retriever; it shares the
  story's key nouns (pottery, vet, Lisbon) where a person asking would use them.

The script checks what it writes: every evidence id exists, every ``multi`` question spans
two sessions, and the size limits of issue 8 hold (10+ conversations, 15+ sessions and
300-700 turns each, 1,000+ questions of all four kinds).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from chat_pools import GOODBYES, GREETINGS, PEOPLE, PRONOUNS, REACTIONS, SLOTS, SMALL_TALK  # noqa: E402
from chat_scenes import Line, Picker, Story, Who  # noqa: E402
from chat_stories import ACROSS, BUILDERS  # noqa: E402

OUT = HERE / "chat_dataset.json"
SEED = 2023
CONVERSATIONS = 12
MIN_SESSIONS, MAX_SESSIONS = 16, 22
MIN_TURNS, MAX_TURNS = 430, 760
"""Lines drawn per conversation; lines in a row by one speaker then merge into one turn."""
KINDS = ("single", "multi", "temporal", "commonsense")
CHATTER_SHARE = 0.4
LEADS = ["Sorry, crazy day.", "Okay so.", "Anyway!", "Ugh, this week.", "Hope you're good!",
         "I just got home.", "Sorry I went quiet.", "Oh wait, forgot to say."]  # fmt: skip
TAILS = ["How's your week going?", "lol", "Anyway, how are you?", "What are you up to tonight?",
         "Crazy, right?", "Still can't believe it.", "😅"]  # fmt: skip


def fill(text: str, rng: random.Random, names: dict[str, str]) -> str:
    """Fills ``{slot}`` from chat_pools.SLOTS (a fresh draw per occurrence) or ``names``."""

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        return names[key] if key in names else rng.choice(SLOTS[key])

    return re.sub(r"\{(\w+)\}", one, text)


def chatter(rng: random.Random, text: str) -> str:
    """A story line, sometimes inside a message that also carries small talk (people write
    "Ugh, long day. Anyway we booked flights to Lisbon!", not one fact per message)."""
    if text.startswith("[") or rng.random() >= CHATTER_SHARE:
        return text
    if rng.random() < 0.5:
        return f"{rng.choice(LEADS)} {text}"
    stop = "" if text[-1] in ".!?" or not text[-1].isascii() else "."
    return f"{text}{stop} {rng.choice(TAILS)}"


def merge_messages(
    lines: list[tuple[int, str, tuple[int, str] | None]],
) -> list[tuple[int, str, list[tuple[int, str]]]]:
    """Lines in a row by one speaker become one turn (a turn is one person's message, as
    in chat logs: a photo goes with the words around it)."""
    merged: list[tuple[int, str, list[tuple[int, str]]]] = []
    for speaker, text, tag in lines:
        tags = [tag] if tag is not None else []
        if merged and merged[-1][0] == speaker:
            last = merged[-1]
            stop = "" if last[1][-1] in ".!?)" or not last[1][-1].isascii() else "."
            merged[-1] = (speaker, f"{last[1]}{stop} {text}", last[2] + tags)
        else:
            merged.append((speaker, text, tags))
    return merged


def who(name: str, pronoun: str) -> Who:
    p = PRONOUNS[pronoun]
    return Who(name, p["sub"], p["obj"], p["pos"], p["Sub"])


def exchange(
    rng: random.Random, pool: list[list[tuple[int, str]]], opener: int, names: list[str]
) -> list[tuple[int, str]]:
    """One small-talk exchange; ``opener`` (0 = A, 1 = B) says its first line."""
    chosen = rng.choice(pool)
    lines = []
    for w, text in chosen:
        speaker = opener if w == 0 else 1 - opener
        lines.append((speaker, fill(text, rng, {"you": names[1 - speaker]})))
    return lines


def build_conversation(
    index: int, rng: random.Random, pair: tuple[tuple[str, str], tuple[str, str]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    conv_id = f"chat{index + 1:02d}"
    people = [who(*pair[0]), who(*pair[1])]
    names = [p.name for p in people]
    pick = Picker(rng)
    others = [o for o in SLOTS["other"]]
    n_sessions = rng.randint(MIN_SESSIONS, MAX_SESSIONS)
    target = rng.randint(MIN_TURNS, MAX_TURNS)

    # stories of both friends, each stage placed in a later session than the one before
    stories: list[tuple[int, Story]] = []
    for owner in (0, 1):
        builders = [b for b in BUILDERS if rng.random() < 0.9]
        for build in builders:
            story = build(rng, pick, people[owner], people[1 - owner], rng.choice(others))
            stories.append((owner, story))
    plan: list[list[tuple[int, int, list[Line]]]] = [[] for _ in range(n_sessions)]
    for s_index, (owner, story) in enumerate(stories):
        slots = sorted(rng.sample(range(n_sessions), len(story.stages)))
        for slot, stage in zip(slots, story.stages, strict=True):
            plan[slot].append((s_index, owner, stage))

    # session dates
    day = date(2023, rng.randint(1, 6), rng.randint(1, 28))
    dates: list[datetime] = []
    for _ in range(n_sessions):
        dates.append(datetime(day.year, day.month, day.day, rng.randint(8, 22), rng.randint(0, 59)))
        day += timedelta(days=rng.randint(4, 16))

    story_lines = sum(len(stage) for p in plan for _, _, stage in p)
    filler_total = max(0, target - story_lines - 5 * n_sessions)  # ~5 greeting/goodbye lines
    weights = [rng.uniform(0.6, 1.4) for _ in range(n_sessions)]
    per_session = [filler_total * w / sum(weights) for w in weights]

    sessions: list[dict[str, Any]] = []
    tag_turn: dict[tuple[int, str], tuple[str, date]] = {}
    for s, (when, entries) in enumerate(zip(dates, plan, strict=True)):
        blocks: list[list[tuple[int, str, tuple[int, str] | None]]] = []
        for s_index, owner, stage in entries:
            blocks.append(
                [(owner ^ ln.who, chatter(rng, ln.text) if ln.who == 0 else ln.text,
                  (s_index, ln.tag) if ln.tag else None)
                 for ln in stage]
            )  # fmt: skip
        budget = int(per_session[s])
        while budget > 0:
            if rng.random() < 0.15:
                small = [(rng.randint(0, 1), rng.choice(REACTIONS))]
            else:
                small = exchange(rng, SMALL_TALK, rng.randint(0, 1), names)
            budget -= len(small)
            blocks.insert(rng.randint(0, len(blocks)), [(w, t, None) for w, t in small])
        opener = rng.randint(0, 1)
        head = [(w, t, None) for w, t in exchange(rng, GREETINGS, opener, names)]
        tail = [(w, t, None) for w, t in exchange(rng, GOODBYES, rng.randint(0, 1), names)]
        lines = merge_messages(head + [x for block in blocks for x in block] + tail)
        session_id = f"{conv_id}-{s + 1}"
        turns = []
        clock = when
        for t, (speaker, text, tags) in enumerate(lines, start=1):
            turn_id = f"{session_id}-{t:03d}"
            turns.append(
                {
                    "id": turn_id,
                    "speaker": names[speaker],
                    "role": "user" if speaker == 0 else "assistant",
                    "date": clock.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "text": text,
                }
            )
            clock += timedelta(seconds=rng.randint(20, 180))
            for tag in tags:
                tag_turn[tag] = (turn_id, when.date())
        sessions.append(
            {"id": session_id, "date": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "turns": turns}
        )

    questions: list[dict[str, Any]] = []
    for s_index, (_, story) in enumerate(stories):
        for ask in story.asks:
            ids = [tag_turn[(s_index, tag)][0] for tag in ask.tags]
            answer = ask.answer if isinstance(ask.answer, str) else ask.answer(
                lambda tag, i=s_index: tag_turn[(i, tag)][1]
            )  # fmt: skip
            questions.append(
                {
                    "conversation": conv_id, "type": ask.type, "question": ask.question,
                    "answer_ids": ids, "answer": answer,
                },
            )  # fmt: skip
    # across stories of one kind: "What books has Gina finished lately?"
    for owner in (0, 1):
        for kind, template in ACROSS.items():
            mine = [(i, st) for i, (o, st) in enumerate(stories) if o == owner and st.name == kind]
            keyed = [(i, st.key) for i, st in mine if st.key is not None]
            if len(keyed) < 2:
                continue
            ids = [tag_turn[(i, key[0])][0] for i, key in keyed]
            if len({tag_turn[(i, key[0])][1] for i, key in keyed}) < 2:
                continue  # both in one session: not a question across sessions
            questions.append(
                {
                    "conversation": conv_id,
                    "type": "multi",
                    "question": template.format(A=names[owner]),
                    "answer_ids": ids,
                    "answer": "; ".join(key[1] for _, key in keyed),
                }
            )
    conversation = {
        "id": conv_id,
        "speakers": {"user": names[0], "assistant": names[1]},
        "sessions": sessions,
    }
    return conversation, questions


def build(seed: int = SEED, conversations: int = CONVERSATIONS) -> dict[str, Any]:
    """The whole dataset as a dict (deterministic for ``seed``)."""
    rng = random.Random(seed)
    people = list(PEOPLE)
    rng.shuffle(people)
    convs: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for i in range(conversations):
        pair = (people[(2 * i) % len(people)], people[(2 * i + 1) % len(people)])
        conv, qs = build_conversation(i, random.Random(rng.getrandbits(64)), pair)
        convs.append(conv)
        for n, q in enumerate(qs, start=1):
            questions.append({"id": f"{conv['id']}-q{n:03d}", **q})
    return {
        "name": "pmm-chat-v1",
        "description": (
            "Casual chats between two friends over 16-22 dated sessions each, mostly small "
            "talk; facts split over neighbouring turns, pronouns, photo captions, evolving "
            "events and distractors. Speaker A has role 'user', speaker B role 'assistant'; "
            "'speaker' holds the name, 'text' has no name prefix. Question types: single, "
            "multi (across sessions), temporal (answers from session dates), commonsense. "
            f"Generated by bench/data/make_chat_dataset.py with seed {seed}."
        ),
        "seed": seed,
        "conversations": convs,
        "questions": questions,
    }


def check(data: dict[str, Any], *, full: bool = True) -> list[str]:
    """Problems with ``data`` (empty when fine); ``full`` also checks the size limits."""
    problems: list[str] = []
    session_of = {
        t["id"]: s["id"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]
    }
    for q in data["questions"]:
        missing = [i for i in q["answer_ids"] if i not in session_of]
        if missing or not q["answer_ids"]:
            problems.append(f"{q['id']}: evidence {missing or 'empty'}")
        elif q["type"] == "multi" and len({session_of[i] for i in q["answer_ids"]}) < 2:
            problems.append(f"{q['id']}: multi question within one session")
    if full:
        convs = data["conversations"]
        if len(convs) < 10:
            problems.append(f"{len(convs)} conversations (< 10)")
        for c in convs:
            n_turns = sum(len(s["turns"]) for s in c["sessions"])
            if len(c["sessions"]) < 15 or not 300 <= n_turns <= 700:
                problems.append(f"{c['id']}: {len(c['sessions'])} sessions, {n_turns} turns")
        kinds = Counter(q["type"] for q in data["questions"])
        if len(data["questions"]) < 1000 or any(kinds[k] == 0 for k in KINDS):
            problems.append(f"questions: {dict(kinds)}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--conversations", type=int, default=CONVERSATIONS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    data = build(args.seed, args.conversations)
    problems = check(data, full=args.conversations >= 10)
    if problems:
        raise SystemExit("bad dataset:\n" + "\n".join(problems))
    args.out.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    n_turns = sum(len(s["turns"]) for c in data["conversations"] for s in c["sessions"])
    kinds = Counter(q["type"] for q in data["questions"])
    print(
        f"wrote {args.out}: {len(data['conversations'])} conversations, {n_turns} turns, "
        f"{len(data['questions'])} questions {dict(sorted(kinds.items()))}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
