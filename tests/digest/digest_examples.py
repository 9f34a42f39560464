"""Ten realistic turns, each with the names and numbers its summary must keep.

Each turn wraps its facts in small talk, so a summary that keeps the first N characters, or
drops the specifics, fails."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    role: str
    text: str
    facts: tuple[str, ...]
    """Names and numbers, as written in ``text``, that the summary must keep."""


EXAMPLES: tuple[Example, ...] = (
    Example(
        "user",
        "Hi again! Thanks for all the help yesterday, it really made my week a lot easier. "
        "Quick update on my side: I moved to Lisbon in March 2021 with my partner Ana, and we "
        "rent a flat in Alfama for 1,450 euros a month. Anyway, hope you are doing well today.",
        ("Lisbon", "March 2021", "Ana", "Alfama", "1,450"),
    ),
    Example(
        "user",
        "Okay so here's the thing, I've been thinking about this for a while and wanted to tell "
        "you about it. My daughter Maria turns 7 on 4 September and she is obsessed with "
        "horses. It would be really nice if you could help me out with this later on.",
        ("Maria", "7", "4 September", "horses"),
    ),
    Example(
        "assistant",
        "Sure, happy to help with that! Based on your schedule, the best option is the 8:15 "
        "train from Santa Apolónia to Porto on Saturday, which costs 31 euros. Let me know if "
        "there is anything else you would like me to look into, I am always glad to help out.",
        ("8:15", "Santa Apolónia", "Porto", "Saturday", "31"),
    ),
    Example(
        "user",
        "Just so you know, and this matters for all future recipes: I'm allergic to peanuts "
        "and I prefer green tea over coffee. Dr. Okafor confirmed the allergy in 2019. Other "
        "than that I am pretty easy going about food, so don't worry about it too much, really.",
        ("peanuts", "green tea", "Okafor", "2019"),
    ),
    Example(
        "user",
        "Work has been crazy lately, as you can probably imagine from my last few messages. "
        "The Kafka migration at Feedzai has a hard deadline of 14 June, and my manager Priya "
        "wants 3 dashboards by then. I really don't know how we are going to make it, honestly.",
        ("Kafka", "Feedzai", "14 June", "Priya", "3 dashboards"),
    ),
    Example(
        "assistant",
        "Great question! There are a few things to consider here before you buy anything. For "
        "your budget of $2,500, I'd recommend the ThinkPad X1 Carbon, which weighs 1.08 kg and "
        "has 32 GB of RAM. I hope this helps, and feel free to ask any follow-up questions.",
        ("$2,500", "ThinkPad X1 Carbon", "1.08", "32 GB"),
    ),
    Example(
        "user",
        "Hmm, let me think about how to put this. I'm running the Berlin Marathon on 29 "
        "September and want to finish under 3:45. My coach Jonas says 5 runs per week. It is "
        "a lot of work but I'm quite excited about it, and a little scared too, to be fair.",
        ("Berlin Marathon", "29 September", "3:45", "Jonas", "5 runs"),
    ),
    Example(
        "assistant",
        "Thanks for sharing that with me, it sounds like a stressful situation overall. To "
        "recap: your lease with Habitat Properties ends on 31 January 2025, and the notice "
        "period is 60 days. I'm happy to go through anything else with you if that is useful.",
        ("Habitat Properties", "31 January 2025", "60 days"),
    ),
    Example(
        "user",
        "Good morning! I hope you slept well, if that is even a thing for you, ha. My brother "
        "Tomás is visiting from Buenos Aires next week with his 2 kids, landing at 6:40 on "
        "Tuesday. We still need to figure out where everyone sleeps in our small apartment.",
        ("Tomás", "Buenos Aires", "2 kids", "6:40", "Tuesday"),
    ),
    Example(
        "user",
        "OK, I have some news to share with you today, and it's a big one for me. I finally "
        "got the job offer from Siemens in Munich: the salary is 78,000 euros and I start on "
        "1 October. I'm still a bit nervous about it, but mostly relieved that it worked out.",
        ("Siemens", "Munich", "78,000", "1 October"),
    ),
)
