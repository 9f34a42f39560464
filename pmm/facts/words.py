"""Word lists the fact rules use: jobs, relatives, pets, and words that look like names but
are not (states, nationalities, days). All lower case.

    >>> "tired" in NOT_NAMES, "teacher" in JOBS, PET_KIND["retriever"]
    (True, True, 'dog')
"""

from __future__ import annotations

from pmm.text.words import STOPWORDS

_STATES = """
sorry fine good great ok okay here there back done ready sure happy sad tired not just so very
really going gonna still also always never afraid glad excited hungry thirsty busy free home
alone late early curious confused interested trying looking thinking working learning
planning hoping wondering using exhausted thrilled bored worried stressed scared nervous
angry upset lost sleepy sick ill well better worse fantastic awesome amazing cool alright
delighted pleased grateful thankful lucky proud ashamed embarrassed annoyed frustrated
overwhelmed relieved surprised shocked impressed disappointed satisfied afraid certain
positive sceptical skeptical new old young single married divorced engaged pregnant retired
unemployed online offline available away out in on off over almost about like totally
absolutely literally honestly kind sort quite pretty rather somewhat currently now
""".split()
_NATIONALITIES = """
english american british french german spanish portuguese italian chinese japanese indian
canadian australian irish scottish welsh dutch swedish russian brazilian mexican hungarian
polish czech slovak austrian swiss belgian danish norwegian finnish icelandic greek turkish
egyptian nigerian kenyan ghanaian ethiopian moroccan algerian tunisian south african
argentinian argentine chilean colombian peruvian venezuelan cuban korean vietnamese thai
filipino indonesian malaysian pakistani bangladeshi iranian iraqi israeli lebanese syrian
saudi ukrainian romanian bulgarian serbian croatian bosnian slovenian albanian lithuanian
latvian estonian asian european african latino latina hispanic arab jewish muslim christian
hindu buddhist catholic protestant orthodox sikh atheist agnostic vegan vegetarian
""".split()
_TIME = """
monday tuesday wednesday thursday friday saturday sunday january february march april may
june july august september october november december today tomorrow yesterday tonight
""".split()

NOT_NAMES = frozenset(_STATES + _NATIONALITIES + _TIME) | STOPWORDS
"""First words that make a capitalised run after "I'm" something other than a name."""

NOT_PLACES = frozenset(_TIME + "here there home work school bed church".split()) | STOPWORDS
"""First words that make a capitalised run after "I live in" something other than a place."""

JOBS = frozenset(
    """
engineer developer programmer coder teacher doctor nurse student designer lawyer attorney
writer author editor manager scientist researcher accountant chef cook baker artist musician
photographer consultant architect pilot farmer journalist professor lecturer tutor pharmacist
dentist mechanic electrician plumber carpenter builder welder analyst founder entrepreneur
translator interpreter librarian therapist psychologist psychiatrist physiotherapist
veterinarian vet firefighter surgeon physician paramedic midwife barista waiter waitress
bartender cashier driver secretary receptionist banker economist biologist chemist physicist
mathematician statistician officer soldier policeman actor actress singer dancer painter
sculptor poet novelist blogger coach trainer instructor clerk technician administrator ceo
cto cfo director executive intern freelancer contractor tester sysadmin gardener florist
butcher tailor hairdresser barber cleaner janitor fisherman sailor optician surveyor realtor
broker trader investor auditor judge paralegal marketer recruiter housewife homemaker
caregiver carer social worker postman miner
""".split()
)
"""Nouns that make "I'm a/an ..." a job."""

NOT_JOBS = frozenset(
    """beginner member believer lover fan user customer player owner foreigner stranger
    newcomer winner loser fighter survivor supporter follower listener reader viewer speaker
    learner partner visitor traveller traveler dreamer thinker worrier perfectionist optimist
    pessimist realist introvert extrovert christian vegetarian brother sister mother father
    daughter grandmother grandfather other order answer matter number corner computer
    character monster disaster letter paper power water summer winter weather river
    tourist guardian civilian indian canadian""".split()
)
"""Words ending like a job title (-er, -or, -ist, -ian) that are not one ("I'm a beginner")."""

FAMILY = frozenset(
    """
wife husband partner spouse son daughter brother sister mother father mom mum dad mommy
daddy grandma grandmother grandpa grandfather grandson granddaughter aunt uncle cousin niece
nephew fiancé fiancée fiance fiancee girlfriend boyfriend friend boss roommate flatmate kid
child baby stepson stepdaughter stepmother stepfather twin grandchild
granddad granny
""".split()
)
"""Relatives and close people whose names are worth keeping (``sister's name``)."""

PET_KIND = {
    **{
        pet: pet
        for pet in """dog cat puppy kitten hamster rabbit bunny parrot bird fish goldfish horse
        pony turtle tortoise snake lizard ferret gecko budgie canary cockatiel parakeet guinea
        chinchilla hedgehog""".split()
    },
    **{
        breed: "dog"
        for breed in """retriever labrador lab poodle terrier beagle spaniel bulldog husky collie
        dachshund chihuahua pug corgi rottweiler greyhound schnauzer sheepdog shepherd
        doberman dalmatian""".split()
    },
    **{breed: "cat" for breed in "tabby siamese persian".split()},
}
"""Pet nouns and breeds, each with the kind the fact is filed under (``dog's name``)."""

RELATIVE_MODIFIERS = frozenset(
    "best older younger little big baby eldest youngest oldest twin new old".split()
)

WEAK_OBJECTS = frozenset(
    """it that this these those them you your yours him her he she they when how what if
    whatever which there here myself yourself everything something anything nothing""".split()
)
"""First words of a like/dislike object that is not a preference ("I love it")."""

WEAK_VERBS = frozenset(
    """think say help know hear see ask be have get go talk chat mention add point believe
    imagine admit hear read_that tell""".split()
)
"""``to <verb>`` objects of like/love that are politeness, not hobbies ("I like to think")."""
