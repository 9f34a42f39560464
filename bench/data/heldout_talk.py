"""Small talk for the held-out chat benchmark (bench/data/make_heldout_dataset.py).

Openers, reactions, idle exchanges, rambling turns, closers and a typo pass. The filler
carries no facts that any question asks about; it is there to make retrieval hard.

    rng = random.Random(1)
    lines = exchange(rng, "siblings")   # [("A", "..."), ("B", "..."), ...]
"""

from __future__ import annotations

import random

Line = tuple[str, str]  # (speaker slot "A"/"B", text)

OPENERS: list[list[str]] = [
    ["heyyy", "hiii how was ur week"],
    ["you alive?", "barely lol", "same honestly"],
    ["ok I have news", "go go go"],
    ["morning!!", "it is 11am but ok. morning"],
    ["helloooo stranger", "I know I know I'm the worst at replying"],
    ["what are you up to", "absolutely nothing, on the couch. u?", "same"],
    ["sorry I vanished", "no worries!! life happens"],
    ["yo", "yoo"],
    ["are you free to chat for a sec", "yep whats up"],
    ["guess who just woke up from a 3 hour nap", "lmao iconic"],
    ["it's been forever", "it really has. catch me up"],
    ["happy friday!!", "finallyyy"],
]

REACTIONS = [
    "haha no way", "omg", "that's awesome!!", "lol", "wait what", "nooo", "ugh same", "hahaha",
    "yesss", "fair", "true true", "ok that's amazing", "dying", "ha", "mood", "oof", "stoppp",
    "love that", "wow", "no!!", "lmaooo", "aw", "honestly same", "so good", "yikes", "hmm",
    "i mean... fair", "amazing", "omg yes", "nice nice", "ok but why", "hahah classic", "cute",
    "rip", "ok respect", "thats wild",
]  # fmt: skip

SMALL: list[list[str]] = [
    [
        "it's been raining for like 6 days straight", "ugh here too",
        "I forgot what the sun looks like",
    ],
    ["I've had 3 coffees and it's not even noon", "that's a cry for help", "it's a lifestyle"],
    [
        "did u see the thing about the bridge closing", "no?? which bridge",
        "the old one downtown, for repairs apparently", "ugh traffic is gonna be hell",
    ],
    ["couldn't sleep at all last night", "noo why", "neighbours were doing karaoke till 2"],
    ["what are you making for dinner", "cereal probably", "a classic"],
    ["my phone screen cracked again", "how", "dropped it in the parking lot. face down obviously"],
    [
        "the grocery store moved everything around", "why do they DO that",
        "took me 20 min to find eggs",
    ],
    [
        "ok random but do you still have that yellow umbrella", "lol yes why",
        "no reason I just think about it sometimes",
    ],
    ["I think I'm getting a cold", "drink tea and go to bed", "yes mom"],
    [
        "is it weird to eat cake for breakfast", "no. it's basically a muffin",
        "exactly what I told myself",
    ],
    ["the wifi at my place keeps dying", "turn it off and on again", "I have done that 40 times"],
    ["it's so hot today", "I'm melting", "sitting in front of the fan like a dog"],
    [
        "I started three books and finished none", "that's the most you thing ever",
        "rude but accurate",
    ],
    [
        "do you ever just stare at the fridge", "every night",
        "nothing in there changes but I keep checking",
    ],
    ["someone parked in my spot AGAIN", "leave a note", "I did. a very passive aggressive one"],
    ["my plant is dying", "which one", "the one you said was impossible to kill"],
    ["ok I need a new podcast", "what do u like", "true crime but not too scary"],
    ["I accidentally replied all at work", "nooo what did you say", "just 'lol' but still"],
    ["I bought a standing desk", "do you stand", "no. I sit at it"],
    [
        "why is everything so expensive now", "don't get me started",
        "paid 7 dollars for a sandwich. a sad one",
    ],
]  # fmt: skip

RAMBLE_BITS = [
    "so basically the whole morning was a mess", "I missed the bus because I went back for my keys",
    "and then of course it started pouring", "and I had no umbrella obviously",
    "anyway I get to the office and the elevator is broken",
    "so I walk up six floors like an idiot", "and the meeting got moved anyway",
    "like nobody told me", "then at lunch the place was out of the soup I wanted",
    "so I just had crackers honestly", "and by 4pm I was ready to lie down on the floor",
    "but then the evening was actually nice", "I called my aunt and we talked for like an hour",
    "she's doing ok, her knee is better", "and I made pasta and watched something dumb",
    "so yeah not a terrible day overall i guess",
    "also I think I left the oven light on this morning", "which is fine, it's just a light",
]  # fmt: skip

RELATION_TALK: dict[str, list[list[str]]] = {
    "siblings": [
        ["did mom call you too", "yes. twice", "she wants us both there on sunday"],
        ["dad sent me a 4 minute voice memo", "about what", "the gutters. for 4 minutes"],
        ["remember when we used to fight over the front seat", "I still won every time", "lies"],
    ],
    "coworkers": [
        ["that standup was 45 minutes", "stand DOWN more like", "lol"],
        [
            "did you see the new expense form", "it has 14 fields now",
            "I'm just not going to expense things anymore",
        ],
        ["the printer on 3 is jammed again", "it's haunted", "we should name it"],
    ],
    "old classmates": [
        [
            "saw our old chem teacher at the store", "mr okafor?? is he still alive",
            "very much, buying 12 limes",
        ],
        ["the reunion group chat is unhinged", "I muted it years ago", "smart"],
        [
            "do u remember the field trip where the bus broke down", "the cow incident",
            "THE COW INCIDENT",
        ],
    ],
    "couple": [
        ["did you take the chicken out of the freezer", "...define take out", "so no"],
        ["we're out of dish soap", "adding it to the list", "the list is 40 items long"],
        [
            "your mom texted me about sunday", "why does she text you and not me",
            "she likes me more",
        ],
    ],
    "neighbours": [
        [
            "your package ended up on my porch again", "omg sorry!! coming over",
            "no rush I'm home all day",
        ],
        ["the guy at 14 is mowing at 7am", "every saturday", "I'm going to lose it"],
        ["the street party is back on", "oh fun, same day as last year?", "I think so"],
    ],
    "mentor": [
        ["how's the draft coming", "slowly. chapter 2 is a mess", "that's normal, send it anyway"],
        ["I read the paper you sent", "and?", "I understood maybe half of it"],
        ["office hours moved to thursdays", "ok noted", "same room though"],
    ],
    "cousins": [
        ["grandma asked if you're eating enough", "tell her yes", "she won't believe me"],
        ["are u coming to the thanksgiving thing", "unclear", "you have to, I can't do it alone"],
        ["uncle ray posted another conspiracy video", "I blocked him in 2019", "wise"],
    ],
    "roommates past": [
        [
            "found a fork of yours in my drawer from 2018", "I KNEW I was missing one",
            "it's been well cared for",
        ],
        [
            "our old landlord is selling the building", "good riddance",
            "the radiator screams in my nightmares still",
        ],
        ["remember the mouse we named gerald", "rip gerald", "he lived a full life in our walls"],
    ],
    "gym buddies": [
        ["leg day tomorrow?", "ugh fine", "6:30 sharp"],
        ["my quads are still dead from monday", "stretch!!", "I'll stretch when I'm dead"],
        [
            "the gym got new machines", "the fancy ones?",
            "yeah with screens. nobody knows how to use them",
        ],
    ],
    "friends": [
        ["we need to do a movie night soon", "yes please", "you pick this time"],
        ["I miss our tuesday dinners", "let's bring them back", "deal"],
    ],
}  # fmt: skip

CLOSERS: list[list[str]] = [
    ["ok gotta run", "byeee"],
    ["night!", "night x"],
    ["ok I'm falling asleep mid text", "go to bed lol", "gn"],
    ["talk soon!!", "yes! miss u"],
    ["ok my food is here", "enjoy!!"],
    ["ttyl", "ttyl :)"],
    ["gonna go cook", "ok have fun", "👍"],
]


def typo(text: str, rng: random.Random, keep: frozenset[str] = frozenset()) -> str:
    """Casual noise: lowercase, dropped apostrophes, a swapped letter pair, 'u' for 'you'.
    Words in ``keep`` (lowercased) are left as they are."""
    words = text.split(" ")
    if rng.random() < 0.45:
        words = [w if w.lower().strip(".,!?") in keep else w.lower() for w in words]
    out = []
    for w in words:
        bare = w.lower().strip(".,!?")
        if bare in keep or w.startswith("["):
            out.append(w)
            continue
        if bare == "you" and rng.random() < 0.25:
            w = w.replace("you", "u").replace("You", "U")
        elif "'" in w and rng.random() < 0.4:
            w = w.replace("'", "")
        elif len(w) > 4 and w.isalpha() and rng.random() < 0.04:
            i = rng.randrange(1, len(w) - 2)
            w = w[:i] + w[i + 1] + w[i] + w[i + 2 :]
        out.append(w)
    return " ".join(out)


def _speakers(lines: list[str], rng: random.Random) -> list[Line]:
    first = rng.choice("AB")
    second = "B" if first == "A" else "A"
    return [(first if i % 2 == 0 else second, t) for i, t in enumerate(lines)]


def opener(rng: random.Random) -> list[Line]:
    return _speakers(rng.choice(OPENERS), rng)


def closer(rng: random.Random) -> list[Line]:
    return _speakers(rng.choice(CLOSERS), rng)


def exchange(rng: random.Random, relation: str) -> list[Line]:
    """One idle exchange: a small-talk snippet, a rambling turn, or a bare reaction."""
    roll = rng.random()
    if roll < 0.15:
        who = rng.choice("AB")
        n = rng.randint(4, 8)
        start = rng.randrange(0, len(RAMBLE_BITS) - n)
        text = ", ".join(RAMBLE_BITS[start : start + n])
        other = "B" if who == "A" else "A"
        return [(who, text), (other, rng.choice(REACTIONS))]
    pool = RELATION_TALK.get(relation, RELATION_TALK["friends"])
    snippet = rng.choice(pool) if roll < 0.4 else rng.choice(SMALL)
    lines = _speakers(snippet, rng)
    if rng.random() < 0.6:
        last = lines[-1][0]
        lines.append(("B" if last == "A" else "A", rng.choice(REACTIONS)))
    return lines


def reaction(rng: random.Random) -> str:
    return rng.choice(REACTIONS)
