"""audioqa-v2's words: sentence templates, vocabularies and question wordings, each split in two banks. Data only."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FACTS", "LANGUAGE_SENTENCES", "NUMBER_WORDS", "ORDER_WORDS", "PASSAGES", "REASONING", "SENTENCES",
           "WORDINGS", "VOCAB", "Fact", "Ask", "number_word"]

# The `shipped` bank makes audioqa-v2; the `heldout` bank (other sentences, other wordings, other words) makes the
# held-out sets that check the reference engine generalises (`generate.py --heldout`).
_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
NUMBER_WORDS = _ONES


def number_word(n: int) -> str:
    """0-99 in English words ("forty two")."""
    if n < 20:
        return _ONES[n]
    return _TENS[n // 10] + ("" if n % 10 == 0 else f" {_ONES[n % 10]}")


VOCAB: dict[str, tuple[str, ...]] = {
    "day": ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    "month": ("january", "february", "march", "april", "june", "july", "august", "october", "november",
              "december"),
    "color": ("red", "blue", "green", "yellow", "black", "white", "orange", "purple", "brown", "grey"),
    "city": ("paris", "london", "berlin", "madrid", "rome", "lisbon", "vienna", "dublin", "oslo", "prague",
             "boston", "chicago", "sydney", "tokyo"),
    "job": ("teacher", "doctor", "nurse", "pilot", "baker", "farmer", "lawyer", "engineer", "dentist", "chef",
            "painter", "driver"),
    "name": ("anna", "peter", "maria", "david", "sarah", "tom", "lucy", "james", "emma", "oliver", "kate",
             "daniel", "laura", "mark", "helen", "paul"),
    "surname": ("brown", "smith", "miller", "green", "taylor", "walker", "wilson", "clark", "hill", "young"),
    "relative": ("sister", "brother", "cousin", "uncle", "aunt", "neighbour", "friend"),
    "street": ("green", "park", "river", "station", "church", "market", "oak", "hill", "mill", "bridge"),
    "animal": ("cat", "dog", "rabbit", "horse", "parrot", "hamster", "goat", "duck"),
    "instrument": ("piano", "guitar", "violin", "drums", "flute", "trumpet", "cello"),
    "venue": ("park", "church", "library", "garden", "stadium", "theatre"),
    "things": ("euros", "apples", "stamps", "cookies", "marbles", "books", "pencils", "eggs", "oranges", "cards",
               "candles", "tickets"),
}


@dataclass(frozen=True)
class Ask:
    """One question about a slot of a sentence: how it is scored and its wordings."""

    slot: str
    scoring: str  # "exact" or "numeric"
    wordings: tuple[str, ...]
    variants: tuple[str, ...] = ()  # accepted answers beside the slot's value ("{value} street")


@dataclass(frozen=True)
class Fact:
    """A sentence with {slots} filled from VOCAB (or numbers), and the questions it answers."""

    text: str
    asks: tuple[Ask, ...]
    numbers: tuple[tuple[str, int, int], ...] = ()  # (slot, low, high): a number slot said in words


_FACTS_SHIPPED = (
    Fact("The meeting moved to {day} at {hour} o'clock.",
         (Ask("day", "exact", ("On which day of the week is the meeting?", "Which day is the meeting on?")),
          Ask("hour", "numeric", ("At what hour is the meeting?", "At what time is the meeting?"))),
         numbers=(("hour", 1, 11),)),
    Fact("Please bring the {color} folder to room {num}.",
         (Ask("color", "exact", ("What colour is the folder?", "Which colour is the folder that must be brought?")),
          Ask("num", "numeric", ("To which room number should the folder go?",
                                 "Which room should the folder be brought to?"))),
         numbers=(("num", 2, 40),)),
    Fact("My {relative} lives in {city} and works as a {job}.",
         (Ask("job", "exact", ("What is the {relative}'s job?", "What does the {relative} work as?")),
          Ask("city", "exact", ("In which city does the {relative} live?", "Where does the {relative} live?")))),
    Fact("The train to {city} leaves from platform {num}.",
         (Ask("num", "numeric", ("Which platform does the train leave from?",
                                 "From which platform does the train to {city} depart?")),
          Ask("city", "exact", ("Where is the train going?", "What is the destination of the train?"))),
         numbers=(("num", 1, 19),)),
    Fact("The bank is next to the bakery on {street} Street.",
         (Ask("street", "exact", ("What is the name of the street?", "On which street is the bank?"),
              variants=("{street} street",)),)),
    Fact("{name} bought a {color} bicycle in {month}.",
         (Ask("name", "exact", ("Who bought a bicycle?", "Who is the buyer of the bicycle?")),
          Ask("color", "exact", ("What colour is the bicycle?", "What colour is the new bicycle?")),
          Ask("month", "exact", ("In which month was the bicycle bought?",)))),
    Fact("The concert starts at {hour} o'clock in the {venue}.",
         (Ask("hour", "numeric", ("At what hour does the concert start?", "At what time does the concert begin?")),
          Ask("venue", "exact", ("Where is the concert?", "In which place is the concert held?"))),
         numbers=(("hour", 1, 11),)),
    Fact("Our flight to {city} departs on {day} morning.",
         (Ask("city", "exact", ("Where is the flight going?", "To which city is the flight?")),
          Ask("day", "exact", ("On which day does the flight depart?", "Which day is the flight?")))),
    Fact("{name} plays the {instrument} in a small band.",
         (Ask("instrument", "exact", ("Which instrument does {name} play?", "What instrument is played?")),
          Ask("name", "exact", ("Who plays in the band?", "Which person plays in the band?")))),
    Fact("The {animal} is sleeping under the kitchen table.",
         (Ask("animal", "exact", ("Which animal is sleeping under the table?", "What animal is under the table?")),)),
    Fact("The museum is closed on {day} for cleaning.",
         (Ask("day", "exact", ("On which day is the museum closed?", "Which day of the week is the museum shut?")),)),
    Fact("Doctor {surname} will see you in room {num}.",
         (Ask("surname", "exact", ("Which doctor will see you?", "What is the doctor's name?")),
          Ask("num", "numeric", ("In which room will the doctor see you?", "Which room number is it?"))),
         numbers=(("num", 2, 30),)),
    Fact("I parked the car on level {num} of the garage.",
         (Ask("num", "numeric", ("On which level is the car parked?", "Which level of the garage is the car on?")),),
         numbers=(("num", 1, 9),)),
    Fact("The library book is due back on {day}.",
         (Ask("day", "exact", ("On which day is the book due?", "When is the library book due back, which day?")),)),
)

_FACTS_HELDOUT = (
    Fact("The dentist appointment is on {day} at {hour} o'clock.",
         (Ask("day", "exact", ("What day is the dentist appointment?",)),
          Ask("hour", "numeric", ("What time is the appointment?",))),
         numbers=(("hour", 1, 11),)),
    Fact("Her {relative} moved to {city} to work as a {job}.",
         (Ask("job", "exact", ("What job does her {relative} do?",)),
          Ask("city", "exact", ("Which city did her {relative} move to?",)))),
    Fact("Gate {num} is where the flight to {city} boards.",
         (Ask("num", "numeric", ("Which gate does the flight board at?",)),
          Ask("city", "exact", ("What city is the flight going to?",))),
         numbers=(("num", 2, 30),)),
    Fact("The {color} umbrella belongs to {name}.",
         (Ask("name", "exact", ("Whose umbrella is it?",)),
          Ask("color", "exact", ("Tell me the colour of the umbrella.",)))),
    Fact("{name} feeds the {animal} every morning.",
         (Ask("animal", "exact", ("Which animal gets fed every morning?",)),)),
    Fact("The swimming pool opens at {hour} o'clock on {day}.",
         (Ask("hour", "numeric", ("At what time does the pool open?",)),
          Ask("day", "exact", ("Name the day on which the pool opens.",))),
         numbers=(("hour", 1, 11),)),
)

FACTS = {"shipped": _FACTS_SHIPPED, "heldout": _FACTS_HELDOUT}

# Reasoning: (sentence, question wordings, rule) with {a}, {b} numbers said in words and {A} {B} {C} names;
# the rule computes the answer from a and b (or names the person).
REASONING = {
    "shipped": (
        ("I had {a} {things} and {sub} {b} of them.", ("How many {things} are left?",
                                                       "How many {things} does the speaker still have?"), "a-b"),
        ("There are {a} boxes, and each box holds {b} {things}.",
         ("How many {things} are there in total?", "How many {things} are there altogether?"), "a*b"),
        ("{name} had {a} {things} and then bought {b} more.",
         ("How many {things} does {name} have now?", "How many {things} does {name} have in total?"), "a+b"),
        ("Each ticket costs {a} euros, and we need {b} tickets.",
         ("How many euros do the tickets cost in total?", "What is the total price in euros?"), "a*b"),
        ("{A} has {a} {things}, and {B} has {b} {things}.",
         ("How many more {things} does {A} have than {B}?",), "a-b"),
        ("{A} is older than {B}, and {B} is older than {C}.",
         ("Who is the youngest of the three people?", "Who is the oldest of the three?"), "chain"),
        ("{A} is taller than {B}, and {B} is taller than {C}.",
         ("Who is the tallest of the three?", "Who is the shortest of the three people?"), "chain"),
    ),
    "heldout": (
        ("We started with {a} {things} and used {b} of them.", ("How many {things} remain?",), "a-b"),
        ("Every shelf has {b} {things}, and there are {a} shelves.", ("What is the total number of {things}?",),
         "a*b"),
        ("{A} is younger than {B}, and {C} is younger than {A}.", ("Who is the oldest person?",), "chain"),
        ("{name} collected {a} {things} on Monday and {b} more on Tuesday.",
         ("How many {things} were collected altogether?",), "a+b"),
    ),
}
SUBTRACT_VERBS = ("spent", "ate", "gave away", "lost", "sold")

PASSAGES = {
    "shipped": (
        ("On Saturday morning, Lucy walked to the old market with her cousin Daniel. They wanted vegetables for "
         "a big family lunch. Lucy chose four red peppers and a bag of potatoes, while Daniel looked for fresh "
         "bread. A friendly baker gave them two extra rolls for free. They paid fifteen euros in total and carried "
         "everything home before the rain started.",
         (("content", "exact", "On which day did Lucy go to the market?", "saturday"),
          ("content", "exact", "What is the name of Lucy's cousin?", "daniel"),
          ("content", "numeric", "How many red peppers did Lucy choose?", "4"),
          ("reasoning", "numeric", "How many euros did they pay in total?", "15"))),
        ("In March, the school choir travelled by coach to Vienna for a music festival. Forty singers and three "
         "teachers made the journey. The trip took nine hours, with one long stop for lunch. On the first evening "
         "the choir sang in a small church near the river, and the audience asked for two more songs.",
         (("content", "exact", "In which month did the choir travel?", "march"),
          ("content", "exact", "To which city did the choir travel?", "vienna"),
          ("content", "numeric", "How many hours did the trip take?", "9"),
          ("content", "numeric", "How many singers made the journey?", "40"))),
    ),
    "heldout": (
        ("Last Wednesday, Oliver caught the late train to the coast. He wanted to see the old lighthouse that his "
         "grandfather had painted many years ago. At the station he met a fisherman called Samuel, who showed him "
         "the way along the cliffs. Oliver took twelve photographs and bought a small blue boat made of wood.",
         (("content", "exact", "What was the fisherman called?", "samuel"),
          ("content", "numeric", "How many photographs did Oliver take?", "12"),
          ("content", "exact", "What colour was the wooden boat?", "blue"))),
    ),
}

# Neutral sentences for clips whose words do not matter (speaker, channel, timing, presence, count, rate).
SENTENCES = {
    "shipped": (
        "The weather will be sunny tomorrow.", "Good morning, everyone.", "We will leave for the station after lunch.",
        "Please close the door when you leave.", "The shop opens again next week.", "I would like a cup of tea.",
        "The children are playing in the garden.", "Our neighbours bought a new car.", "It is a long way to the city.",
        "The river is very cold in winter.", "She reads the newspaper every morning.", "The bus was late again today.",
        "He forgot his keys at the office.", "Dinner will be ready in ten minutes.", "The garden looks lovely in spring.",
        "We watched a film last night.", "The phone rang twice during dinner.", "They painted the kitchen yellow.",
        "Turn left at the end of the road.", "The lecture starts after the break.",
    ),
    "heldout": (
        "The post office is around the corner.", "My brother plays football on Sundays.",
        "Please speak a little more slowly.", "The coffee machine is broken again.", "We are going to the beach.",
        "The old bridge was built long ago.", "Remember to water the plants.", "The cinema is full tonight.",
    ),
}

LANGUAGE_SENTENCES = {
    "shipped": {
        "de": ("Guten Morgen. Wie geht es Ihnen heute?", "Das Wetter ist heute sehr schön und warm.",
               "Ich möchte gern eine Tasse Kaffee trinken.", "Der Zug nach Hamburg fährt um acht Uhr ab.",
               "Wir gehen am Wochenende in den Wald spazieren."),
        "es": ("Buenos días. ¿Cómo está usted hoy?", "Hace muy buen tiempo esta mañana.",
               "Me gustaría comer una paella con mis amigos.", "El tren a Madrid sale a las ocho.",
               "Los niños juegan en el parque todos los días."),
        "fr": ("Bonjour. Comment allez-vous aujourd'hui?", "Il fait très beau ce matin.",
               "Je voudrais un café et un croissant, s'il vous plaît.", "Le train pour Paris part à huit heures.",
               "Nous allons à la plage cet après-midi."),
        "it": ("Buongiorno. Come sta oggi?", "Oggi il tempo è molto bello.",
               "Vorrei un caffè e una brioche, per favore.", "Il treno per Roma parte alle otto.",
               "I bambini giocano nel giardino ogni giorno."),
        "en": ("Good morning. How are you today?", "The weather is very nice and warm today.",
               "I would like to drink a cup of coffee.", "The train to Boston leaves at eight o'clock.",
               "We are going for a walk in the forest at the weekend."),
    },
    "heldout": {
        "de": ("Meine Schwester wohnt in einer kleinen Stadt.", "Kannst du mir bitte das Salz geben?"),
        "es": ("Mi hermana vive en una ciudad pequeña.", "¿Puedes pasarme la sal, por favor?"),
        "fr": ("Ma soeur habite dans une petite ville.", "Peux-tu me passer le sel, s'il te plaît?"),
        "it": ("Mia sorella abita in una piccola città.", "Puoi passarmi il sale, per favore?"),
        "en": ("My sister lives in a small town.", "Could you pass me the salt, please?"),
    },
}

ORDER_WORDS = {
    "shipped": ("apple", "banana", "cherry", "orange", "lemon", "mango", "tiger", "rabbit", "monkey", "zebra",
                "camel", "dolphin", "window", "pencil", "candle", "garden", "river", "mountain"),
    "heldout": ("hammer", "ladder", "basket", "button", "kitten", "pepper", "carrot", "guitar", "rocket"),
}

# Question wordings per kind and variant; `{n}`-style slots are filled by the kind's builder.
WORDINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "shipped": {
        "count": ("How many beeps do you hear?", "How many times does the tone sound?",
                  "Count the beeps in this recording. How many are there?", "How many short tones are in this clip?",
                  "How many beeps are there in total?", "What is the number of beeps you can hear?"),
        "pitch_high2": ("Two tones play one after the other. Which tone is higher in pitch, the first or the second?",
                        "Which of the two tones has the higher pitch: the first or the second?",
                        "Which note sounds higher, the first one or the second one?"),
        "pitch_low2": ("Two tones play one after the other. Which tone is lower in pitch, the first or the second?",
                       "Is the first or the second tone lower?",
                       "Which of the two notes has the lower pitch, the first or the second?"),
        "pitch_high3": ("Three tones play in a row. Which one is the highest: the first, the second or the third?",),
        "pitch_low3": ("Which of the three notes is lowest, the first, the second or the third?",),
        "frequency": ("What is the frequency of the tone, in hertz?", "What frequency is this tone, in Hz?",
                      "At what frequency does the tone sound, in hertz?", "Estimate the pitch of this tone in hertz."),
        "duration": ("How long does the tone last, in seconds?", "What is the duration of the beep in seconds?",
                     "For how many seconds does the tone play?"),
        "longer": ("Which tone is longer, the first or the second?",
                   "Which beep lasts longer: the first or the second?"),
        "shorter": ("Is the first or the second tone shorter?", "Which of the two beeps is shorter, the first or the second?"),
        "length": ("About how many seconds long is this recording?", "How long is this recording, in seconds?"),
        "sweep": ("Is the pitch of this sweep rising or falling?", "Is this a rising or a falling sweep?"),
        "updown": ("Does the tone go up or down in pitch?", "Does the melody go up or down?"),
        "louder": ("Which beep is louder, the first or the second?", "Which of the two tones is louder: the first or the second?"),
        "quieter": ("Which of the two tones is quieter, the first or the second?", "Is the first or the second beep softer?"),
        "loudest3": ("Which beep is the loudest: the first, the second or the third?",),
        "speech": ("Does this recording contain human speech? Answer yes or no.",
                   "Is anyone speaking in this clip? Answer yes or no.", "Can you hear a voice in this recording? Yes or no?",
                   "Is there speech in this audio? Answer yes or no."),
        "speech_or_noise": ("Is this speech or just noise?",),
        "silent_or_sound": ("Is this recording silent, or can you hear a sound?",),
        "any_sound": ("Is there any sound at all in this clip? Answer yes or no.",
                      "Does this recording contain any sound? Yes or no?"),
        "all_silent": ("Is this audio completely silent? Answer yes or no.",),
        "channel": ("Is the {thing} in the left channel or the right channel?",
                    "From which side does the {thing} come, left or right?",
                    "Which ear hears the {thing}, the left or the right?"),
        "channel3": ("Is the {thing} in the left channel, the right channel, or both?",),
        "onset_speech": ("After how many seconds does the speech start?",
                         "When does the speaker begin talking, in seconds from the start?",
                         "How long is the silence before the speech begins, in seconds?"),
        "onset_beep": ("How many seconds into the recording does the beep start?",
                       "At what time, in seconds, does the tone begin?"),
        "after": ("Which word is spoken right after the beep: {choices}?", "What word follows the beep: {choices}?"),
        "before": ("Which word is spoken right before the beep: {choices}?",
                   "Which word is said just before the tone: {choices}?"),
        "sex": ("Is the speaker male or female?", "Is the voice a man or a woman?",
                "Does a man or a woman speak in this recording?", "What is the gender of the speaker: male or female?"),
        "people": ("How many different people speak in this recording?", "How many speakers are there?",
                   "How many different voices do you hear?"),
        "faster": ("The same sentence is spoken twice. Is it spoken faster the first time or the second time?",
                   "Is the speech quicker the first time or the second time?"),
        "slower": ("Which time is the sentence said more slowly, the first or the second?",),
        "language": ("Which language is spoken: English, German, Spanish, French or Italian?",
                     "In which language is this recording: English, German, Spanish, French or Italian?",
                     "What language does the speaker use: English, German, Spanish, French or Italian?"),
    },
    "heldout": {
        "count": ("How many pips can you count?", "Count the tones: how many are there?",
                  "How many separate beeps does the recording contain?", "Tell me how many bleeps you hear."),
        "pitch_high2": ("You hear two notes. Which has the higher pitch, the first or the second?",),
        "pitch_low2": ("Which tone is deeper, the first or the second?",),
        "pitch_high3": ("Of the three tones, which is the highest, the first, the second or the third?",),
        "pitch_low3": ("Of the three tones, which is the lowest: the first, the second or the third?",),
        "frequency": ("Roughly what frequency, in hertz, is the tone?", "Give the tone's frequency in Hz."),
        "duration": ("How many seconds is the tone held?", "Tell me the length of the beep in seconds."),
        "longer": ("Which of the two tones is held longer, the first or the second?",),
        "shorter": ("Which beep is briefer, the first or the second?",),
        "length": ("What is the total length of this clip in seconds?",),
        "sweep": ("Is the sweep ascending or descending?",),
        "updown": ("Do the notes move up or down?",),
        "louder": ("Which tone has more volume, the first or the second?",),
        "quieter": ("Which beep is played more softly, the first or the second?",),
        "loudest3": ("Of the three beeps, which is the quietest: the first, the second or the third?",),
        "speech": ("Is a person talking in this recording? Answer yes or no.", "Do you hear any spoken words? Yes or no.",
                   "Does someone say something in this clip? Answer yes or no."),
        "speech_or_noise": ("Is this a voice or only noise?",),
        "silent_or_sound": ("Is the recording silent, or is there a sound?",),
        "any_sound": ("Can you hear anything in this recording? Answer yes or no.",),
        "all_silent": ("Is this clip completely quiet? Answer yes or no.",),
        "channel": ("Does the {thing} come from the left speaker or the right speaker?", "On which side is the {thing}, left or right?"),
        "channel3": ("Is the {thing} on the left, on the right, or on both sides?",),
        "onset_speech": ("How many seconds pass before someone starts speaking?", "When does the voice start, in seconds?"),
        "onset_beep": ("At which second does the beep come in?",),
        "after": ("Right after the beep, which word do you hear: {choices}?",),
        "before": ("Which word precedes the beep: {choices}?",),
        "sex": ("Is the person speaking a man or a woman?", "Would you say the voice is male or female?"),
        "people": ("How many distinct talkers are in this clip?", "How many persons are speaking here?"),
        "faster": ("The sentence is repeated. Which rendition is faster, the first or the second?",),
        "slower": ("When is the speaker talking more slowly: the first time or the second time?",),
        "language": ("Name the language you hear: English, German, Spanish, French or Italian.",),
    },
}
