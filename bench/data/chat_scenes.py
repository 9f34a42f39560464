"""Story templates for bench/data/make_chat_dataset.py: the facts of a conversation.

A story belongs to one friend (the owner, ``0`` in its lines; the other friend is ``1``)
and has one or more stages; the generator puts each stage into a later session than the
one before, so a story evolves over weeks ("I signed up for pottery" ... "my first bowl"
... "I sold a vase at the fair"). Lines that carry an answer get a tag; the questions name
their evidence by these tags and the generator turns them into turn ids. Answers that
depend on time (``yesterday``, ``next Tuesday``) are functions of the session date of a
tagged line, so they are computed after the sessions are dated.

The wording follows real chat on purpose: facts are often split over two turns ("That
sounds great! When?" / "Next Tuesday"), later stages say "it", "she" or "that place"
instead of the name, and photos are shared as ``[shares a photo: caption]`` turns.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta

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


DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

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


def month_of(d: date) -> str:
    return f"{d:%B %Y}"


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
