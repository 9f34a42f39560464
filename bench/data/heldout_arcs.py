"""Story arcs for the held-out chat benchmark (bench/data/make_heldout_dataset.py).

An arc is one thread of a person's life told over a few sessions (a trip whose
destination changes, a new pet, a job hunt...). It returns the beats (turns placed in
sessions, some tagged) and the questions about them, whose evidence names tags. Every
question lists the key words that its evidence turns must contain.

    ctx = Ctx(random.Random(3), {"A": Person("Noor", "f"), "B": Person("Sam", "m")}, dates)
    beats, questions = ARCS[0](ctx, "A")
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Person:
    name: str
    gender: str  # "f" or "m"

    @property
    def sub(self) -> str:
        return "she" if self.gender == "f" else "he"

    @property
    def obj(self) -> str:
        return "her" if self.gender == "f" else "him"

    @property
    def pos(self) -> str:
        return "her" if self.gender == "f" else "his"


@dataclass
class Beat:
    session: int
    lines: list[tuple[str, str, str]]  # (slot "X" owner / "Y" other, text, tag or "")


@dataclass
class Q:
    kind: str
    question: str
    answer: str
    tags: list[str]
    keys: list[str]


@dataclass
class Ctx:
    rng: random.Random
    people: dict[str, Person]
    dates: list[date]
    used: set[str] = field(default_factory=set)
    friends: list[Person] = field(default_factory=list)

    def take(self, pool: Sequence[T]) -> T:
        """A pool item not yet used in this conversation (values stay distinct)."""
        fresh = [p for p in pool if repr(p) not in self.used]
        item = self.rng.choice(fresh or list(pool))
        self.used.add(repr(item))
        return item

    def sessions(self, k: int, lo: int = 1, hi: int = 4) -> list[int]:
        """k strictly increasing session indices, lo..hi sessions apart where they fit."""
        gaps = [self.rng.randint(lo, hi) for _ in range(k - 1)]
        while sum(gaps) > len(self.dates) - 1:
            gaps[gaps.index(max(gaps))] -= 1
        at = [self.rng.randint(0, len(self.dates) - 1 - sum(gaps))]
        for g in gaps:
            at.append(at[-1] + g)
        return at

    def day(self, i: int, back: int = 0) -> str:
        d = self.dates[i] - timedelta(days=back)
        return f"{d.day} {d.strftime('%B %Y')}"

    def gap(self, i: int, j: int) -> str:
        days = (self.dates[j] - self.dates[i]).days
        if days < 11:
            return f"about {days} days"
        weeks = round(days / 7)
        return f"about {weeks} weeks" if weeks < 9 else f"about {round(days / 30.4)} months"

    def friend(self) -> Person:
        p = self.take(THIRD)
        return p


THIRD = [
    Person(n, g)
    for n, g in (
        ("Ingrid", "f"),
        ("Tomasz", "m"),
        ("Abena", "f"),
        ("Ruairi", "m"),
        ("Paloma", "f"),
        ("Kenji", "m"),
        ("Marisol", "f"),
        ("Dev", "m"),
        ("Sunniva", "f"),
        ("Obi", "m"),
        ("Greta", "f"),
        ("Lior", "m"),
        ("Fen", "f"),
        ("Casimir", "m"),
        ("Tallulah", "f"),
        ("Hamid", "m"),
        ("Bettina", "f"),
        ("Arlo", "m"),
        ("Zainab", "f"),
        ("Piet", "m"),
    )
]
MONTHS = ["march", "april", "may", "june", "july", "august", "september", "october"]

Arc = Callable[[Ctx, str], tuple[list[Beat], list[Q]]]


def _o(owner: str) -> str:
    return "B" if owner == "A" else "A"


CITIES = [
    ("Lisbon", "pastel de nata", "a yellow tram on a steep hill"),
    ("Oaxaca", "mole", "a market stall piled with chillies"),
    ("Kyoto", "okonomiyaki", "a path through a bamboo forest"),
    ("Tbilisi", "khachapuri", "old balconies over a river"),
    ("Porto", "francesinha", "an iron bridge at sunset"),
    ("Hanoi", "bun cha", "a street full of scooters"),
    ("Reykjavik", "lamb soup", "a steaming blue lagoon"),
    ("Marrakech", "tagine", "a courtyard with green tiles"),
    ("Naples", "pizza fritta", "laundry hanging over a narrow alley"),
    ("Seville", "salmorejo", "orange trees in a plaza"),
    ("Montreal", "poutine", "a snowy cobbled street"),
    ("Valparaiso", "chorrillana", "painted houses on a hillside"),
    ("Istanbul", "simit", "a ferry crossing at dusk"),
    ("Edinburgh", "cullen skink", "a castle in the fog"),
    ("Copenhagen", "smorrebrod", "colourful houses along a canal"),
    ("Penang", "char kway teow", "a temple with red lanterns"),
]


def trip(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    first, second = ctx.take(CITIES), ctx.take(CITIES)
    mate = ctx.friend()
    month = ctx.rng.choice(MONTHS)
    s0, s1, s2 = ctx.sessions(3, 2, 5)
    beats = [
        Beat(
            s0,
            [
                ("X", f"guess where {mate.name} and I are going in {month}", "g0"),
                ("Y",
                 ctx.rng.choice(["ummm paris? idk", "the moon", "no idea tell me", "omg where"]),
                 "g1"),
                ("X", f"{first[0]}!!", "g2"),
                ("Y", "stoppp I'm so jealous", ""),
            ],
        ),
        Beat(
            s1,
            [
                ("X", "ok slight change of plans for the trip", ""),
                ("Y", "uh oh", ""),
                (
                    "X",
                    ctx.rng.choice(
                        [
                            f"flights got insane so we switched to {second[0]} instead",
                            f"{mate.name} found a crazy deal so now it's {second[0]}",
                            f"we're doing {second[0]} now, the other one was sold out everywhere",
                        ],
                    ),
                    "sw",
                ),
                ("Y", f"honestly {second[0]} might be even better", ""),
            ],
        ),
        Beat(
            s2,
            [
                ("X", "back!!", "bk"),
                ("X", f"[shares a photo of {second[2]}]", "ph"),
                ("Y", "ok that's unreal. where is that??", ""),
                ("X", f"{second[0]}, old town. and the {second[1]}... I had it every single day",
                 "fd"),
                ("Y", "I need to go", ""),
            ],
        ),
    ]  # fmt: skip
    w = x.name
    qs = [
        Q(
            "single",
            ctx.rng.choice(
                [
                    f"Which city did {w} actually end up visiting?",
                    f"Where did {w} and {mate.name} travel in the end?",
                ],
            ),
            second[0], ["sw"], [second[0]],
        ),
        Q("single", f"Who was {w} travelling with on that holiday?", mate.name, ["g0"],
          [mate.name]),
        Q("multi", f"What destination did {w} announce first, and which one replaced it?",
          f"{first[0]}, then {second[0]}", ["g2", "sw"], [first[0], second[0]]),
        Q("single", f"What local dish did {w} eat daily while away?", second[1], ["fd"],
          [second[1]]),
        Q("temporal", f"When did {w} return from {second[0]}?", f"shortly before {ctx.day(s2)}",
          ["bk", "fd"], [second[0]]),
        Q("temporal", f"How long after revealing the trip did {w} change the destination?",
          ctx.gap(s0, s1), ["g2", "sw"], [second[0]]),
    ]  # fmt: skip
    return beats, qs


PETS = [
    ("dog", "golden retriever", "asleep in a laundry basket"),
    ("dog", "corgi", "wearing a tiny bandana"),
    ("cat", "tabby", "curled up in a shoebox"),
    ("cat", "maine coon", "sitting on a keyboard"),
    ("rabbit", "lop-eared", "eating a carrot on a rug"),
    ("dog", "greyhound", "on a beach with its ears flapping"),
    ("dog", "dachshund", "stuck halfway into a sleeve"),
    ("cat", "siamese", "glaring from the top of a fridge"),
    ("dog", "border collie", "mid-jump after a frisbee"),
    ("cat", "ragdoll", "flopped on a windowsill"),
]
PET_NAMES = [
    "Biscuit", "Mochi", "Pickle", "Waffles", "Juniper", "Turnip", "Pesto", "Noodle", "Clementine",
    "Bramble", "Kiwi", "Dumpling", "Fig", "Pretzel", "Olive", "Sprout",
]  # fmt: skip
CHEWED = [
    "headphones", "passport", "favourite sneakers", "tv remote", "charger cable", "sunglasses",
    "library book", "wallet",
]  # fmt: skip


def pet(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    kind, breed, pose = ctx.take(PETS)
    name, thing = ctx.take(PET_NAMES), ctx.take(CHEWED)
    sex = ctx.rng.choice(["she", "he"])
    kilos = ctx.rng.randint(4, 19)
    s0, s1, s2 = ctx.sessions(3, 1, 5)
    beats = [
        Beat(
            s0,
            [
                ("X", f"[shares a photo of a {breed} {kind} {pose}]", "ph"),
                ("Y", "WAIT. whose is that", ""),
                (
                    "X",
                    ctx.rng.choice(
                        ["mine!!! we brought {} home yesterday", "ours!! picked {} up yesterday"]
                    ).format("her" if sex == "she" else "him"),
                    "got",
                ),
                ("Y", "name??", ""),
                ("X", name, "nm"),
                ("Y", "perfect. I'm obsessed", ""),
            ],
        ),
        Beat(
            s1,
            [
                ("X", f"{name} destroyed my {thing}", "ch"),
                ("Y", "nooo", ""),
                ("X", f"and {sex} looked so proud about it", ""),
            ],
        ),
        Beat(
            s2,
            [
                ("Y", f"how's the little {kind}?", ""),
                ("X", f"not little anymore lol, {kilos} kilos at the vet today", "vt"),
            ],
        ),
    ]
    w = x.name
    qs = [
        Q("single",
          ctx.rng.choice([f"What is {w}'s {kind} called?", f"What did {w} name the new {kind}?"]),
          name, ["ph", "nm"], [name]),
        Q("single", f"What breed is {name}?", breed, ["ph", "nm"], [breed]),
        Q("single", f"What belonging of {w}'s did {name} ruin?", thing, ["ch"], [thing]),
        Q("temporal", f"When did {w} adopt {name}?", f"the day before {ctx.day(s0)}",
          ["ph", "got", "nm"], [name]),
        Q("multi", f"How much did {w}'s {breed} weigh at the vet, and what had it chewed earlier?",
          f"{kilos} kg; the {thing}", ["ch", "vt"], [thing, str(kilos)]),
    ]  # fmt: skip
    if kind == "dog":
        qs.append(
            Q("commonsense", f"Does {w} probably need to take a pet out for walks every day?",
              f"yes, {w} has a {breed} dog", ["ph"], [breed]),
        )  # fmt: skip
    else:
        qs.append(
            Q(
                "commonsense",
                f"If {w} went away for a week, would someone need to mind an animal"
                f" at {x.pos} home?",
                f"yes, {name} the {kind}",
                ["ph", "nm"],
                [name],
            )
        )
    return beats, qs


COMPANIES = [
    "Halden Labs", "Orchard Freight", "Bluefin Analytics", "Corvid Games", "Tamarack Health",
    "Pinewell Energy", "Lumen Bikes", "Quarry Studio", "Northgate Insurance", "Saltmarsh Media",
    "Cobalt Robotics", "Meridian Foods", "Fernhill Architects", "Ostrava Logistics",
]  # fmt: skip
ROLES = [
    "data analyst", "ux researcher", "project coordinator", "product designer", "qa engineer",
    "account manager", "grant writer", "supply chain planner", "copy editor", "lab technician",
]  # fmt: skip


def job(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    company, role, boss = ctx.take(COMPANIES), ctx.take(ROLES), ctx.friend()
    s0, s1, s2 = ctx.sessions(3, 1, 4)
    beats = [
        Beat(
            s0,
            [
                ("X", "had an interview today. don't jinx it", ""),
                ("Y", "WHERE", ""),
                (
                    "X",
                    ctx.rng.choice(
                        [f"{company}. for a {role} position", f"{company}, they need a {role}"],
                    ),
                    "iv",
                ),
                ("Y", "you'll smash it", ""),
            ],
        ),
        Beat(
            s1,
            [
                ("X", "I GOT IT", "of0"),
                ("Y", f"the {role} job?? no way!!!", "of1"),
                ("X", "yesss. they called this morning", "of2"),
            ],
        ),
        Beat(
            s2,
            [
                ("X", f"first week done. my manager {boss.name} is intense but I like {boss.obj}",
                 "bs"),
                ("Y", "intense how", ""),
                ("X", f"like {boss.sub} has a spreadsheet for spreadsheets. but {boss.sub}'s fair",
                 ""),
            ],
        ),
    ]  # fmt: skip
    w = x.name
    qs = [
        Q("single",
          ctx.rng.choice([f"Which employer hired {w}?", f"Where does {w} work since the new job?"]),
          company, ["iv", "of0"], [company]),
        Q("single", f"What role did {w} interview for?", role, ["iv"], [role]),
        Q("single", f"Who is {w}'s boss at {company}?", boss.name, ["bs"], [boss.name]),
        Q("temporal", f"When did {w} hear that {x.sub} got the offer?", ctx.day(s1),
          ["of0", "of1", "of2"], [role]),
        Q("temporal", f"How long after the interview did {w} start work?", ctx.gap(s0, s2),
          ["iv", "bs"], [company, boss.name]),
        Q("multi", f"What company did {w} join and who manages {x.obj} there?",
          f"{company}; {boss.name}", ["iv", "bs"], [company, boss.name]),
    ]  # fmt: skip
    return beats, qs


HOBBIES = [
    ("bouldering", "a chalk bag", "sent my first V4", "a weekend climbing trip", "climbing"),
    ("pottery", "a set of clay tools", "made a mug that doesn't leak", "a ceramics market", "clay"),
    ("sourdough", "a proofing basket", "got a loaf with a real ear", "a bread-baking class",
     "bread"),
    ("trail running", "proper trail shoes", "finished a half marathon", "a 10k through the hills",
     "running"),
    ("birdwatching", "binoculars", "spotted a kingfisher", "a dawn walk at a nature reserve",
     "birds"),
    ("knitting", "bamboo needles", "finished a whole sweater", "a yarn festival", "yarn"),
    ("chess", "a wooden board", "beat a 1600-rated player", "a local chess tournament", "chess"),
    ("film photography", "an old Pentax", "developed my first roll", "a darkroom workshop",
     "camera"),
    ("sea swimming", "a wetsuit", "swam to the buoy and back", "a cold-water swim at dawn", "swim"),
    ("woodworking", "a chisel set", "built a little stool", "a furniture-making course", "wood"),
]  # fmt: skip


def hobby(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    name, gear, feat, like, _ = ctx.take(HOBBIES)
    pal = ctx.friend()
    s0, s1 = ctx.sessions(2, 2, 6)
    beats = [
        Beat(
            s0,
            [
                ("X", f"ok new obsession: {name}", "st"),
                ("Y", "since when lol", ""),
                ("X", f"since {pal.name} dragged me along last week. already bought {gear}", "by"),
                ("Y", ctx.rng.choice(["of course you did", "classic", "love this for you"]), ""),
            ],
        ),
        Beat(s1, [("X", f"guess who {feat}", "ft"), ("Y", "NO WAY. proud of u", "")]),
    ]
    w = x.name
    qs = [
        Q("single", f"What pastime did {w} get into?", name, ["st"], [name]),
        Q("single", f"Who introduced {w} to {name}?", pal.name, ["by"], [pal.name]),
        Q("multi", f"What did {w} buy when starting {name}, and what milestone came later?",
          f"{gear}; {feat}", ["by", "ft"], [gear, feat]),
        Q("temporal", f"When did {w} share {x.pos} big {name} achievement?", ctx.day(s1), ["ft"],
          [feat]),
        Q("commonsense", f"Would {w} probably be up for {like}?", f"yes, {x.sub} took up {name}",
          ["st"], [name]),
    ]  # fmt: skip
    return beats, qs


RELATIVES = ["sister", "cousin", "sister-in-law", "best friend"]
BABIES = [
    ("girl", "Wren"),
    ("boy", "Otto"),
    ("girl", "Maren"),
    ("boy", "Felix"),
    ("girl", "Ada"),
    ("boy", "Rafael"),
    ("girl", "Nell"),
    ("boy", "Ezra"),
    ("girl", "Iris"),
    ("boy", "Caspian"),
]
NAMESAKES = ["our grandma", "a great-uncle", "a song they love", "the town where they met"]


def baby(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    rel = ctx.rng.choice(RELATIVES)
    kin = ctx.take([p for p in THIRD if p.gender == "f"])
    sex, child = ctx.take(BABIES)
    after = ctx.rng.choice(NAMESAKES)
    s0, s1 = ctx.sessions(2, 3, 7)
    beats = [
        Beat(
            s0,
            [
                ("X", f"my {rel} {kin.name} is pregnant!!", "pg"),
                ("Y", f"omg!!! tell {kin.obj} congrats", ""),
                ("X", "I'm gonna be the best aunt/uncle ever", ""),
            ],
        ),
        Beat(
            s1,
            [
                ("X", f"{kin.name} had the baby last night! a little {sex}", "bn"),
                ("Y", "name???", ""),
                ("X", f"{child}. after {after}", "nm"),
                ("Y", "crying. that's beautiful", ""),
            ],
        ),
    ]
    w = x.name
    qs = [
        Q("single", f"What did {kin.name} call {kin.pos} newborn?", child, ["bn", "nm"], [child]),
        Q("single", f"Who or what was {child} named after?", after, ["nm"], [after]),
        Q("temporal", f"When was {kin.name}'s baby born?", f"the night before {ctx.day(s1)}",
          ["bn"], [kin.name]),
        Q("multi", f"How is {kin.name} related to {w}, and is the baby a boy or a girl?",
          f"{rel}; a {sex}", ["pg", "bn"], [rel, sex]),
        Q("temporal", f"How long after announcing the pregnancy did {w} share the birth news?",
          ctx.gap(s0, s1), ["pg", "bn"], [kin.name]),
    ]  # fmt: skip
    return beats, qs


INJURIES = [
    ("ankle", "stepping off a curb wrong", "football"),
    ("wrist", "catching myself on ice", "climbing"),
    ("knee", "tripping over the dog's leash", "running"),
    ("shoulder", "moving a couch up stairs", "swimming"),
    ("back", "lifting a box of books", "tennis"),
    ("thumb", "closing it in a car door", "guitar"),
]


def injury(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    part, how, sport = ctx.take(INJURIES)
    weeks = ctx.rng.randint(3, 8)
    s0, s1 = ctx.sessions(2, 1, 3)
    beats = [
        Beat(
            s0,
            [
                ("X", "so I did something really dumb", ""),
                ("Y", "oh no what", ""),
                ("X", ctx.rng.choice([f"hurt my {part} {how}", f"messed up my {part} {how}"]),
                 "in"),
                ("Y", "ouch. ice it!!", ""),
            ],
        ),
        Beat(
            s1,
            [
                ("Y", f"hows the {part}", "q"),
                ("X", f"physio says {weeks} more weeks, no {sport}", "ph"),
                ("Y", "ugh sorry", ""),
            ],
        ),
    ]  # fmt: skip
    w = x.name
    qs = [
        Q("single", f"Which body part did {w} injure?", part, ["in"], [part]),
        Q("single", f"How did {w} get hurt?", how, ["in"], [how]),
        Q("single", f"How many more weeks did the physiotherapist tell {w} to rest?",
          f"{weeks} weeks", ["q", "ph"], [str(weeks)]),
        Q("temporal", f"When did {w} get injured?", ctx.day(s0), ["in"], [part]),
        Q("commonsense", f"Was {w} cleared to get back to {sport} right after the physio visit?",
          f"no, {weeks} more weeks without {sport}", ["ph"], [sport]),
    ]  # fmt: skip
    return beats, qs


ITEMS = ["bike", "sofa", "raincoat", "rug", "kettle", "backpack", "desk lamp", "armchair"]
COLOURS = ["green", "blue", "mustard", "grey", "red", "cream", "navy", "orange", "pink", "black"]


def purchase(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x, y = ctx.people[owner], ctx.people[_o(owner)]
    item = ctx.take(ITEMS)
    c1, c2 = ctx.rng.sample(COLOURS, 2)
    s0, s1 = ctx.sessions(2, 1, 3)
    beats = [
        Beat(
            s0,
            [
                ("X", f"[shares a photo of two {item}s side by side, a {c1} one and a {c2} one]",
                 "ph"),
                ("X", "help me choose", ""),
                ("Y", f"the {c1} one obviously", "rc"),
                ("X", "hmm", ""),
            ],
        ),
        Beat(
            s1,
            [
                ("Y", "so which one did you go for", "q"),
                ("X", f"the {c2} one. sorry", "fn"),
                ("Y", "betrayal", ""),
            ],
        ),
    ]  # fmt: skip
    w = x.name
    qs = [
        Q("single", f"What colour {item} did {w} finally buy?", c2, ["ph", "q", "fn"], [c2, item]),
        Q("single", f"Which colour did {y.name} advise for {w}'s {item}?", c1, ["ph", "rc"],
          [c1, item]),
        Q("commonsense", f"Did {w} follow {y.name}'s advice about the {item}?",
          f"no, {x.sub} chose {c2} over {c1}", ["rc", "fn"], [c1, c2]),
    ]  # fmt: skip
    return beats, qs


SHOWS = [
    ("The Lantern Keepers", "a lighthouse mystery"),
    ("Saltwater Kings", "a fishing family drama"),
    ("Half Moon Bakery", "a baking comedy"),
    ("Orbit Nine", "a space station thriller"),
    ("The Quiet Ledger", "an accounting heist"),
    ("Glasshouse", "a botanist detective show"),
    ("Dust and Thunder", "a rodeo western"),
    ("Midnight Cartographers", "a map-making fantasy"),
]
PLATFORMS = ["netflix", "hbo", "apple tv", "prime", "hulu", "the bbc app"]


def show(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x, y = ctx.people[owner], ctx.people[_o(owner)]
    title, blurb = ctx.take(SHOWS)
    where = ctx.rng.choice(PLATFORMS)
    s0, s1 = ctx.sessions(2, 2, 6)
    beats = [
        Beat(
            s0,
            [
                ("Y", f"you HAVE to watch {title}", "rc"),
                ("X", "what's it about", ""),
                ("Y", f"{blurb}. trust me. it's on {where}", "pl"),
            ],
        ),
        Beat(
            s1,
            [
                ("X", "ok I finally finished it", "fn0"),
                ("Y", f"{title}?? the ending!!", "fn1"),
                ("X", "I screamed", ""),
            ],
        ),
    ]
    w, v = x.name, y.name
    qs = [
        Q("single", f"Which series did {v} insist {w} should watch?", title, ["rc"], [title]),
        Q("single", f"Where can you stream the show {v} recommended?", where, ["pl"], [where]),
        Q("multi", f"Did {w} end up watching what {v} suggested?",
          f"yes, {x.sub} finished {title}", ["rc", "fn0", "fn1"], [title]),
        Q("temporal", f"How long did {w} take to finish {title} after hearing about it?",
          ctx.gap(s0, s1), ["rc", "fn1"], [title]),
    ]  # fmt: skip
    return beats, qs


BANDS = [
    ("Velvet Hour", "Paper Lungs"),
    ("Gannet Coast", "Low Tide"),
    ("Miro Sands", "Glass Orchard"),
    ("Cold Harbour", "Tin Roof"),
    ("Juniper Static", "Kite Season"),
    ("Ola Verde", "Corazon Lento"),
]


def concert(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    band, song = ctx.take(BANDS)
    mate = ctx.friend()
    s0, s1 = ctx.sessions(2, 2, 6)
    beats = [
        Beat(s0, [("X", f"got tickets for {band}!!!", "tk"), ("Y", "jealousss", "")]),
        Beat(
            s1,
            [
                ("X", "my ears are still ringing from last night", "gig0"),
                ("Y", f"the {band} show?? how was it", "gig1"),
                ("X", "[shares a blurry photo of a stage lit up purple]", ""),
                ("Y", "who'd you go with", ""),
                ("X", f"{mate.name}. {mate.sub} cried during {song} lol", "mt"),
            ],
        ),
    ]
    w = x.name
    qs = [
        Q("single", f"Who went to see {band} with {w}?", mate.name, ["mt"], [mate.name]),
        Q("single", f"Which song made {mate.name} tear up?", song, ["mt"], [song]),
        Q("temporal", f"When did {w} see {band} live?", f"the night before {ctx.day(s1)}",
          ["gig0", "gig1"], [band]),
        Q("temporal", f"How long before the {band} gig did {w} get tickets?", ctx.gap(s0, s1),
          ["tk", "gig1"], [band]),
    ]  # fmt: skip
    return beats, qs


ALLERGIES = [
    ("peanuts", "satay skewers"),
    ("shellfish", "a prawn paella"),
    ("dairy", "a cheese fondue"),
    ("gluten", "fresh egg pasta"),
    ("sesame", "a tahini salad"),
    ("eggs", "a lemon meringue pie"),
]


def allergy(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x, y = ctx.people[owner], ctx.people[_o(owner)]
    food, dish = ctx.take(ALLERGIES)
    (s0,) = ctx.sessions(1)
    beats = [
        Beat(
            s0,
            [
                ("Y", "I'm thinking of cooking for everyone next month", ""),
                ("X", f"yay!! just remember I can't have {food}", "al"),
                ("Y", "right right, noted", ""),
            ],
        )
    ]
    w = x.name
    qs = [
        Q("single", f"What food must {w} avoid?", food, ["al"], [food]),
        Q("commonsense", f"Would {dish} be a safe thing for {y.name} to serve {w}?",
          f"no, {w} cannot eat {food}", ["al"], [food]),
    ]  # fmt: skip
    return beats, qs


STREETS = [
    ("Linden Street", "a huge balcony"),
    ("Cooper Lane", "a dishwasher"),
    ("Marsh Road", "a garden"),
    ("Bell Avenue", "two bathrooms"),
    ("Hollis Street", "a fireplace"),
    ("Wren Court", "a rooftop"),
    ("Ashby Road", "in-unit laundry"),
    ("Fulton Row", "huge windows"),
]


def move(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    (st1, f1), (st2, f2) = ctx.take(STREETS), ctx.take(STREETS)
    s0, s1, s2 = ctx.sessions(3, 1, 4)
    beats = [
        Beat(
            s0,
            [
                ("X", "saw two flats today", ""),
                ("X", f"one on {st1} with {f1}, and one on {st2}, tiny but it has {f2}", "sa"),
                ("Y", f"ooh {f1} though", ""),
            ],
        ),
        Beat(s1, [("X", f"we signed for the {st2} one!!", "sg"), ("Y", "YAY. congrats!!", "")]),
        Beat(
            s2,
            [
                ("X", "[shares a photo of a hallway stacked with cardboard boxes]", ""),
                ("X", "officially moved in. everything hurts", "mv"),
                ("Y", "welcome home!!", ""),
            ],
        ),
    ]
    w = x.name
    qs = [
        Q("single", f"On which street is {w}'s new apartment?", st2, ["sg"], [st2]),
        Q("multi", f"What did the place {w} turned down have that the chosen one lacked?", f1,
          ["sa", "sg"], [f1, st2]),
        Q("temporal", f"When did {w} finish moving into the new flat?", f"around {ctx.day(s2)}",
          ["mv"], ["moved"]),
        Q("temporal", f"How long was it from signing the lease to moving in for {w}?",
          ctx.gap(s1, s2), ["sg", "mv"], [st2, "moved"]),
    ]  # fmt: skip
    return beats, qs


LANGS = [
    ("Portuguese", "Brazil"),
    ("Japanese", "Japan"),
    ("Korean", "Korea"),
    ("Italian", "Italy"),
    ("Greek", "Greece"),
    ("Turkish", "Turkey"),
    ("Dutch", "the Netherlands"),
    ("Polish", "Poland"),
]


def language(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    lang, country = ctx.take(LANGS)
    tutor = ctx.friend()
    s0, s1 = ctx.sessions(2, 3, 7)
    beats = [
        Beat(
            s0,
            [
                ("X", f"signed up for {lang} lessons lol", "ls"),
                ("Y", "why", ""),
                ("X", f"midlife crisis. my teacher {tutor.name} is so patient with me", "tt"),
            ],
        ),
        Beat(
            s1,
            [
                ("X", f"had a whole 10 minute conversation in {lang} today", "cv"),
                ("Y", "look at youuu", ""),
            ],
        ),
    ]
    w = x.name
    qs = [
        Q("single", f"Which language has {w} been studying?", lang, ["ls"], [lang]),
        Q("single", f"Who teaches {w} {lang}?", tutor.name, ["tt"], [tutor.name]),
        Q("commonsense", f"Could {w} probably manage some small talk on a visit to {country}?",
          f"yes, {x.sub} has been learning {lang}", ["ls", "cv"], [lang]),
        Q("temporal", f"How long after starting lessons could {w} hold a ten-minute chat?",
          ctx.gap(s0, s1), ["ls", "cv"], [lang]),
    ]  # fmt: skip
    return beats, qs


VENUES = [
    "a karaoke bar", "the bowling alley", "a rooftop bar", "a little tapas place", "the lake",
    "a board game cafe", "an escape room",
]  # fmt: skip
CAKES = ["lemon drizzle", "carrot", "black forest", "matcha", "tiramisu", "red velvet"]


def party(ctx: Ctx, owner: str) -> tuple[list[Beat], list[Q]]:
    x = ctx.people[owner]
    v1, v2 = ctx.rng.sample(VENUES, 2)
    cake = ctx.take(CAKES)
    s0, s1, s2 = ctx.sessions(3, 1, 3)
    beats = [
        Beat(s0, [("X", f"thinking of doing my birthday at {v1}", "p0"), ("Y", "I'm in", "")]),
        Beat(
            s1,
            [
                ("X", f"update: {v1} is booked out, so {v2} it is", "p1"),
                ("Y", "even better tbh", ""),
            ],
        ),
        Beat(
            s2,
            [
                ("Y", "still full from your birthday", ""),
                ("X", f"the {cake} cake was elite", "ck"),
                ("Y", "it really was", ""),
            ],
        ),
    ]
    w = x.name
    qs = [
        Q("single", f"Where did {w} celebrate {x.pos} birthday in the end?", v2, ["p1"], [v2]),
        Q("multi", f"Where had {w} first wanted the birthday, and why did it move?",
          f"{v1}; it was fully booked", ["p0", "p1"], [v1, "booked"]),
        Q("single", f"What flavour was the cake at {w}'s birthday?", cake, ["ck"], [cake]),
        Q("temporal", f"Roughly when was {w}'s birthday get-together?",
          f"shortly before {ctx.day(s2)}", ["p1", "ck"], [cake]),
    ]  # fmt: skip
    return beats, qs


ARCS: list[Arc] = [
    trip, pet, job, hobby, baby, injury, purchase, show, concert, allergy, move, language, party,
]  # fmt: skip
