"""Writes bench/data/recall_dataset.json: hand-written multi-session conversations and the
questions bench/recall.py asks of them.

    python bench/data/make_recall_dataset.py          # rewrites the JSON next to this file

The dialogue below is written by hand (six people, four dated sessions each); this script
only numbers the turns, dates them and checks the questions:

- every answer reference names a turn that exists;
- ``single`` questions have one answer turn, ``multi`` questions two or more, and both
  share at least one content word (after stemming) with an answer turn;
- ``paraphrase`` questions share no content word with any of their answer turns, as SQLite's
  own FTS5 porter tokenizer sees it (the tokenizer the keyword ranker uses), so a keyword
  search cannot find them by their words.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from pmm.text.words import search_terms  # noqa: E402


@dataclass
class Session:
    date: str
    turns: list[str]


@dataclass
class Person:
    id: str
    name: str
    sessions: list[Session]
    questions: list[tuple[str, str, list[str], str]] = field(default_factory=list)
    """(type, question, answer refs like "s2t05", short answer)."""


MAYA = Person(
    "maya", "Maya",
    [
        Session("2024-01-14T21:05:00", [
            "Hi! I'm Maya. I work nights as a nurse on the cardiac ward at Leeds General, so "
            "my sleep is all over the place. Can you help me plan a training schedule? I "
            "signed up for the Leeds Half Marathon in May.",
            "Nice to meet you, Maya! Night shifts make training tricky but doable. How many "
            "runs a week can you manage right now, and what's your longest recent run?",
            "Three runs a week, and my longest was 8 km last Sunday. It felt awful after the "
            "6 km mark, to be honest.",
            "That's a solid base. Let's build your long run by about 1 km a week, keep two "
            "easy runs, and put the long run on your first day off after a block of nights "
            "so you're not running on no sleep.",
            "Makes sense. My shifts are usually four nights on, then three off.",
            "Then your long run fits on the second day off, once you've had a full night of "
            "sleep. Easy runs can go before a shift, ideally in the early afternoon after "
            "you wake up.",
            "Also, weird question, but my left knee aches going downstairs after runs. "
            "Should I worry?",
            "Pain going downstairs often points to the kneecap area; runner's knee is common "
            "when mileage rises. Ease back, strengthen your quads and hips, and if it "
            "persists past a couple of weeks, see a physio.",
            "Okay. There's a physio at work I can ask, Gareth. He's lovely.",
            "Perfect. Mention that it's worse on stairs and after longer runs; that detail "
            "helps.",
            "Thanks. One last thing: my sister Chioma is getting married in August and I'm "
            "the maid of honour. I'm panicking a little about the speech.",
            "Congratulations to her! Start by jotting down three stories that show who "
            "Chioma is. A good speech is mostly one strong story and a warm toast. We can "
            "draft it together closer to the date.",
        ]),
        Session("2024-02-10T16:40:00", [
            "Update: Gareth said it's patellofemoral pain, basically runner's knee like you "
            "guessed. He gave me clamshells and step-downs to do every day.",
            "Good to have a diagnosis. Those exercises target the hips and quads that keep "
            "the kneecap tracking well. How's the running going alongside them?",
            "I cut back to 5 km runs for two weeks. It's improving. Long run is back up to "
            "11 km now.",
            "That's a sensible recovery. From 11 km you can still reach 21 km by May with "
            "room for a taper.",
            "Big news though, we finally adopted a dog! She's a three-year-old greyhound "
            "from a rescue in Wakefield.",
            "How exciting! Retired racing greyhounds tend to be calm couch-lovers. What's "
            "her name?",
            "We kept her racing name, Biscuit. She sleeps about twenty hours a day, which "
            "honestly suits my night shifts.",
            "Biscuit is a great name. Greyhounds feel the cold, so a coat for winter walks "
            "helps, and keep her on a lead unless the area is fully fenced: they have a "
            "strong chase instinct.",
            "Yes, the rescue made us promise that. My partner Leon already bought her a "
            "fleece jumper.",
            "Sounds like she's well looked after. Will Biscuit be home alone while you're "
            "both at work?",
            "Leon works from home on Mondays and Fridays, and my neighbour Pat pops in on "
            "the other days.",
            "That's a good arrangement. Pat's midday visits will keep her settled.",
        ]),
        Session("2024-04-06T11:15:00", [
            "I did a 10K race last weekend as a practice run. Finished in 58 minutes 40!",
            "That's a great result, Maya! Under an hour for 10K puts a half marathon around "
            "2:08 to 2:12 as a realistic goal.",
            "I'd love to get under two hours ten. The course in May is hilly though, "
            "especially near Headingley.",
            "Then add hill repeats once a week: six times 90 seconds uphill at a hard "
            "effort, jogging down to recover. It'll make Headingley feel much easier.",
            "Also I'm switching to day shifts from June. The ward manager finally approved "
            "my request.",
            "That'll be a big change for your sleep, in a good way. Give yourself a week or "
            "two to adjust your body clock; morning light helps.",
            "Chioma's wedding venue is confirmed: a barn near Harrogate, 17 August.",
            "Lovely! Barns make for great photos. Have you started on the speech?",
            "Only notes. I want to tell the story of when she got us lost in Lagos trying "
            "to find our grandmother's old house.",
            "That's a perfect anchor story: funny, personal, and it says something about "
            "her determination. Let's build the speech around it.",
            "Biscuit is doing well, by the way, but she steals socks constantly.",
            "Classic! Sock theft is often attention seeking. Trade her for a toy or a treat "
            "rather than chasing her, and keep the laundry out of reach.",
        ]),
        Session("2024-05-20T08:30:00", [
            "I DID IT. Leeds Half yesterday in 2:07:15!",
            "Huge congratulations, Maya! That beats your goal by almost three minutes. How "
            "did the knee hold up?",
            "No pain at all. The step-downs really worked. The hill at Headingley was "
            "brutal but I didn't walk once.",
            "Those hill repeats paid off. Take a few easy days now; a short walk with "
            "Biscuit is ideal recovery.",
            "Ha, she's not much of a walker. Twenty minutes and she lies down on the pavement.",
            "Typical greyhound: sprinters, not distance dogs. Short, frequent walks suit "
            "her best.",
            "Here's the draft of my toast: 'To Chioma, who once got us lost in Lagos for "
            "four hours and still insisted she knew a shortcut. May you and Femi never find "
            "your way out of love.' Too cheesy?",
            "A little cheesy, but weddings welcome cheese! I'd keep it, and add one sincere "
            "sentence before it about what she means to you.",
            "Good idea. Also Leon and I are thinking about a holiday in September, "
            "somewhere quiet after the wedding chaos.",
            "How about the Northumberland coast? Quiet beaches, castles, and dog-friendly "
            "cottages, so Biscuit can come.",
            "Oh that's perfect, Leon loves castles. Bamburgh maybe?",
            "Bamburgh is beautiful, and the beach below the castle welcomes dogs all year "
            "round.",
            "Last thing: I start day shifts on 3 June. Any tips for the first week?",
            "Go to bed at a fixed time from the start, get outside in the morning light, "
            "and avoid long naps: twenty minutes at most if you're struggling.",
        ]),
    ],
    [
        ("single", "Which ward do I work on?", ["s1t01"], "the cardiac ward at Leeds General"),
        ("single", "What race did I sign up for in May?", ["s1t01"], "the Leeds Half Marathon"),
        ("single", "What is my usual shift pattern?", ["s1t05"], "four nights on, three off"),
        ("single", "What did Gareth diagnose my knee pain as?", ["s2t01"], "patellofemoral pain"),
        ("single", "What is my dog's name?", ["s2t07"], "Biscuit"),
        ("single", "What time did I run in the 10K race?", ["s3t01"], "58:40"),
        ("single", "Where is Chioma's wedding venue?", ["s3t07"], "a barn near Harrogate"),
        ("single", "What was my finishing time in the Leeds Half?", ["s4t01"], "2:07:15"),
        ("single", "Who looks after Biscuit when Leon and I are at work?", ["s2t11"],
         "Leon on Mondays and Fridays, neighbour Pat on other days"),
        ("multi", "What breed is my dog and what name did we keep for her?", ["s2t05", "s2t07"],
         "a greyhound called Biscuit"),
        ("multi", "How did my race times improve from the 10K to the half marathon?",
         ["s3t01", "s4t01"], "58:40 for 10K, then 2:07:15 for the half"),
        ("multi", "Which Lagos story is in my wedding speech and how does the toast end?",
         ["s3t09", "s4t07"], "getting lost in Lagos; 'never find your way out of love'"),
        ("multi", "How did my knee pain develop and did it hold up in the race?",
         ["s1t07", "s2t01", "s4t03"], "ached on stairs, runner's knee, no pain in the race"),
        ("multi", "When do I switch to day shifts?", ["s3t05", "s4t13"],
         "from June, starting 3 June"),
        ("paraphrase", "Which pet did we bring home from the shelter?", ["s2t05"],
         "a three-year-old greyhound"),
        ("paraphrase", "Which medical specialty's unit employs me?", ["s1t01"], "cardiac"),
        ("paraphrase", "What rehab routine was prescribed for my sore leg joint?", ["s2t01"],
         "clamshells and step-downs"),
        ("paraphrase", "What does my pooch keep pinching?", ["s3t11"], "socks"),
        ("paraphrase", "How quickly did I complete the six-mile warm-up event?", ["s3t01"],
         "58 minutes 40"),
        ("paraphrase",
         "Where are my boyfriend and I hoping to unwind after the big family celebration?",
         ["s4t09", "s4t10"], "the Northumberland coast"),
        ("paraphrase", "How long can my greyhound manage on a stroll?", ["s4t05"],
         "about twenty minutes"),
    ],
)  # fmt: skip

TOMAS = Person(
    "tomas", "Tomás",
    [
        Session("2024-03-04T22:10:00", [
            "Hey, I'm Tomás. I'm a backend engineer at a logistics startup in Austin. We're "
            "moving our order-tracking service off a single Postgres box onto Aurora and I'm "
            "nervous about the cutover.",
            "Hi Tomás! A cutover like that is manageable with good prep. How large is the "
            "database, and how much downtime can you tolerate?",
            "About 400 GB. Product says we get a 15-minute maintenance window, max, on a "
            "Sunday night.",
            "With 400 GB, do the bulk copy ahead of time with logical replication or AWS "
            "DMS, let it catch up, then use the window only to stop writes, verify row "
            "counts and flip the connection string.",
            "We were going to use pg_dump. Sounds like that's a bad idea.",
            "For 400 GB, a dump and restore would take hours. Replication keeps the target "
            "in sync, so the window is just the switch.",
            "Okay, replication it is. Unrelated: I started baking sourdough during paternity "
            "leave and I'm hooked. My starter is called Doughvid.",
            "Ha, great name! Congratulations on the baby, too. How's the sourdough going?",
            "Thanks! Our son Mateo is four months old now. The bread is tasty but really "
            "flat, it spreads out on the tray.",
            "Flat loaves usually mean under-developed gluten or over-proofing. Try a few "
            "extra sets of stretch-and-folds, and a shorter final proof in the fridge "
            "overnight.",
            "I've been doing the final proof on the counter for like 6 hours because our "
            "kitchen is cold.",
            "A cold kitchen slows things down, but six hours on the counter after bulk "
            "fermentation is probably too long. Shape it, then retard it in the fridge for "
            "12 to 14 hours and bake straight from cold.",
        ]),
        Session("2024-03-18T19:00:00", [
            "The Aurora migration went smoothly! Replication lag was under a second when we "
            "flipped. Total write downtime was 6 minutes.",
            "Excellent work, Tomás! Six minutes is well inside your window. Anything you'd "
            "do differently?",
            "We forgot that a cron job still pointed at the old host and it wrote to it for "
            "a day before anyone noticed.",
            "That's a common gotcha. Next time, make the old primary read-only right after "
            "the cutover so stray writers fail loudly.",
            "Yeah, lesson learned. The postmortem is on Thursday.",
            "Keep it blameless and focus on the checklist gap: an inventory of every client "
            "that connects to the database would have caught it.",
            "Different topic: my dad turns 70 in April. He loves fishing and old westerns. "
            "Any gift ideas?",
            "For a 70th, something experiential is memorable: a guided fishing trip on a "
            "lake he loves, or a framed vintage poster of his favourite western and a day "
            "out together.",
            "His favourite film is The Searchers. A framed poster is a great idea.",
            "A vintage-style print of The Searchers would look great. You could add a card "
            "with a memory from a fishing trip you took together.",
            "Also heads up, I'm allergic to shellfish, so if you ever suggest recipes, no "
            "shrimp or crab please.",
            "Noted. I'll keep any recipe suggestions free of shellfish.",
        ]),
        Session("2024-05-02T13:25:00", [
            "I'm shopping for a used car. We need something bigger now that Mateo's here. "
            "Budget is around 25k.",
            "For a growing family at 25k, a 2019 to 2021 Honda CR-V or a Toyota RAV4 hybrid "
            "are reliable picks. Check the service history and get a pre-purchase "
            "inspection.",
            "We test-drove a 2020 RAV4 hybrid with 41,000 miles for $26,500. Is that fair?",
            "That's roughly market price for that mileage. You could try negotiating toward "
            "$25,500, especially if the tires or brakes need work soon.",
            "The tires were pretty worn actually.",
            "Use that: a new set costs around $800 to $1,000, which is a fair basis for "
            "asking them to come down.",
            "Sourdough update: the fridge proof fixed it! Got real oven spring and an ear "
            "on the last loaf.",
            "That's fantastic! An ear means good tension and scoring. Are you using a Dutch "
            "oven?",
            "Yes, a cast iron one my wife Lucía gave me for my birthday.",
            "Perfect tool. Preheat it for a full 45 minutes at 250°C for the best crust.",
            "Dad loved the Searchers poster, by the way. He hung it in the garage next to "
            "his tackle box.",
            "That's wonderful to hear. The garage is the perfect spot for it.",
        ]),
        Session("2024-06-21T20:45:00", [
            "We bought the RAV4! Got them down to $25,200 because of the tires.",
            "Nicely negotiated, Tomás! Have you installed Mateo's car seat yet?",
            "Yes, the fire station checked the installation for free.",
            "Great call; a lot of seats are installed slightly wrong, so a check is worth it.",
            "Work thing: I've been asked to lead the on-call rotation redesign. People are "
            "burning out with week-long shifts.",
            "Consider shorter shifts of three or four days, a follow-the-sun setup if you "
            "have people in other time zones, and a clear escalation path so the primary "
            "isn't alone at 3am.",
            "We have two engineers in Lisbon, so follow-the-sun might actually work.",
            "Austin and Lisbon are six hours apart, so each side could cover its own "
            "daytime and you'd largely eliminate overnight pages.",
            "I want to make Lucía a birthday dinner next month. She loves Spanish food. "
            "Remember my allergy though.",
            "How about a mushroom and chorizo paella without seafood, patatas bravas, and a "
            "Basque cheesecake for dessert? No shellfish anywhere.",
            "Basque cheesecake sounds amazing. Is it hard?",
            "It's one of the easiest cakes there is: bake it very hot so the top burns and "
            "caramelises while the middle stays creamy.",
        ]),
    ],
    [
        ("single", "What is my sourdough starter called?", ["s1t07"], "Doughvid"),
        ("single", "How long was the write downtime in the Aurora migration?", ["s2t01"],
         "6 minutes"),
        ("single", "What did the cron job do after we moved hosts?", ["s2t03"],
         "kept writing to the old host for a day"),
        ("single", "What is my dad's favourite film?", ["s2t09"], "The Searchers"),
        ("single", "Which food am I allergic to?", ["s2t11"], "shellfish"),
        ("single", "How much did we pay for the RAV4 in the end?", ["s4t01"], "$25,200"),
        ("single", "Where are our other engineers based?", ["s4t07"], "Lisbon"),
        ("single", "Who gave me the cast iron pot?", ["s3t09"], "my wife Lucía"),
        ("single", "What is my son called and how old is he?", ["s1t09"], "Mateo, four months"),
        ("single", "What maintenance window did product give us?", ["s1t03"],
         "15 minutes on a Sunday night"),
        ("multi", "What was your fix for my flat sourdough and did it work?", ["s1t12", "s3t07"],
         "retard the shaped loaf in the fridge; it worked"),
        ("multi", "What did I get my dad for his 70th and what did he do with the poster?",
         ["s2t09", "s3t11"], "a framed Searchers poster; he hung it in the garage"),
        ("multi", "How did the RAV4 price change from the test drive to the purchase?",
         ["s3t03", "s4t01"], "$26,500 asked, $25,200 paid"),
        ("multi", "What am I allergic to, and what dinner did you suggest for Lucía's birthday?",
         ["s2t11", "s4t10"],
         "chorizo and mushroom paella, patatas bravas, Basque cheesecake; no shellfish"),
        ("paraphrase", "What is the clock difference between our two engineering sites?",
         ["s4t08"], "six hours"),
        ("paraphrase", "What seafood must I avoid?", ["s2t11"], "shellfish: shrimp, crab"),
        ("paraphrase", "What did my father do with the movie artwork?", ["s3t11"],
         "hung it in the garage"),
        ("paraphrase", "Which vehicle did we purchase for the growing household?", ["s4t01"],
         "the RAV4"),
        ("paraphrase", "What makes a homemade boule lose its form?", ["s1t10"],
         "weak gluten or over-proofing"),
        ("paraphrase", "How long was the service offline when we switched databases?", ["s2t01"],
         "6 minutes"),
        ("paraphrase", "Who inspected the infant seat fitting?", ["s4t03"], "the fire station"),
        ("paraphrase", "How much storage does the tracking system's data take up?", ["s1t03"],
         "about 400 GB"),
    ],
)  # fmt: skip

PRIYA = Person(
    "priya", "Priya",
    [
        Session("2023-09-12T10:20:00", [
            "Hi, I'm Priya, a second-year PhD student at the University of Toronto. My "
            "thesis is on how kelp forests recover after marine heatwaves.",
            "Hi Priya, that sounds like fascinating and timely research. Where do you do "
            "your fieldwork?",
            "Mostly off the coast of Vancouver Island, in Barkley Sound. I go out every "
            "July and August.",
            "Barkley Sound is a wonderful site. Do you dive for your surveys, or use drones?",
            "Both. We do transect dives and my labmate Jun flies a drone for canopy cover.",
            "Combining dive transects with aerial canopy data is powerful: you get fine "
            "detail and broad coverage.",
            "My committee meeting is October 20 and I'm behind on the stats chapter.",
            "Let's make a plan. What analysis does the chapter need, and what's blocking you?",
            "Mixed-effects models of kelp density with site as a random effect. R keeps "
            "throwing convergence warnings.",
            "Convergence warnings in lme4 often come from unscaled predictors. Try scaling "
            "temperature and depth, and switch the optimizer to bobyqa with more "
            "iterations.",
            "Scaling worked! No more warnings. You're a lifesaver.",
            "Great! Note in your methods that the predictors were centred and scaled.",
            "Also I'm vegetarian, and I'm trying to cook more instead of ordering takeout "
            "while writing. Easy ideas?",
            "Chickpea curry, black bean tacos, and a big tray of roasted vegetables with "
            "halloumi are all quick, and they reheat well.",
        ]),
        Session("2023-10-25T18:05:00", [
            "The committee meeting went okay. They want me to add a chapter on sea urchin "
            "grazing.",
            "That's a natural addition: urchins are a big driver of kelp loss after "
            "heatwaves. Do you have urchin data already?",
            "Some counts from last summer, but I'll need another field season to do it "
            "properly.",
            "Then plan next summer's dives to include urchin density along the same "
            "transects, so the data line up.",
            "My study permit expires in March, so I need to renew it before next field season.",
            "Apply at least three months before it expires, so by December. You'll need a "
            "letter from your department confirming enrolment and proof of funds.",
            "Ugh, paperwork. My funding letter is from NSERC, does that count?",
            "Yes, an NSERC scholarship letter showing the amount and duration is good proof "
            "of funds.",
            "Also my roommate Hannah keeps leaving dishes in the sink for days. I don't "
            "know how to bring it up.",
            "Pick a calm moment, not when you're annoyed, and suggest a simple rule like "
            "dishes done by the end of the day. Frame it as 'we' rather than 'you'.",
            "Good point. I'll try that this weekend.",
            "Good luck! Most roommates respond better to a shared rule than to a complaint.",
        ]),
        Session("2024-01-08T09:40:00", [
            "Happy new year! I talked to Hannah and we made a chore chart. It's actually "
            "working.",
            "Happy new year, Priya! Glad the chart helped; small systems like that avoid a "
            "lot of friction.",
            "I got my study permit renewed, valid until 2027. Such a relief.",
            "Wonderful, that covers the rest of your PhD comfortably.",
            "I started guitar lessons over the break. My fingers hurt so much.",
            "Sore fingertips are normal for the first few weeks until calluses form. "
            "Practise in short sessions, 15 to 20 minutes, a few times a day.",
            "My teacher wants me to learn the F barre chord and it's impossible.",
            "F is the classic wall for beginners. Try a mini-F on the top four strings "
            "first, and roll your index finger slightly onto its bony edge when you do the "
            "full barre.",
            "I'm also planning a trip to Kerala in April to see my grandmother. She turns 90.",
            "What a special occasion! April in Kerala is hot, so plan outdoor things for "
            "early morning. Will the whole family be there?",
            "Yes, my parents are flying from Mississauga and my cousins from Dubai.",
            "That sounds like a beautiful reunion. Maybe bring printed photos of your "
            "fieldwork to show her.",
        ]),
        Session("2024-03-15T15:30:00", [
            "The mini-F trick worked, I can play the full barre now. Learning Wonderwall, "
            "of course.",
            "Ha, a rite of passage! Well done on the barre chord.",
            "Grant news: my proposal for a second field season was funded, 12,000 dollars "
            "from the Hakai Institute.",
            "Congratulations! That should help a lot with the urchin surveys.",
            "It covers boat fuel and a research assistant for six weeks.",
            "An RA for six weeks will make the dive schedule much more realistic.",
            "For Kerala, my grandmother wants me to cook for her. She's strict vegetarian "
            "like me but also doesn't eat onion or garlic.",
            "You could make a tomato rasam, a coconut vegetable stew with curry leaves, and "
            "a lemon rice: all traditional, and no onion or garlic needed.",
            "She'll love the rasam. She used to make it for me when I was little.",
            "Then cooking it for her will mean a lot. Use asafoetida for depth since you're "
            "skipping garlic.",
            "Last thing: my defence is tentatively set for spring 2026.",
            "That gives you two more field seasons of data if needed. We can map the "
            "chapters to a timeline when you're ready.",
        ]),
    ],
    [
        ("single", "Which sound on Vancouver Island do I survey?", ["s1t03"], "Barkley Sound"),
        ("single", "When is my committee meeting?", ["s1t07"], "October 20"),
        ("single", "What extra chapter did the committee ask for?", ["s2t01"],
         "sea urchin grazing"),
        ("single", "When does my study permit expire?", ["s2t05"], "in March"),
        ("single", "Which funding letter do I have?", ["s2t07"], "NSERC"),
        ("single", "What is my roommate called?", ["s2t09"], "Hannah"),
        ("single", "Until when is my renewed permit valid?", ["s3t03"], "2027"),
        ("single", "How old is my grandmother turning?", ["s3t09"], "90"),
        ("single", "Who is flying to Kerala for the reunion?", ["s3t11"],
         "my parents from Mississauga and cousins from Dubai"),
        ("single", "When is my defence set for?", ["s4t11"], "spring 2026"),
        ("multi", "What fixed the convergence warnings in my R models?", ["s1t10", "s1t11"],
         "scaling the predictors"),
        ("multi", "How did the problem with Hannah's dishes get solved?", ["s2t09", "s3t01"],
         "we made a chore chart"),
        ("multi", "How much was the Hakai grant and what does it cover?", ["s4t03", "s4t05"],
         "12,000 dollars for boat fuel and an RA for six weeks"),
        ("multi", "What can I cook for my grandmother in Kerala?", ["s4t07", "s4t08"],
         "tomato rasam, coconut vegetable stew, lemon rice; no onion or garlic"),
        ("paraphrase", "What's my doctoral research about?", ["s1t01"], "kelp recovery"),
        ("paraphrase", "Who operates the flying camera?", ["s1t05"], "Jun"),
        ("paraphrase", "What meat-free meals did you suggest I make at home?", ["s1t14"],
         "chickpea curry, black bean tacos, roasted vegetables"),
        ("paraphrase", "Which spiny grazer needs more surveys?", ["s2t01"], "sea urchins"),
        ("paraphrase", "How was I told to get past the tricky hand position on my instrument?",
         ["s3t08"], "a mini-F on the top four strings"),
        ("paraphrase", "What made my hand ache over the winter holidays?", ["s3t05"],
         "guitar lessons"),
        ("paraphrase", "How long will I be allowed to stay in Canada now?", ["s3t03"],
         "until 2027"),
        ("paraphrase", "What spice replaces the pungent bulb in grandma's recipes?", ["s4t10"],
         "asafoetida"),
    ],
)  # fmt: skip

HENRIK = Person(
    "henrik", "Henrik",
    [
        Session("2024-04-02T07:50:00", [
            "Good morning. I am Henrik, a retired history teacher from Aarhus. My wife "
            "Grete says I should talk to you about my garden instead of to her.",
            "Good morning, Henrik! I'm happy to talk gardening. What are you growing this "
            "year?",
            "Tomatoes in the greenhouse, potatoes, and some runner beans. Last year the "
            "tomatoes got blight and I lost almost everything.",
            "Blight is heartbreaking. In a greenhouse, ventilation and watering at the base "
            "rather than on the leaves help a lot. Resistant varieties like Crimson Crush "
            "are worth trying.",
            "I will order Crimson Crush seeds then. I also have Gardener's Delight seeds "
            "from my brother.",
            "Gardener's Delight is a reliable cherry tomato. Grow both and compare; just "
            "space them well for airflow.",
            "I am also writing a memoir about growing up on the island of Fanø in the "
            "1950s. For my grandchildren.",
            "What a gift for them. Do you have a structure in mind, or are you writing "
            "memories as they come?",
            "As they come. I have about 40 pages, mostly about my father's fishing boat.",
            "That's a great start. Later you might group the pieces by seasons or by "
            "people; the boat chapters could be the backbone.",
            "My eyesight is getting worse, though. The doctor says cataracts in both eyes.",
            "Cataract surgery is very common and usually quick, with excellent results. Has "
            "the doctor mentioned when?",
            "The right eye in June at Aarhus University Hospital, the left one later.",
            "That's good news. Large-print settings or audio dictation can help you keep "
            "writing until then.",
        ]),
        Session("2024-05-14T08:10:00", [
            "The tomatoes are planted. Eight Crimson Crush and six Gardener's Delight.",
            "Lovely! Remember to pinch out the side shoots on the cordon varieties as they "
            "grow.",
            "My grandson Oskar, he is nine, helped me plant them. He asked a hundred "
            "questions.",
            "That's wonderful, you've got an apprentice. Maybe give him his own pot to look "
            "after.",
            "Good idea. He wants to grow a giant pumpkin for Halloween.",
            "Then he should start now: a variety like Atlantic Giant, lots of compost, and "
            "lots of water. Let him measure it each week.",
            "I started using the dictation on my phone for the memoir. Grete laughs at me "
            "talking to the phone.",
            "Dictation is a great workaround. How is the memoir going?",
            "I wrote a chapter about the storm of 1956 when my father's boat, the Marie, "
            "nearly sank.",
            "That sounds like a powerful chapter. Details like the boat's name and the "
            "sounds of the storm will bring it alive.",
            "Also I need to repair my own small sailing boat this summer. The mast step is "
            "rotten.",
            "A rotten mast step needs to be cut out and replaced with a new piece of "
            "hardwood or marine plywood, epoxied in. Check the surrounding wood for rot "
            "too.",
        ]),
        Session("2024-06-28T09:00:00", [
            "The cataract operation on my right eye went very well. I can see colours I "
            "forgot existed!",
            "That's wonderful news, Henrik! Many people say exactly that. Keep using the "
            "drops as prescribed.",
            "Yes, drops four times a day for a month. No lifting heavy things for two weeks.",
            "Then the boat repair will have to wait a little. Let Oskar do the heavy "
            "lifting with the pumpkin.",
            "Bad news in the greenhouse: some leaves have yellow patches with brown spots. "
            "Is it blight again?",
            "Blight usually shows as brown, spreading patches that go mushy. Yellowing with "
            "small spots could be leaf mould, which is common in humid greenhouses. Open "
            "the vents more and remove affected leaves.",
            "I will open the vents. The Crimson Crush look healthy, it is the Gardener's "
            "Delight with the problem.",
            "That fits: Crimson Crush has blight resistance, while Gardener's Delight is "
            "more vulnerable. Remove the bad leaves and keep the foliage dry.",
            "Oskar's pumpkin is already the size of a football.",
            "Impressive! He'll have a real giant by October if he keeps feeding it.",
            "My brother Niels visited and read the storm chapter. He cried. He remembers "
            "the night differently.",
            "Memoirs often spark that. You could include his version as a short note; two "
            "brothers remembering the same storm is moving.",
        ]),
        Session("2024-09-03T10:30:00", [
            "Left eye operation is on 17 October. I am less nervous this time.",
            "That makes sense, you know what to expect now. Arrange a lift home and keep "
            "the drops ready.",
            "The boat is repaired. I used oak for the new mast step and sailed to Mols last "
            "weekend.",
            "Congratulations! Oak is a good choice if it's well sealed with epoxy. How was "
            "the sail?",
            "Calm water, a light westerly wind. Grete came along and even enjoyed it.",
            "A calm day with a westerly is ideal for a first sail after a repair.",
            "The harvest: 11 kilos of tomatoes, mostly Crimson Crush. The Gardener's "
            "Delight gave only 2 kilos after the leaf mould.",
            "Eleven kilos is a great harvest! It sounds like Crimson Crush earned its spot "
            "for next year.",
            "Oskar's pumpkin weighs 23 kilos! He wants to enter it in the village fair.",
            "That's a proper giant for a first try. The judges will be impressed.",
            "I have 120 pages of the memoir now. My daughter Karen wants to print copies "
            "for Christmas.",
            "A printed family edition for Christmas is a lovely goal. Add a few old "
            "photographs of Fanø and the Marie; they'll make it special.",
        ]),
    ],
    [
        ("single", "What did I teach before I retired?", ["s1t01"], "history"),
        ("single", "Where did I grow up?", ["s1t07"], "on the island of Fanø"),
        ("single", "When and where is the cataract surgery on my right eye?", ["s1t13"],
         "June, Aarhus University Hospital"),
        ("single", "How old is my grandson Oskar?", ["s2t03"], "nine"),
        ("single", "What does Oskar want to grow for Halloween?", ["s2t05"], "a giant pumpkin"),
        ("single", "What was the name of my father's boat in the storm of 1956?", ["s2t09"],
         "the Marie"),
        ("single", "What is wrong with my sailing boat?", ["s2t11"], "the mast step is rotten"),
        ("single", "How often do I use the eye drops?", ["s3t03"], "four times a day for a month"),
        ("single", "When is my left eye operation?", ["s4t01"], "17 October"),
        ("single", "Which wood did I use for the new mast step?", ["s4t03"], "oak"),
        ("multi", "Which tomato varieties did I plant this year?", ["s1t05", "s2t01"],
         "Crimson Crush and Gardener's Delight"),
        ("multi", "How did Oskar's pumpkin grow over the summer?", ["s3t09", "s4t09"],
         "football-sized in June, 23 kilos by September"),
        ("multi", "Which tomato did worse this year and why?", ["s3t07", "s4t07"],
         "Gardener's Delight, leaf mould"),
        ("multi", "How many pages has my memoir grown to?", ["s1t09", "s4t11"],
         "from about 40 to 120"),
        ("multi", "How have my two cataract operations gone so far?", ["s1t13", "s3t01", "s4t01"],
         "right eye done in June and went well; left eye on 17 October"),
        ("paraphrase", "Which plant sickness ruined my previous harvest?", ["s1t03"], "blight"),
        ("paraphrase", "Who is my spouse?", ["s1t01"], "Grete"),
        ("paraphrase", "How did my sibling respond to the gale story?", ["s3t11"],
         "Niels cried and remembers it differently"),
        ("paraphrase", "What is ailing the foliage of my cherry tomato plants?", ["s3t06"],
         "probably leaf mould"),
        ("paraphrase", "How do I keep writing now that reading is hard for me?", ["s2t07"],
         "dictation on my phone"),
        ("paraphrase",
         "Which destination did we reach on our first outing after fixing the vessel?", ["s4t03"],
         "Mols"),
        ("paraphrase", "Who plans to publish my recollections as holiday gifts?", ["s4t11"],
         "my daughter Karen"),
        ("paraphrase", "How did my vision change after the procedure?", ["s3t01"],
         "colours look vivid again"),
    ],
)  # fmt: skip

DANA = Person(
    "dana", "Dana",
    [
        Session("2024-02-20T12:15:00", [
            "Hi there. I'm Dana, I own a bike repair shop in Portland called Spoke & "
            "Wrench. It's just me and one mechanic, Luis.",
            "Hi Dana! Nice to meet you. How's business going?",
            "Busy in spring and summer, dead in winter. I'm thinking about hiring a second "
            "mechanic before April.",
            "Hiring before the spring rush makes sense. Could you afford a seasonal or "
            "part-time role first, to test demand?",
            "Part-time could work. Maybe 25 hours a week, March to September.",
            "That's a sensible start. Post the job in local cycling groups and at the "
            "community college's bike program; you'll find people who love the work.",
            "Also, my accountant says I should set up quarterly estimated tax payments. I "
            "always just pay in April.",
            "Quarterly estimates avoid underpayment penalties. The due dates are usually "
            "April 15, June 15, September 15 and January 15.",
            "Ugh, four deadlines instead of one. Can you remind me of those dates later?",
            "Of course: April 15, June 15, September 15, and January 15 of the following year.",
            "On a personal note, my partner Sam and I just adopted a cat from the Oregon "
            "Humane Society. A grumpy orange tabby named Marmalade.",
            "Congratulations! Orange tabbies are famous for big personalities. How is "
            "Marmalade settling in?",
            "She's hiding under the bed and hisses at Sam, but she loves me for some reason.",
            "Give her time and a quiet room of her own. Let Sam be the one who feeds her; "
            "food builds trust quickly.",
        ]),
        Session("2024-03-27T17:50:00", [
            "I hired someone! Her name is Aiyana, she's finishing the bike mechanics "
            "program at PCC.",
            "Congratulations! Fresh from a program means she knows the current standards. "
            "When does she start?",
            "April 2, three days a week. Luis is going to train her on wheel building.",
            "Wheel building is a great skill to pass on; it's a signature service in many "
            "shops.",
            "Sam feeding Marmalade worked. She sleeps on Sam's lap now and ignores me "
            "completely.",
            "Ha, the classic cat betrayal! At least she's settled.",
            "My landlord wants to raise the shop rent by 18% when the lease renews in July.",
            "That's steep. Check the lease for renewal caps, look up comparable rents "
            "nearby, and propose a smaller increase with a longer term; landlords often "
            "value stability.",
            "Commercial spaces on our street go for about the same as what I pay now, so "
            "18% is above market.",
            "That's your strongest argument. Bring the comparables and offer a three-year "
            "renewal at a modest increase, say 5 to 7%.",
            "Sam and I are also learning Spanish. We're going to Oaxaca in November for Día "
            "de Muertos.",
            "What a wonderful trip! Oaxaca's celebrations are stunning. Are you using an "
            "app or classes?",
            "Duolingo plus a Tuesday evening class at the library.",
            "Good mix: the class will give you speaking practice that the app can't.",
        ]),
        Session("2024-06-10T08:05:00", [
            "Lease update: the landlord agreed to 6% for three years. I'm so relieved.",
            "That's a great outcome, Dana. The comparables worked!",
            "Aiyana is amazing. She built her first set of wheels last week and a customer "
            "already asked for her specifically.",
            "That's a sign of a great hire. Maybe consider keeping her on past September.",
            "I'm thinking of offering her full time. Revenue is up 30% from last June.",
            "With revenue up 30%, a full-time offer is reasonable, especially if she's "
            "bringing in repeat customers.",
            "I missed the June 15 tax payment deadline by two days. Is that bad?",
            "It's a small penalty: interest on the underpaid amount for the days late. Pay "
            "it now and it'll be minimal.",
            "Marmalade knocked my coffee onto my laptop yesterday. The laptop survived, "
            "barely.",
            "Cats and desks! A lidded mug might save you next time.",
            "Also I've started commuting on a cargo bike. Sam thinks I'm crazy.",
            "A cargo bike is perfect for a bike shop owner; you can haul parts and tools too.",
        ]),
        Session("2024-10-01T19:20:00", [
            "Aiyana accepted the full-time offer! She starts full time on October 14.",
            "Fantastic news! Your shop is growing: three mechanics now.",
            "We're closing the shop for 10 days in November for the Oaxaca trip. Luis will "
            "handle emergency repairs.",
            "That's a good plan. A sign on the door and a note on your website will keep "
            "customers in the loop.",
            "My Spanish is still terrible but I can order food and ask for directions.",
            "That's exactly what you need for travelling! Learn a few phrases about the "
            "altars and the celebrations, too.",
            "We want to build an ofrenda for Sam's grandmother, who passed away last year.",
            "That's a beautiful way to honour her. Include her photo, marigolds, candles, "
            "and foods or objects she loved.",
            "She loved pan dulce and Sam still has her rosary.",
            "Those would be perfect on the ofrenda, very personal.",
            "One more business thing: I want to start a winter tune-up special to fix the "
            "slow season.",
            "A flat-rate winter tune-up with a discount from November to February could "
            "keep the shop busy. Bundle in a free chain clean to make it attractive.",
        ]),
    ],
    [
        ("single", "What is my bike shop called?", ["s1t01"], "Spoke & Wrench"),
        ("single", "How many hours a week is the part-time mechanic role?", ["s1t05"],
         "25 hours, March to September"),
        ("single", "What is my cat's name?", ["s1t11"], "Marmalade"),
        ("single", "Who did I hire as the new mechanic?", ["s2t01"], "Aiyana"),
        ("single", "What is Luis going to train the new hire on?", ["s2t03"], "wheel building"),
        ("single", "How much does the landlord want to raise the rent?", ["s2t07"], "18%"),
        ("single", "What increase did the landlord finally agree to?", ["s3t01"],
         "6% for three years"),
        ("single", "When are Sam and I going to Oaxaca?", ["s2t11"], "November"),
        ("single", "Which tax payment deadline did I miss?", ["s3t07"], "June 15"),
        ("single", "When does Aiyana start full time?", ["s4t01"], "October 14"),
        ("single", "Who will handle emergency repairs while we are away?", ["s4t03"], "Luis"),
        ("multi", "What are the quarterly estimated tax due dates?", ["s1t08", "s1t10"],
         "April 15, June 15, September 15, January 15"),
        ("multi", "How did the rent negotiation turn out compared with the landlord's first ask?",
         ["s2t07", "s3t01"], "18% asked, 6% for three years agreed"),
        ("multi", "How did Marmalade's behaviour towards Sam change?", ["s1t13", "s2t05"],
         "hissed at Sam at first, now sleeps on Sam's lap"),
        ("multi", "How did Aiyana go from part-time to a full-time offer?",
         ["s2t03", "s3t05", "s4t01"],
         "three days a week from April 2, offered full time, starts October 14"),
        ("multi", "What will we put on the ofrenda for Sam's grandmother?", ["s4t07", "s4t09"],
         "pan dulce and her rosary, with photo, marigolds, candles"),
        ("paraphrase", "Which pet did we get from the animal charity?", ["s1t11"],
         "an orange tabby cat"),
        ("paraphrase", "How much more money is the business making than a year ago?", ["s3t05"],
         "30% more"),
        ("paraphrase", "How am I practising the language before our Mexico holiday?", ["s2t13"],
         "Duolingo and a Tuesday class"),
        ("paraphrase", "What damaged my computer?", ["s3t09"], "the cat knocked coffee onto it"),
        ("paraphrase", "How do I get to work these days?", ["s3t11"], "on a cargo bike"),
        ("paraphrase", "What promotion will fill the quiet cold months?", ["s4t11", "s4t12"],
         "a winter tune-up special"),
        ("paraphrase", "What sweet bread did my partner's late nana enjoy?", ["s4t09"],
         "pan dulce"),
    ],
)  # fmt: skip

KENJI = Person(
    "kenji", "Kenji",
    [
        Session("2024-07-08T20:00:00", [
            "Hi, I'm Kenji. I'm a freelance illustrator in Melbourne and I just signed a "
            "contract for a picture book about a wombat who is afraid of the dark.",
            "Congratulations, Kenji! That's a lovely premise. What's the timeline for the "
            "illustrations?",
            "Thirty-two pages, final art due to the publisher by 30 November. Sketches by "
            "the end of August.",
            "That's tight but doable. If you aim for about two finished spreads a week from "
            "September, you'll have buffer for revisions.",
            "The author is Rosa Delgado, she's really particular about the wombat's eyes.",
            "Eyes carry a lot of emotion in picture books. Send Rosa a sheet of three or "
            "four eye styles early so you agree before the full sketches.",
            "Good call. Separate thing: I've had a ringing in my left ear for two weeks.",
            "Persistent ringing can be tinnitus; it's worth seeing a GP or an audiologist, "
            "especially since it's one-sided. Have you been around loud noise?",
            "I went to a gig at the Forum without earplugs, right before it started.",
            "That's a likely trigger. Many cases settle, but get it checked, and wear "
            "earplugs at gigs from now on.",
            "I also want to learn to surf this summer. I'm 38, is that too late?",
            "Not at all! Plenty of people start in their thirties or later. A beginner "
            "lesson at a gentle beach like Torquay or Ocean Grove is a great start.",
        ]),
        Session("2024-08-26T21:15:00", [
            "The audiologist said it's mild noise-induced tinnitus. It's already quieter. I "
            "bought musicians' earplugs.",
            "Good news that it's easing. Musicians' earplugs keep the sound natural while "
            "protecting your hearing.",
            "Sketches went to Rosa on Friday. She loved the wombat, his name is Wattle, but "
            "she wants the burrow scenes darker.",
            "Wattle is adorable. For darker burrow scenes, try a limited palette of deep "
            "blues and warm lantern light, so it's moody but not scary for kids.",
            "Lantern light is perfect, because Wattle carries a little lantern in the story!",
            "Then the lantern can be the visual thread, its glow getting stronger as Wattle "
            "gets braver.",
            "I'm moving apartments in October, from Brunswick to Footscray. Cheaper, and a "
            "bigger studio room.",
            "A bigger studio will help with the book deadline. Book the movers early; "
            "October weekends fill up.",
            "My mum is visiting from Sapporo in December. She's never been to Australia.",
            "How exciting! December is summer here, so she might enjoy the Great Ocean Road, "
            "the beach, and the Christmas lights in the city.",
        ]),
        Session("2024-10-21T18:40:00", [
            "I've moved! The new studio gets amazing morning light.",
            "Wonderful, morning light is ideal for painting. How's the book going?",
            "I'm on spread 20 of 32. Rosa approved the darker burrow palette.",
            "Great progress with over a month left. You're on track for 30 November.",
            "I had my first surf lesson at Ocean Grove. I stood up twice!",
            "Standing up in the first lesson is a real achievement. Keep going while the "
            "summer swell is gentle.",
            "My shoulders are destroyed though. Paddling is so much harder than it looks.",
            "Paddling fitness takes a few sessions. Some shoulder mobility work and swimming "
            "laps will help a lot.",
            "For Mum's visit I booked a small ryokan-style guesthouse in Daylesford for two "
            "nights, she likes hot springs.",
            "That's thoughtful. Daylesford's mineral springs and spas will feel a little "
            "like home for her.",
        ]),
        Session("2024-12-02T11:05:00", [
            "I delivered the final art for Wattle on 28 November, two days early!",
            "Congratulations, Kenji! Finishing early on a 32-page book is impressive. How "
            "do you feel?",
            "Exhausted and happy. Rosa sent flowers and said the lantern glow on the last "
            "page made her cry.",
            "That's the best compliment an illustrator can get: the visual thread worked.",
            "Mum arrives on 12 December. I'm nervous about the long drive on the Great "
            "Ocean Road because she gets carsick.",
            "Break the drive into short legs with stops at Lorne and Apollo Bay, keep the "
            "windows cracked, and give her the front seat.",
            "My ear is almost completely fine now. I wore the earplugs at a gig last week "
            "and there was no ringing after.",
            "Excellent, that shows the earplugs are doing their job.",
            "Next project: the publisher asked if I'd illustrate a sequel where Wattle "
            "learns to swim.",
            "A sequel is a great sign they're happy. Water scenes will be a fun contrast "
            "to the dark burrows.",
        ]),
    ],
    [
        ("single", "What is the picture book I signed a contract for about?", ["s1t01"],
         "a wombat who is afraid of the dark"),
        ("single", "When is the final art due?", ["s1t03"], "30 November"),
        ("single", "Who is the author of the book?", ["s1t05"], "Rosa Delgado"),
        ("single", "Which ear has the ringing?", ["s1t07"], "the left ear"),
        ("single", "Where am I moving in October?", ["s2t07"], "from Brunswick to Footscray"),
        ("single", "Where is my mum visiting from?", ["s2t09"], "Sapporo"),
        ("single", "Where did I have my first surf lesson?", ["s3t05"], "Ocean Grove"),
        ("single", "Where did I book a guesthouse for Mum's visit?", ["s3t09"], "Daylesford"),
        ("single", "When did I deliver the final art?", ["s4t01"], "28 November"),
        ("multi", "What is the wombat called and what does he carry?", ["s2t03", "s2t05"],
         "Wattle, a little lantern"),
        ("multi", "What did the audiologist say about my tinnitus and how is my ear now?",
         ["s2t01", "s4t07"], "mild noise-induced tinnitus; almost fine now"),
        ("multi", "When does Mum arrive and where is she visiting from?", ["s2t09", "s4t05"],
         "12 December, from Sapporo"),
        ("multi",
         "How many spreads had I finished in October, and when did I deliver the final art?",
         ["s3t03", "s4t01"], "spread 20 of 32; delivered 28 November"),
        ("paraphrase", "What caused the buzzing in my head?", ["s1t09"],
         "a gig at the Forum without earplugs"),
        ("paraphrase", "What skill does the follow-up story teach our burrowing hero?", ["s4t09"],
         "swimming"),
        ("paraphrase", "Why is my upper body aching after the waves?", ["s3t07"], "paddling"),
        ("paraphrase", "What did the writer send me once the illustrations were finished?",
         ["s4t03"], "flowers"),
        ("paraphrase", "What's great about the place I relocated to?", ["s3t01"],
         "amazing morning light in the studio"),
        ("paraphrase", "How can my mother avoid feeling ill on the coastal road trip?", ["s4t06"],
         "short legs, stops at Lorne and Apollo Bay, windows cracked, front seat"),
    ],
)  # fmt: skip

PEOPLE = [MAYA, TOMAS, PRIYA, HENRIK, DANA, KENJI]


def turn_id(person: str, session: int, turn: int) -> str:
    return f"{person}-{session}-{turn:02d}"


def ref_to_id(person: Person, ref: str) -> str:
    session, turn = ref[1:].split("t")
    s, t = int(session), int(turn)
    if not (1 <= s <= len(person.sessions) and 1 <= t <= len(person.sessions[s - 1].turns)):
        raise SystemExit(f"{person.id}: reference {ref} names no turn")
    return turn_id(person.id, s, t)


def shares_a_stem(question: str, texts: list[str]) -> bool:
    """Whether SQLite's FTS5 porter tokenizer matches any content word of the question in
    any of the texts (the same tokenizer and query form the keyword ranker uses)."""
    terms = search_terms(question)
    if not terms:
        return False
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.executemany("INSERT INTO t(body) VALUES (?)", [(x,) for x in texts])
    match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    found = conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match,)).fetchone()[0]
    conn.close()
    return bool(found)


def build() -> dict[str, object]:
    conversations = []
    questions = []
    for person in PEOPLE:
        texts: dict[str, str] = {}
        sessions = []
        for s, session in enumerate(person.sessions, start=1):
            start = datetime.fromisoformat(session.date)
            turns = []
            for t, text in enumerate(session.turns, start=1):
                tid = turn_id(person.id, s, t)
                texts[tid] = text
                turns.append(
                    {
                        "id": tid, "speaker": person.name if t % 2 == 1 else "assistant",
                        "role": "user" if t % 2 == 1 else "assistant",
                        "date": (start + timedelta(minutes=2 * (t - 1))).isoformat() + "Z",
                        "text": text,
                    },
                )  # fmt: skip
            sessions.append({"id": f"{person.id}-{s}", "date": session.date + "Z", "turns": turns})
        conversations.append({"id": person.id, "user": person.name, "sessions": sessions})
        for n, (kind, question, refs, answer) in enumerate(person.questions, start=1):
            ids = [ref_to_id(person, r) for r in refs]
            shared = shares_a_stem(question, [texts[i] for i in ids])
            where = f"{person.id} question {n} ({question!r})"
            if kind == "paraphrase" and shared:
                raise SystemExit(f"{where}: a paraphrase shares a word with its answer turns")
            if kind in ("single", "multi") and not shared:
                raise SystemExit(f"{where}: shares no word with its answers: call it paraphrase")
            if kind == "single" and len(ids) != 1:
                raise SystemExit(f"{where}: a single question needs exactly one answer turn")
            if kind == "multi" and len(ids) < 2:
                raise SystemExit(f"{where}: a multi question needs two or more answer turns")
            questions.append(
                {
                    "id": f"{person.id}-q{n:02d}", "conversation": person.id, "type": kind,
                    "question": question, "answer_ids": ids, "answer": answer,
                },
            )  # fmt: skip
    return {
        "name": "pmm-recall-v1",
        "description": (
            "Six people talking to an assistant over four dated sessions each. Questions ask "
            "for facts stated in the conversation: 'single' (one answer turn, shares words "
            "with it), 'multi' (two or more answer turns) and 'paraphrase' (no content word in "
            "common with its answer turns under FTS5's porter stemmer). Written by hand; "
            "generated by bench/data/make_recall_dataset.py."
        ),
        "conversations": conversations,
        "questions": questions,
    }


def main() -> None:
    data = build()
    out = HERE / "recall_dataset.json"
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    turns = sum(len(s["turns"]) for c in data["conversations"] for s in c["sessions"])  # type: ignore[attr-defined,index]
    kinds: dict[str, int] = {}
    for q in data["questions"]:  # type: ignore[attr-defined]
        kinds[q["type"]] = kinds.get(q["type"], 0) + 1
    print(
        f"wrote {out}: {len(data['conversations'])} conversations, {turns} turns, "  # type: ignore[arg-type]
        f"{len(data['questions'])} questions {kinds}"
    )  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
