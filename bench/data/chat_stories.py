"""Story builders for bench/data/make_chat_dataset.py (see chat_scenes.py for the shapes).

Each builder takes the random generator, a :class:`Picker`, the owner and the friend, and
returns a :class:`Story`: its stages (lists of lines, one stage per session, in order) and
the questions it answers. Questions mix the owner's own words ("pottery class") with
everyday paraphrase ("What did Gina make ..."), the way people ask about a chat.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from chat_scenes import (
    BANDS,
    BOOKS,
    CHEWED,
    CITIES,
    COMPANIES,
    COMPANIONS,
    FAMILY_EVENTS,
    FUTURE,
    HOBBIES,
    INJURIES,
    ITEMS,
    JOBS,
    NEIGHBOURHOODS,
    NEW_JOBS,
    PAST,
    PET_NAMES,
    PETS,
    PREFERENCES,
    SIBLINGS,
    TEACHERS,
    VENUES,
    VET,
    VOLUNTEER,
    Ask,
    Line,
    Picker,
    Story,
    Who,
    cap,
    fmt,
    when,
)

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
