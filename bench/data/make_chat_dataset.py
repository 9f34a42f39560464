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

- Each conversation is two friends from ``PEOPLE``. Speaker A is stored with role
  ``user``, speaker B with role ``assistant`` (both are people); the turn's ``speaker``
  field holds the name, and the text is what that person typed, without a name prefix (a
  chat app stores no prefix either). Conversation records also carry ``speakers``.
- Each friend gets a random selection of stories (``BUILDERS``: a pet, a hobby
  class, two trips, a job change, a family event, a book, a concert, a purchase shown in a
  photo, a move, an injury, volunteering, likes and dislikes). A story has one to three
  stages that land in increasing sessions, so events evolve across weeks; some stages
  mention other people with similar names and similar activities (distractors), and the
  two friends have stories of the same kinds with different details.
- 16 to 22 sessions per conversation, 4 to 16 days apart, starting in the first half of
  2023; turns a minute or two apart. Every session opens with a greeting and ends with a
  goodbye; between and around the story lines go small-talk exchanges (``SMALL_TALK``) until
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

Below, in order: the shapes of a story and the dates (a story belongs to one friend, the
owner, ``0`` in its lines; the other friend is ``1``; lines that carry an answer get a tag, and
the questions name their evidence by these tags; answers that depend on time are functions of
the session date of a tagged line), the word pools and small talk (``{you}`` in a small-talk
line is the friend spoken to, other ``{slots}`` come from ``SLOTS``; in an exchange ``0`` opens
it), the story builders, and the generator.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


# -- shapes of a story, dates --------------------------------------------------------------
DayOf = Callable[[str], date]
"""The session date of a tagged line."""


@dataclass
class Line:
    who: int
    """0: the story's owner, 1: the other friend."""
    text: str
    tag: str = ""


@dataclass
class Ask:
    type: str
    """single, multi, temporal or commonsense."""
    question: str
    answer: str | Callable[[DayOf], str]
    tags: list[str]


@dataclass
class Story:
    name: str
    stages: list[list[Line]]
    asks: list[Ask] = field(default_factory=list)
    key: tuple[str, str] | None = None
    """(tag, value) for questions across stories of one kind ("What books has ... read?")."""


@dataclass
class Who:
    name: str
    sub: str
    obj: str
    pos: str
    Sub: str


class Picker:
    """Draws values without repeats inside one conversation (so the two friends never
    share a pet name or a city)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def __call__(self, pool: list[str]) -> str:
        fresh = [p for p in pool if p not in self.used]
        choice = self.rng.choice(fresh or pool)
        self.used.add(choice)
        return choice


def fmt(d: date) -> str:
    return f"{d.day} {d:%B %Y}"


def _weekday_before(d: date, weekday: int) -> date:
    back = (d.weekday() - weekday) % 7 or 7
    return d - timedelta(days=back)


def _weekday_after(d: date, weekday: int) -> date:
    ahead = (weekday - d.weekday()) % 7 or 7
    return d + timedelta(days=ahead)


# (phrase, date of the session -> answer)
PAST: list[tuple[str, Callable[[date], str]]] = [
    ("yesterday", lambda d: fmt(d - timedelta(days=1))),
    ("last weekend", lambda d: f"the weekend before {fmt(d)}"),
    ("two days ago", lambda d: fmt(d - timedelta(days=2))),
    ("last week", lambda d: f"the week before {fmt(d)}"),
    ("on Saturday", lambda d: fmt(_weekday_before(d, 5))),
    ("last Friday", lambda d: fmt(_weekday_before(d, 4))),
    ("this morning", fmt),
]
FUTURE: list[tuple[str, Callable[[date], str]]] = [
    ("next Tuesday", lambda d: fmt(_weekday_after(d, 1))),
    ("this Saturday", lambda d: fmt(_weekday_after(d, 5))),
    ("tomorrow", lambda d: fmt(d + timedelta(days=1))),
    ("in two weeks", lambda d: f"two weeks after {fmt(d)}"),
    ("next Thursday", lambda d: fmt(_weekday_after(d, 3))),
    ("on Sunday", lambda d: fmt(_weekday_after(d, 6))),
]


def when(tag: str, rel: Callable[[date], str]) -> Callable[[DayOf], str]:
    return lambda day: rel(day(tag))


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


# -- pools -------------------------------------------------------------------------------

PETS = [
    ("dog", "golden retriever", "a golden retriever puppy chewing a shoe"),
    ("dog", "beagle", "a beagle sleeping on a blue blanket"),
    ("dog", "corgi", "a corgi in a tiny raincoat"),
    ("dog", "rescue mutt", "a scruffy brown dog with one ear up"),
    ("cat", "tabby", "an orange tabby kitten in a laundry basket"),
    ("cat", "black cat", "a black cat sitting in a window"),
    ("rabbit", "lop-eared rabbit", "a grey bunny eating lettuce"),
    ("dog", "husky", "a husky with blue eyes in the snow"),
]
PET_NAMES = ["Biscuit", "Luna", "Mochi", "Pepper", "Oscar", "Maple", "Ziggy", "Nugget",
             "Olive", "Bruno", "Pickles", "Juniper"]  # fmt: skip
CHEWED = ["my favourite sneakers", "the TV remote", "a whole loaf of bread", "my headphones",
          "the couch cushion", "a library book"]  # fmt: skip
VET = ["an ear infection", "a sprained paw", "a tummy bug", "allergies"]

# (hobby, class phrase, first thing made/done, photo, later milestone, teacher kind)
HOBBIES = [
    ("pottery", "a pottery class", "a very wonky bowl", "a lopsided blue clay bowl",
     "sold two mugs at the craft fair"),
    ("salsa", "salsa lessons", "the basic step without stepping on anyone", "",
     "danced at my cousin's wedding without embarrassing myself"),
    ("guitar", "guitar lessons", "the first half of Wonderwall lol", "",
     "played two songs at an open mic night"),
    ("painting", "a watercolour class", "a little painting of a lighthouse",
     "a watercolour lighthouse with a very purple sky", "had a painting picked for a local show"),
    ("climbing", "a bouldering course", "my first V2 route", "",
     "climbed outdoors for the first time at the quarry"),
    ("baking", "a sourdough workshop", "a loaf that looked like a frisbee",
     "a flat, very dark loaf of bread", "won second place in the neighbourhood bake-off"),
    ("Spanish", "Spanish classes", "a whole conversation about the weather", "",
     "ordered an entire dinner in Spanish"),
    ("swimming", "adult swim lessons", "a full length of the pool", "",
     "swam a mile without stopping"),
    ("photography", "a photography course", "a photo of a heron that's actually in focus",
     "a heron standing in a pond at dawn", "sold a print to a cafe"),
    ("knitting", "a knitting circle", "a scarf with three holes",
     "a stripy green scarf with a few holes", "finished a sweater for my dad"),
]  # fmt: skip
TEACHERS = ["Mr. Alvarez", "Jen", "a retired guy called Walter", "Priti", "Coach Dana",
            "an older lady named Edith", "Marco", "Ms. Okafor"]  # fmt: skip

CITIES = [
    ("Lisbon", "the custard tarts", "a tram going up a steep street"),
    ("Montreal", "the bagels", "a plate of poutine"),
    ("Kyoto", "the temples at sunrise", "a red gate in a bamboo forest"),
    ("Iceland", "the hot springs", "a waterfall with a rainbow"),
    ("New Orleans", "the live jazz", "a brass band on a street corner"),
    ("Barcelona", "the tapas", "colourful mosaic tiles in a park"),
    ("the Grand Canyon", "the sunset hike", "a canyon glowing orange"),
    ("Edinburgh", "the castle", "a castle on a hill in the rain"),
    ("Mexico City", "the street tacos", "a bright blue courtyard"),
    ("Vancouver", "the kayaking", "kayaks on a calm bay with mountains"),
    ("Rome", "the gelato", "a scoop of pistachio gelato"),
    ("Nashville", "the honky-tonks", "neon signs on Broadway"),
]
COMPANIONS = ["my sister", "my partner", "two friends from work", "my mom", "my roommate",
              "my college friends"]  # fmt: skip

JOBS = ["accountant", "barista", "graphic designer", "nurse", "teacher", "software tester",
        "paralegal", "sales rep", "lab technician", "social media manager"]  # fmt: skip
COMPANIES = ["Brightwell", "Northstar Logistics", "Pinecrest Hospital", "Lumen Studio",
             "Harbor Bank", "Greenleaf Foods", "Atlas Insurance", "Cobalt Labs",
             "Riverside High", "Quill & Co"]  # fmt: skip
NEW_JOBS = ["UX designer", "project manager", "data analyst", "head baker", "team lead",
            "school counsellor", "copywriter", "physiotherapy assistant"]  # fmt: skip

SIBLINGS = ["Emma", "Jake", "Lily", "Noah", "Grace", "Owen", "Zoe", "Max", "Ruby", "Finn"]
FAMILY_EVENTS = [
    ("wedding", "is getting married", "I'm the maid of honour", "I cried during my speech",
     "a long table under fairy lights"),
    ("baby", "is having a baby", "I'm going to be an aunt/uncle", "the baby is a girl, 7 pounds",
     "a tiny hand holding a finger"),
    ("graduation", "is graduating from nursing school", "I'm driving up for the ceremony",
     "we took my parents out to dinner after", "a graduation cap thrown in the air"),
    ("housewarming", "bought a house", "I'm helping with the move",
     "the new place has a huge yard", "a small yellow house with a red door"),
]  # fmt: skip

BOOKS = [("Project Hail Mary", "Andy Weir"), ("The Secret History", "Donna Tartt"),
         ("Educated", "Tara Westover"), ("Circe", "Madeline Miller"),
         ("The Martian", "Andy Weir"), ("Pachinko", "Min Jin Lee"),
         ("Where the Crawdads Sing", "Delia Owens"), ("Dune", "Frank Herbert"),
         ("Little Fires Everywhere", "Celeste Ng"), ("Atomic Habits", "James Clear")]  # fmt: skip
BANDS = ["Arctic Monkeys", "Taylor Swift", "Coldplay", "Lizzo", "the Lumineers", "Hozier",
         "Paramore", "Bon Iver", "Florence and the Machine", "the Killers"]  # fmt: skip
VENUES = ["the Fillmore", "Madison Square Garden", "the Greek Theatre", "Red Rocks",
          "the arena downtown", "a tiny club called The Basement"]  # fmt: skip
ITEMS = [
    ("bike", "a red vintage bicycle leaning on a fence", "at a flea market", "$40", "red"),
    ("couch", "a green velvet couch in a living room", "off Marketplace", "$120", "green"),
    ("camera", "an old film camera on a wooden table", "at a garage sale", "$25", "silver"),
    ("car", "a small white hatchback in a driveway", "from my uncle", "$3,000", "white"),
    ("guitar amp", "a little orange amp on a rug", "at a pawn shop", "$60", "orange"),
    ("armchair", "a yellow armchair by a window", "at a thrift store", "$35", "yellow"),
]
NEIGHBOURHOODS = [("Riverside", "the bakery on the corner"), ("the east side", "the park"),
                  ("Maple Heights", "the quiet street"), ("downtown", "the walkability"),
                  ("Oak Park", "the big kitchen"), ("the mill district", "the view")]  # fmt: skip
INJURIES = [("sprained my ankle", "playing pickleball", "ankle"),
            ("hurt my back", "moving a dresser", "back"),
            ("broke my wrist", "falling off my bike", "wrist"),
            ("twisted my knee", "on a hike", "knee"),
            ("burned my hand", "taking a tray out of the oven", "hand")]  # fmt: skip
VOLUNTEER = [("the animal shelter", "walking the dogs"), ("the food bank", "sorting donations"),
             ("a literacy program", "reading with kids"),
             ("the community garden", "weeding and watering"),
             ("a youth soccer league", "coaching the under-8s")]  # fmt: skip

# (what the owner says, what the friend suggests first, question, answer)
PREFERENCES = [
    ("Honestly I hate being cold. Give me a beach any day", "We should go skiing this winter!",
     "Would {A} enjoy a winter ski trip?", "Probably not; {sub} hates being cold"),
    ("I've been vegetarian since college lol, you know that", "Want to try that new BBQ place?",
     "Would {A} want a steakhouse dinner for {pos} birthday?", "Probably not; {sub} is vegetarian"),
    ("Boats and me do not get along. I get seasick in the bath haha",
     "My uncle has a boat, wanna come out on the lake?",
     "Would {A} enjoy a week-long sailing trip?", "Unlikely; {sub} gets seasick"),
    ("Nothing beats a long hike on a Sunday morning", "What do you do to relax?",
     "Would {A} likely enjoy a hiking trip in the mountains?", "Yes; {sub} loves hiking"),
    ("Big crowds make me really anxious tbh", "Are you going to the street festival?",
     "Would {A} enjoy a packed music festival?", "Probably not; crowds make {obj} anxious"),
    ("I read before bed every night, it's my thing", "How do you wind down?",
     "Would a book be a good gift for {A}?", "Yes; {sub} reads every night"),
    ("Cats make my eyes swell shut, it's bad", "My friend's cat just had kittens, want one?",
     "Could {A} comfortably stay in a house with three cats?", "No; {sub} is allergic to cats"),
    ("I'm such a morning person, up at 5:30 even on weekends", "How are you always so awake?",
     "Would {A} be up for a sunrise yoga class?", "Likely yes; {sub} is a morning person"),
    ("I can't handle spicy food at all, my mouth just dies", "Want to try the hot wing challenge?",
     "Would {A} order the extra-hot curry?", "No; {sub} can't handle spicy food"),
    ("Flying terrifies me, I drive everywhere", "You should visit me in Seattle sometime!",
     "Is {A} likely to fly overseas for a holiday?", "Unlikely; {sub} is afraid of flying"),
    ("Gardening is basically my therapy", "What did you do all weekend?",
     "Would {A} appreciate a set of gardening tools?", "Yes; gardening is {pos} therapy"),
    ("I don't drink, never really have", "Wine night at mine on Friday?",
     "Would {A} enjoy a wine tasting tour?", "Probably not; {sub} doesn't drink"),
    ("Horror movies give me nightmares for weeks", "Movie night? I was thinking something scary",
     "Would {A} want to see the new horror film?", "No; horror gives {obj} nightmares"),
    ("I'm obsessed with board games, we play every Friday", "What are your weekend plans?",
     "Would {A} enjoy a board game cafe?", "Yes; {sub} plays board games every Friday"),
]  # fmt: skip


# -- people, word pools and small talk -----------------------------------------------------
# (name, pronoun set) pairs; each conversation draws two friends from here.
PEOPLE: list[tuple[str, str]] = [
    ("Caroline", "she"), ("Melanie", "she"), ("Jon", "he"), ("Gina", "she"),
    ("Dave", "he"), ("Priya", "she"), ("Marcus", "he"), ("Tessa", "she"),
    ("Omar", "he"), ("Hannah", "she"), ("Leo", "he"), ("Rosa", "she"),
    ("Sam", "he"), ("Nadia", "she"), ("Ethan", "he"), ("Julia", "she"),
    ("Ravi", "he"), ("Chloe", "she"), ("Ben", "he"), ("Aisha", "she"),
    ("Tom", "he"), ("Yuki", "she"), ("Luis", "he"), ("Maddie", "she"),
]  # fmt: skip

# Third parties: coworkers, cousins, neighbours; some sound like the friends on purpose.
OTHERS: list[str] = [
    "Carol", "Carla", "Mel", "Melissa", "John", "Gemma", "Davey", "Pria", "Mark", "Tess",
    "Omari", "Anna", "Leon", "Rose", "Sammy", "Nadine", "Ethel", "Jules", "Ravi's cousin Raj",
    "Chris", "Benny", "Asha", "Tommy", "Yuko", "Louie", "Maddy", "Kevin", "Linda", "Fatima",
    "Greg", "Sofia", "Hugo", "Ivy", "Pete", "Zara", "Dan", "Olga", "Moira", "Kenji",
]  # fmt: skip

PRONOUNS = {
    "she": {"sub": "she", "obj": "her", "pos": "her", "Sub": "She"},
    "he": {"sub": "he", "obj": "him", "pos": "his", "Sub": "He"},
}

SLOTS: dict[str, list[str]] = {
    "food": [
        "tacos", "ramen", "lasagna", "a massive burrito", "pad thai", "leftover pizza", "pancakes",
        "curry", "a grilled cheese", "sushi", "pho", "mac and cheese", "a Greek salad", "dumplings",
        "chili",
    ],
    "show": [
        "that baking show", "the new detective series", "some reality dating thing",
        "an old sitcom", "a nature documentary", "that sci-fi show everyone talks about",
        "a true crime podcast", "the cooking competition", "a K-drama",
    ],
    "weather": [
        "raining nonstop", "weirdly warm", "freezing", "so windy", "grey and gloomy",
        "actually sunny for once", "really humid", "foggy all morning",
    ],
    "chore": [
        "laundry", "cleaning the kitchen", "grocery shopping", "sorting out my taxes",
        "fixing the leaky tap", "vacuuming", "meal prep", "answering emails", "returning a package",
    ],
    "drink": ["coffee", "tea", "an iced latte", "hot chocolate", "a smoothie", "matcha"],
    "place": [
        "the park", "the mall", "the farmers market", "my parents' place", "the library",
        "a new cafe downtown", "the gym", "the beach", "the hardware store",
    ],
    "city": ["Lisbon", "Rome", "Denver", "Austin", "Paris", "Chicago", "Montreal", "Kyoto"],
    "band": ["Taylor Swift", "Hozier", "Coldplay", "some old 90s band", "Lizzo", "Paramore"],
    "mood": ["tired", "a bit stressed", "pretty good", "sleepy", "weirdly energetic", "okay"],
    "other": OTHERS,
}  # fmt: skip

# Small talk: lists of (who, text); who 0 opens, 1 answers.
SMALL_TALK: list[list[tuple[int, str]]] = [
    [(0, "Hey! How's your week going?"), (1, "Pretty good, just busy. You?"),
     (0, "Same old haha"), (1, "lol")],
    [(0, "ugh I'm so {mood} today"), (1, "Noo, late night?"),
     (0, "Kind of. Couldn't sleep."), (1, "That's the worst. {drink} time!")],
    [(0, "It's been {weather} here all day"), (1, "Same here honestly"),
     (0, "I'm just staying in"), (1, "Good call")],
    [(0, "Have you watched anything good lately?"), (1, "I've been watching {show}"),
     (0, "Ooh is it good?"), (1, "It's okay, kind of addictive haha")],
    [(0, "What did you have for dinner?"), (1, "{food}, you?"), (0, "{food} lol"),
     (1, "Nice")],
    [(0, "I spent the whole morning on {chore}"), (1, "Productive!"),
     (0, "Barely haha"), (1, "Still counts")],
    [(0, "haha yes"), (1, "Right??")],
    [(0, "Sorry I didn't reply earlier, it's been a day"), (1, "No worries at all!"),
     (0, "Thanks 😊")],
    [(0, "Did you see the message {other} sent in the group chat?"), (1, "Lol yes"),
     (0, "I can't believe it"), (1, "Classic {other}")],
    [(0, "I went to {place} earlier"), (1, "Oh nice, anything fun?"),
     (0, "Not really, just wandering around"), (1, "Sometimes that's the best")],
    [(0, "Do you ever feel like the weeks go by way too fast?"), (1, "All the time"),
     (0, "Like how is it already the weekend again"), (1, "I know!!")],
    [(0, "I'm drinking {drink} and pretending I'm productive"), (1, "Relatable"),
     (0, "haha")],
    [(0, "Random question but what are you up to this weekend?"),
     (1, "Nothing much, maybe {chore}. Exciting stuff lol"), (0, "Living the dream"),
     (1, "Always")],
    [(0, "My neighbour's dog has been barking all morning"), (1, "Oh no"),
     (0, "It's fine, it's a cute dog at least"), (1, "haha that helps")],
    [(0, "I tried to make {food} from scratch"), (1, "How did it go?"),
     (0, "Edible. Barely."), (1, "That's a win in my book")],
    [(0, "{other} was asking about you the other day"), (1, "Aw really? Tell them hi!"),
     (0, "Will do")],
    [(0, "I need a vacation from my vacation haha"), (1, "Don't we all"),
     (0, "Seriously")],
    [(0, "That sounds great!"), (1, "Yeah I'm pretty excited")],
    [(0, "Work was so slow today"), (1, "Better than crazy busy though?"),
     (0, "True, true")],
    [(0, "I'm finally on the couch"), (1, "Best feeling"), (0, "Honestly")],
    [(0, "How's everyone at home?"), (1, "All good! Everyone says hi"),
     (0, "Aww hi back")],
    [(0, "Did you sleep okay?"), (1, "Not really, I was up scrolling till 2"),
     (0, "Been there"), (1, "Never again (until tonight lol)")],
    [(0, "I keep meaning to call you but then I fall asleep at 9 haha"),
     (1, "Same honestly, texting is easier"), (0, "Agreed")],
    [(0, "Okay I have to share this meme"), (1, "Send it"),
     (0, "[shares a photo: a cat wearing tiny sunglasses]"), (1, "HAHAHA"),
     (1, "I'm crying")],
    [(0, "[shares a photo: a sunset over a parking lot]"), (1, "Pretty!"),
     (0, "The parking lot really adds to it lol")],
    [(0, "What are you doing right now?"), (1, "Lying in bed watching {show}"),
     (0, "Perfect evening")],
    [(0, "I can't believe how expensive groceries are now"), (1, "Right? It's insane"),
     (0, "I spent so much on like five things"), (1, "Ugh same")],
    [(0, "lol yes"), (1, "haha")],
    [(0, "I'm thinking about getting a haircut"), (1, "Do it!"),
     (0, "Maybe. I always chicken out"), (1, "haha you say that every time")],
    [(0, "Wanna grab {drink} sometime soon?"), (1, "Yes! Next week maybe?"),
     (0, "Let's do it"), (1, "👍")],
    [(0, "I'm so behind on everything"), (1, "Take it one thing at a time"),
     (0, "You're right"), (1, "I'm always right haha")],
    [(0, "Oh that reminds me, I still have the map you lent me"),
     (1, "Haha keep it"), (0, "Lol ok")],
    [(0, "Happy Friday!!"), (1, "Finally! Any plans?"), (0, "Sleep. Lots of it."),
     (1, "Love that for you")],
    [(0, "Did you end up going to that thing?"), (1, "Which thing?"),
     (0, "The one {other} invited us to"), (1, "Oh no, I totally forgot about it"),
     (0, "haha me too")],
    [(0, "The traffic today was unreal"), (1, "Ugh. How long did it take?"),
     (0, "Almost an hour for a 20 minute drive"), (1, "Nightmare")],
    [(0, "Is it weird that I already want it to be summer again"), (1, "Not at all"),
     (0, "Good")],
    [(0, "My phone is about to die"), (1, "Charge it!!"), (0, "Lol ok mom")],
    [(0, "That's so true"), (1, "Right?"), (0, "haha")],
    [(0, "Guess what I'm eating"), (1, "{food}?"), (0, "How did you know"),
     (1, "You're predictable lol")],
    [(0, "I really needed this chat today"), (1, "Aw, me too ❤️")],
    [(0, "So what's new with you?"), (1, "Honestly not much! Work, sleep, repeat"),
     (0, "Sounds about right")],
    [(0, "I walked past {place} and thought of you"), (1, "Haha why?"),
     (0, "No idea, it just made me think of you"), (1, "Cute")],
    # everyday mentions of the same topics the stories are about (pets, classes, trips,
    # work, family, books, concerts), with no fact anyone asks about
    [(0, "My sister keeps sending me wedding dress pics lol"), (1, "Wait is she engaged??"),
     (0, "No, she just watches that show"), (1, "hahaha")],
    [(0, "Ugh my yoga class got cancelled again"), (1, "Noo, third time?"),
     (0, "Fourth. I'm starting to take it personally"), (1, "lol")],
    [(0, "{other} is going to {city} next month"), (1, "Everyone is going there lately"),
     (0, "Right? It's on my list too")],
    [(0, "Do you know a good vet around here? Asking for {other}"), (1, "Not really, sorry!"),
     (0, "No worries")],
    [(0, "I can't find a good book to get into lately"), (1, "Same, nothing grabs me"),
     (0, "Maybe I'll just reread an old one")],
    [(0, "{other} got tickets to some concert and won't stop bragging"), (1, "lol classic"),
     (0, "I'm not jealous at all. Totally not")],
    [(0, "Work is fine. Boring, but fine"), (1, "Boring is underrated honestly"),
     (0, "True")],
    [(0, "I'm thinking about taking a trip somewhere warm"), (1, "Do it!"),
     (0, "Maybe next year lol. Money")],
    [(0, "My back hurts from sitting all day"), (1, "Stretch!!"), (0, "Yes mom")],
    [(0, "Saw the cutest dog at the park today"), (1, "Pics?"),
     (0, "Didn't get one, I was too busy petting it"), (1, "Priorities")],
    [(0, "My mom wants to learn to knit now"), (1, "Aw that's cute"),
     (0, "She's gonna make everyone scarves for Christmas, I can feel it")],
    [(0, "Do you still have that old bike?"), (1, "Somewhere in the garage lol"),
     (0, "Haha figures")],
    [(0, "{other} is moving again"), (1, "Again?! Where to this time?"),
     (0, "No idea, somewhere across town"), (1, "I lose track honestly")],
    [(0, "I had the weirdest dream last night"), (1, "Tell me"),
     (0, "I was back in school but it was also a grocery store"), (1, "lol what")],
    [(0, "Are you watching the game tonight?"), (1, "Probably, if I stay awake"),
     (0, "Same")],
    [(0, "Coffee or tea this morning?"), (1, "Both. It's that kind of day"),
     (0, "Respect")],
    [(0, "I finally cleaned out my closet"), (1, "Wow, proud of you"),
     (0, "Found a jacket I forgot I owned"), (1, "Free jacket!")],
    [(0, "My plants are dying again"), (1, "Too much water?"),
     (0, "Probably. I love them too much"), (1, "haha")],
    [(0, "{other} said hi by the way"), (1, "Aw hi back!")],
    [(0, "How was your weekend?"), (1, "Quiet, which was nice. Yours?"),
     (0, "Same honestly. Lots of napping"), (1, "The dream")],
    [(0, "I've been listening to {band} nonstop"), (1, "Good choice"),
     (0, "I know, right")],
    [(0, "The gym was packed today"), (1, "New year's resolution crowd?"),
     (0, "Probably lol"), (1, "Give it two weeks")],
    [(0, "Someone at work brought cake"), (1, "Best kind of work day"),
     (0, "Honestly yes")],
    [(0, "I'm so bad at replying, sorry!!"), (1, "Lol same, no worries")],
    [(0, "Have you tried that new {food} place?"), (1, "Not yet, is it good?"),
     (0, "Sooo good"), (1, "Ok adding it to the list")],
]  # fmt: skip

GREETINGS: list[list[tuple[int, str]]] = [
    [(0, "Hey {you}!"), (1, "Hey!! How are you?"), (0, "Good! You?"), (1, "Good good")],
    [(0, "Hiii"), (1, "Hi! Long time no talk"), (0, "I know! Life has been crazy")],
    [(0, "Hey, you around?"), (1, "Yep! What's up?")],
    [(0, "Good morning!"), (1, "Morning! ☀️")],
    [(0, "{you}!! I have so much to tell you"), (1, "Ooh spill")],
    [(0, "Hey hey"), (1, "Hey {you}! How's it going?"), (0, "Not bad at all")],
    [(0, "Hi! Are you free to chat for a bit?"), (1, "Always for you haha")],
]  # fmt: skip

GOODBYES: list[list[tuple[int, str]]] = [
    [(0, "Anyway I gotta run, talk soon!"), (1, "Bye! Take care 😊")],
    [(0, "Okay I should sleep"), (1, "Night!")],
    [(0, "Talk later?"), (1, "Definitely!")],
    [(0, "Gotta go make dinner, chat soon"), (1, "Enjoy!")],
    [(0, "Ok bye for now!"), (1, "Byeee")],
    [(0, "This was fun, let's talk again soon"), (1, "For sure ❤️")],
]  # fmt: skip

REACTIONS: list[str] = [
    "haha yes", "omg", "That's awesome!", "So true", "lol right?", "Aww", "Love that",
    "Totally agree", "Wow", "Nice!!", "haha", "No way", "Yesss", "Ugh, I feel that",
    "That's amazing", "Oh wow", "Same lol", "😂", "Good for you!", "Honestly same",
]  # fmt: skip


# -- the story builders --------------------------------------------------------------------
REACT = ["haha yes", "omg", "That's awesome!", "Love that", "Wow", "Nice!!", "Yesss", "Aww"]


def third(text: str, o: Who) -> str:
    """First person to third person for short answer phrases ("my sister" -> "her sister")."""
    for first, then in (("I'm ", f"{o.sub} is "), ("my ", f"{o.pos} "), ("My ", f"{cap(o.pos)} "),
                        ("I ", f"{o.sub} ")):  # fmt: skip
        text = text.replace(first, then)
    return text.rstrip("!")


def pet(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    breed = pick([p[1] for p in PETS])
    species, _, photo = next(p for p in PETS if p[1] == breed)
    name = pick(PET_NAMES)
    him = r.choice(["him", "her"])
    he = "he" if him == "him" else "she"
    rel, rel_at = r.choice(PAST)
    rel2, rel2_at = r.choice(PAST)
    chewed, vet = r.choice(CHEWED), r.choice(VET)
    other_breed = r.choice([p[1] for p in PETS if p[1] != breed])
    stages = [
        [
            Line(0, f"[shares a photo: {photo}]", "photo"),
            Line(1,
                 r.choice(["OMG who is this?!", "wait... is that yours??", "STOP. Who is that"])),
            Line(0, f"Meet {name}! We picked {him} up from the shelter {rel}", "adopt"),
            Line(1, r.choice(["I'm obsessed", "Aww I need to meet " + him, "Cutest thing ever"])),
            Line(0,
                 r.choice(["I haven't slept but worth it", f"{cap(he)} already runs the house"])),
            Line(1, f"haha {other} just got a {other_breed} too, they could be friends"),
        ],
        [
            Line(0, f"Guess who ate {chewed} this morning", "chew"),
            Line(1, f"Not {name} 😂"),
            Line(0, "Yep. Zero remorse"),
            Line(1, "lol"),
        ],
        [
            Line(0, f"Had to take {name} to the vet {rel2}", "vetvisit"),
            Line(1, "Oh no, is everything ok?"),
            Line(0, f"Yeah, just {vet}. {cap(he)} has to wear the cone of shame lol", "vet"),
            Line(1, "Poor baby"),
        ],
    ]  # fmt: skip
    asks = [
        Ask("single", r.choice([f"What is the name of {o.name}'s {species}?",
                                f"What did {o.name} call {o.pos} new pet?"]), name, ["adopt"]),
        Ask("single", f"What kind of {species} did {o.name} adopt?", breed, ["photo"]),
        Ask("temporal", f"When did {o.name} adopt {name}?", when("adopt", rel_at), ["adopt"]),
        Ask("single", r.choice([f"What did {name} chew up?",
                                f"What did {o.name}'s {species} destroy?"]),
            chewed.replace("my ", f"{o.pos} "), ["chew"]),
        Ask("single", f"What was wrong with {name} at the vet?", vet, ["vet"]),
        Ask("temporal", f"When did {o.name} take {name} to the vet?", when("vetvisit", rel2_at),
            ["vetvisit"]),
        Ask("multi",
            f"What trouble has {o.name}'s {species} caused or had since {o.sub} got {him}?",
            f"{name} ate {chewed}; later had {vet}", ["chew", "vet"]),
        Ask("commonsense", f"Would {o.name} want a pet-friendly hotel for a weekend away?",
            f"Likely yes; {o.sub} has a {species}, {name}", ["adopt"]),
    ]  # fmt: skip
    return Story("pet", stages, asks)


def hobby(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    name = pick([h[0] for h in HOBBIES])
    _, phrase, first, photo, milestone = next(h for h in HOBBIES if h[0] == name)
    rel, rel_at = r.choice(FUTURE)
    rel2, rel2_at = r.choice(PAST)
    teacher = pick(TEACHERS)
    day = r.choice(["Mondays", "Wednesdays", "Thursdays", "Saturdays"])
    second = [
        Line(0, "Okay update, the class was so fun"),
        Line(1, "Tell me everything"),
        Line(0, f"I managed {first}", "first"),
        Line(1, "Haha that counts!"),
    ]
    if photo:
        second += [Line(0, f"[shares a photo: {photo}]", "photo"), Line(1, "Honestly love it")]
    second += [Line(0, f"The teacher is {teacher}, so funny", "teacher"), Line(1, r.choice(REACT))]
    stages = [
        [
            Line(0, f"So I finally signed up for {phrase}!", "signup"),
            Line(1, r.choice(["That sounds great! When?", "No way!! When do you start?",
                              "Ooh finally! When's the first one?"])),
            Line(0, f"{cap(rel)}!", "start"),
            Line(1, r.choice(REACT)),
            Line(0, "I'm nervous haha"),
            Line(1, f"You'll be great. My coworker {other} does that too, on {day}"),
        ],
        second,
        [
            Line(1, r.choice(["Are you still doing the class?", "How's that going btw?"])),
            Line(0, f"Yes! I {milestone} {rel2}", "milestone"),
            Line(1, "WHAT. That's huge"),
            Line(0, "I know, I'm still buzzing"),
        ],
    ]  # fmt: skip
    asks = [
        Ask("single", r.choice([f"What class did {o.name} sign up for?",
                                f"What new hobby did {o.name} take up?"]), phrase, ["signup"]),
        Ask("temporal", f"When was {o.name}'s first {name} class?", when("start", rel_at),
            ["signup", "start"]),
        Ask("single", f"What did {o.name} manage in {o.pos} first {name} class?", third(first, o),
            ["first"] + (["photo"] if photo else [])),
        Ask("single", r.choice([f"Who teaches {o.name}'s {name} class?",
                                f"What is the name of {o.name}'s teacher?"]), teacher, ["teacher"]),
        Ask("temporal", f"When did {o.name} {third(milestone, o)}?", when("milestone", rel2_at),
            ["milestone"]),
        Ask("multi", f"How did {o.name}'s {name} go, from the first class to later on?",
            f"{third(first, o)} at first; later {o.sub} {third(milestone, o)}",
            ["first", "milestone"]),
        Ask("commonsense", f"Did {o.name} stick with {name} after signing up?",
            f"Yes; months later {o.sub} {third(milestone, o)}", ["signup", "milestone"]),
    ]  # fmt: skip
    return Story("hobby", stages, asks)


def trip(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    city = pick([c[0] for c in CITIES])
    _, highlight, photo = next(c for c in CITIES if c[0] == city)
    companion = r.choice(COMPANIONS)
    leave, leave_at = r.choice(FUTURE)
    back, back_at = r.choice(PAST[:4])
    other_city = r.choice([c[0] for c in CITIES if c[0] != city])
    stages = [
        [
            Line(0, f"Guess what, we booked flights to {city}!", "book"),
            Line(1, "NO WAY. With who?"),
            Line(0, f"{cap(companion)}. We leave {leave}", "leave"),
            Line(1, "I'm so jealous"),
            Line(1, f"{other} went to {other_city} last year and won't stop talking about it"),
        ],
        [
            Line(1, r.choice(["Wait, aren't you back by now??", "Are you back?? How was it?"])),
            Line(0, f"Got back {back}!", "back"),
            Line(1, "And?!"),
            Line(0, f"Amazing. Honestly {highlight} alone made it worth it", "highlight"),
            Line(0, f"[shares a photo: {photo}]", "photo"),
            Line(1, r.choice(REACT)),
            Line(1, "I need to go to that place"),
        ],
    ]
    asks = [
        Ask("single", r.choice([f"Who did {o.name} go to {city} with?",
                                f"Who went on the {city} trip with {o.name}?"]),
            third(companion, o), ["leave"]),
        Ask("single", r.choice([f"What was {o.name}'s favourite part of {city}?",
                                f"What did {o.name} enjoy most on the trip to {city}?"]),
            highlight, ["highlight"]),
        Ask("temporal", f"When did {o.name} get back from {city}?", when("back", back_at),
            ["back"]),
        Ask("temporal", f"When did {o.name} leave for {city}?", when("leave", leave_at),
            ["leave"]),
        Ask("commonsense", f"Would {o.name} like to go back to {city} one day?",
            f"Probably yes; {o.sub} loved {highlight}", ["highlight"]),
    ]  # fmt: skip
    return Story("trip", stages, asks, ("book", city))


def job(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    old, company, new, new_co = pick(JOBS), pick(COMPANIES), pick(NEW_JOBS), pick(COMPANIES)
    rel, rel_at = r.choice(PAST)
    start, start_at = r.choice(FUTURE)
    stages = [
        [
            Line(0, "Work has been brutal lately"),
            Line(1, f"Still at {company}?", "oldco"),
            Line(0, f"Yep, still the {old} there. My manager keeps piling stuff on", "old"),
            Line(1, "Ugh, I'm sorry. You deserve better"),
        ],
        [
            Line(0, "Okay I have news but don't tell anyone"),
            Line(1, "My lips are sealed"),
            Line(0, f"I had an interview {rel}!", "interview"),
            Line(1, "WHAT. Where??"),
            Line(0, f"{new_co}. It's a {new} role", "where"),
            Line(1, "That sounds perfect for you"),
        ],
        [
            Line(0, "I GOT IT"),
            Line(1, "The job?!?!"),
            Line(0, f"Yes!! I start {start}", "start"),
            Line(1, "CONGRATS!! We're celebrating"),
            Line(0, "Handing in my notice tomorrow, wish me luck"),
        ],
    ]
    asks = [
        Ask("single", f"Where did {o.name} work before changing jobs?", company,
            ["oldco", "old"]),
        Ask("single", r.choice([f"What was {o.name}'s old job?",
                                f"What did {o.name} do at {company}?"]), old, ["old"]),
        Ask("single", f"What role did {o.name} interview for?", f"{new} at {new_co}", ["where"]),
        Ask("temporal", f"When did {o.name} have the job interview?", when("interview", rel_at),
            ["interview"]),
        Ask("temporal", f"When does {o.name} start the new job?", when("start", start_at),
            ["start"]),
        Ask("multi", f"What was {o.name}'s job before, and what is it now?",
            f"{old} at {company}; now {new} at {new_co}", ["old", "where", "start"]),
        Ask("commonsense", f"Was {o.name} happy in {o.pos} old job?",
            f"No; work was brutal and {o.pos} manager kept piling stuff on", ["old"]),
    ]  # fmt: skip
    return Story("job", stages, asks)


def family(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    sib = pick(SIBLINGS)
    kin = "sister" if sib in ("Emma", "Lily", "Grace", "Zoe", "Ruby") else "brother"
    event, doing, role, detail, photo = r.choice(FAMILY_EVENTS)
    if event == "wedding":
        role = "I'm the maid of honour" if o.sub == "she" else "I'm the best man"
    if event == "baby":
        role = "I'm going to be an aunt!!" if o.sub == "she" else "I'm going to be an uncle!!"
    rel, rel_at = r.choice(PAST)
    stages = [
        [
            Line(0, f"Big news in the family, my {kin} {sib} {doing}!", "news"),
            Line(1, r.choice(["Aww!! Tell me more", "Omg congrats to them!"])),
            Line(0, role, "role"),
            Line(1, r.choice(REACT)),
        ],
        [
            Line(0, f"The {event} was {rel}", "done"),
            Line(1, "How was it??"),
            Line(0, f"So lovely. {cap(detail)}", "detail"),
            Line(0, f"[shares a photo: {photo}]"),
            Line(1, r.choice(REACT)),
        ],
    ]
    asks = [
        Ask("single", f"What is the name of {o.name}'s {kin}?", sib, ["news"]),
        Ask("single", f"What is {o.name}'s role in {sib}'s {event}?", third(role, o),
            ["news", "role"]),
        Ask("temporal", f"When was {sib}'s {event}?", when("done", rel_at), ["done"]),
        Ask("multi", f"Which of {o.name}'s relatives had a {event}, and how did it go?",
            f"{o.pos} {kin} {sib}; {third(detail, o)}", ["news", "detail"]),
    ]  # fmt: skip
    return Story("family", stages, asks)


def book(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    title = pick([b[0] for b in BOOKS])
    author = next(b[1] for b in BOOKS if b[0] == title)
    liked = r.random() < 0.7
    verdict = (
        r.choice(["It wrecked me. In a good way.", "Best thing I've read all year"])
        if liked
        else r.choice(["Honestly? So overrated", "I forced myself through it tbh"])
    )
    stages = [[
        Line(0, f"I just finished {title}", "book"),
        Line(1, f"The {author} one? Was it good?", "author"),
        Line(0, verdict, "verdict"),
        Line(1, "Adding it to my list" if liked else "Ha, noted"),
    ]]  # fmt: skip
    asks = [
        Ask("single", f"Who wrote {title}, the book {o.name} finished?", author,
            ["book", "author"]),
        Ask("single", f"What did {o.name} think of {title}?", verdict, ["book", "verdict"]),
        Ask("commonsense", f"Would {o.name} recommend {title} to a friend?",
            "Yes, loved it" if liked else "Probably not, didn't like it", ["verdict"]),
    ]  # fmt: skip
    return Story("book", stages, asks, ("book", title))


def concert(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    band, venue = pick(BANDS), pick(VENUES)
    rel, rel_at = r.choice(FUTURE)
    stages = [
        [
            Line(0, f"I got tickets to see {band}!!", "tix"),
            Line(1, "Shut up! When?"),
            Line(0, f"{cap(rel)}, at {venue}", "when"),
            Line(1, "Take videos for me"),
        ],
        [
            Line(1, "Wait how was the concert?"),
            Line(0, "Unreal. I lost my voice screaming lol", "after"),
            Line(0, "[shares a photo: a blurry stage with purple lights]"),
            Line(1, "Iconic"),
        ],
    ]
    asks = [
        Ask("single", f"How was the {band} concert for {o.name}?",
            f"Unreal; {o.sub} lost {o.pos} voice screaming", ["after"]),
        Ask("single", f"Where is the {band} concert?", venue, ["when"]),
        Ask("temporal", f"When is {o.name}'s {band} concert?", when("when", rel_at),
            ["tix", "when"]),
        Ask("multi", f"Where did {o.name} see {band}, and how was it?",
            f"{venue}; {o.sub} lost {o.pos} voice screaming", ["when", "after"]),
    ]  # fmt: skip
    return Story("concert", stages, asks, ("tix", band))


def purchase(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    item = pick([i[0] for i in ITEMS])
    _, photo, where, price, colour = next(i for i in ITEMS if i[0] == item)
    stages = [[
        Line(0, f"[shares a photo: {photo}]", "photo"),
        Line(1, "Is that new?!"),
        Line(0, f"Yep! Got it {where} for {price}", "got"),
        Line(1, "What a steal"),
    ]]  # fmt: skip
    asks = [
        Ask("single", f"How much did {o.name} pay for the {item}?", price, ["got"]),
        Ask("single", f"What colour is {o.name}'s {item}?", colour, ["photo"]),
        Ask("single", f"Where did {o.name} get {o.pos} {item}?", third(where, o), ["got"]),
    ]
    return Story("purchase", stages, asks, ("got", item))


def move(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    area = pick([n[0] for n in NEIGHBOURHOODS])
    best = next(n[1] for n in NEIGHBOURHOODS if n[0] == area)
    rel, rel_at = r.choice(PAST)
    stages = [
        [
            Line(0, "So we're moving!!"),
            Line(1, "Wait where?!"),
            Line(0, f"{cap(area)}! We signed the lease {rel}", "lease"),
            Line(1, "Ooh I love that area"),
        ],
        [
            Line(1, "How's the new place?"),
            Line(0, f"Honestly the best part is {best}", "best"),
            Line(1, "I need to come see that place"),
            Line(0, "Yes!! Come over whenever"),
        ],
    ]
    asks = [
        Ask("single", r.choice([f"Where did {o.name} move to?",
                                f"Which neighbourhood is {o.name}'s new place in?"]), area,
            ["lease"]),
        Ask("temporal", f"When did {o.name} sign the lease?", when("lease", rel_at), ["lease"]),
        Ask("single", f"What does {o.name} like best about the new place?", best, ["best"]),
        Ask("multi", f"Where did {o.name} move and what does {o.sub} like about it?",
            f"{area}; {best}", ["lease", "best"]),
    ]  # fmt: skip
    return Story("move", stages, asks)


def injury(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    hurt, how, part = r.choice(INJURIES)
    rel, rel_at = r.choice(PAST)
    stages = [
        [
            Line(0, f"Ugh I {hurt} {rel}", "hurt"),
            Line(1, "Oh no! How?"),
            Line(0, f"{cap(how)}. Don't laugh", "how"),
            Line(1, "I would never 😂"),
        ],
        [
            Line(1, f"How's the {part}?"),
            Line(0, "Much better, the physio says two more weeks", "better"),
            Line(1, "Yay!"),
        ],
    ]
    asks = [
        Ask("single", f"How did {o.name} hurt {o.pos} {part}?", how, ["hurt", "how"]),
        Ask("temporal", f"When did {o.name} {third(hurt, o)}?", when("hurt", rel_at), ["hurt"]),
        Ask("multi", f"What injury did {o.name} have and how is it healing?",
            f"{third(hurt, o)} {how}; much better, two more weeks of physio", ["hurt", "better"]),
    ]  # fmt: skip
    return Story("injury", stages, asks)


def volunteer(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    place = pick([v[0] for v in VOLUNTEER])
    task = next(v[1] for v in VOLUNTEER if v[0] == place)
    stages = [[
        Line(0, f"I started volunteering at {place}", "place"),
        Line(1, "That's so nice! What do you do there?"),
        Line(0, f"Mostly {task}. Saturday mornings", "task"),
        Line(1, "Love that for you"),
    ]]  # fmt: skip
    asks = [
        Ask("single", f"Where does {o.name} volunteer?", place, ["place"]),
        Ask("single", f"What does {o.name} do on Saturday mornings?", task, ["place", "task"]),
        Ask("commonsense", f"Is {o.name} someone who gives time to {o.pos} community?",
            f"Yes; {o.sub} volunteers at {place}", ["place"]),
    ]  # fmt: skip
    return Story("volunteer", stages, asks)


def preference(r: random.Random, pick: Picker, o: Who, f: Who, other: str) -> Story:
    said = pick([p[0] for p in PREFERENCES])
    _, suggestion, question, answer = next(p for p in PREFERENCES if p[0] == said)
    slots = {"A": o.name, "sub": o.sub, "obj": o.obj, "pos": o.pos}
    stages = [[
        Line(1, suggestion),
        Line(0, said, "pref"),
        Line(1, r.choice(["haha fair", "Ok ok noted", "lol I forgot", "Fair enough!"])),
    ]]  # fmt: skip
    return Story(
        "pref",
        stages,
        [Ask("commonsense", question.format(**slots), answer.format(**slots), ["pref"])],
    )


Builder = Callable[[random.Random, Picker, Who, Who, str], Story]
BUILDERS: list[Builder] = [pet, hobby, trip, trip, job, family, book, book, concert, concert,
                           purchase, purchase, move,
                           injury, volunteer, preference, preference, preference]  # fmt: skip
# Questions across the stories of one kind and owner, from each story's key line.
ACROSS: dict[str, str] = {
    "trip": "Which places has {A} booked trips to?", "book": "What books has {A} finished lately?",
    "concert": "Which concerts has {A} got tickets for?",
    "purchase": "What has {A} bought second-hand recently?",
}  # fmt: skip
__all__ = ["ACROSS", "BUILDERS", "fmt"]


# -- the generator -------------------------------------------------------------------------
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
    """Fills ``{slot}`` from ``SLOTS`` (a fresh draw per occurrence) or ``names``."""

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
