"""Everyday filler turns for the recall set: the small asks that fill real chats.

Each family writes one turn (user message, tool steps, answer) from many phrasings and
values, with correct results (conversions, sums and dates are computed against the
turn's own time). Fillers share words with the questions on purpose - the to-do about the
kennel, the sum about the party - so that matching words alone is not enough, but no
filler states a fact that a question asks about.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

GBP_PER_EUR = 0.84


def _pick(rng: random.Random, options):
    return options[rng.randrange(len(options))]


def _money(value: float) -> str:
    return f"{value:,.2f}".removesuffix(".00")


# --- kitchen ------------------------------------------------------------------------

GRAMS_PER_CUP = {"plain flour": 125, "caster sugar": 200, "brown sugar": 220,
                 "butter": 227, "rolled oats": 90, "basmati rice": 185, "icing sugar": 120,
                 "grated cheddar": 100, "chopped walnuts": 120, "red lentils": 190,
                 "frozen peas": 145, "cocoa powder": 85, "honey": 340, "self-raising flour": 125}
CUPS = [("1/4", 0.25), ("1/3", 1 / 3), ("1/2", 0.5), ("2/3", 2 / 3), ("3/4", 0.75),
        ("1", 1.0), ("1 1/2", 1.5), ("2", 2.0), ("2 1/2", 2.5), ("3", 3.0)]


def kitchen_convert(rng, now, topic):
    ingredient = _pick(rng, list(GRAMS_PER_CUP))
    label, cups = _pick(rng, CUPS)
    grams = round(GRAMS_PER_CUP[ingredient] * cups)
    unit = "cup" if cups <= 1 else "cups"
    user = _pick(rng, [
        f"how many grams is {label} {unit} of {ingredient}?",
        f"american recipe wants {label} {unit} {ingredient}, what's that in grams",
        f"{label} {unit} of {ingredient} in grams please",
        f"Can you convert {label} {unit} of {ingredient} to grams? I don't own cup measures",
        f"quick conversion - {label} {unit} {ingredient} -> g?",
        f"what does {label} {unit} of {ingredient} weigh",
    ])
    steps = [{"tool": "convert_units", "input": f"{label} {unit} {ingredient} to g",
              "observation": f"{label} {unit} {ingredient} = {grams} g"}]
    answer = _pick(rng, [
        f"About {grams} g. Cup weights vary with how you pack it, so treat it as a guide.",
        f"That's roughly {grams} g of {ingredient}.",
        f"{label} {unit} of {ingredient} is about {grams} g - near enough for most recipes.",
        f"Around {grams} g. If it's for baking, weighing it will be more reliable than the "
        "cup ever was.",
    ])
    return user, steps, answer


def oven(rng, now, topic):
    fahrenheit = _pick(rng, [325, 340, 350, 360, 375, 400, 425, 450])
    celsius = round((fahrenheit - 32) * 5 / 9)
    fan = celsius - 20
    user = _pick(rng, [
        f"recipe says {fahrenheit}F what is that for my fan oven",
        f"{fahrenheit} fahrenheit in celsius?",
        f"What's {fahrenheit}°F in C? It's a fan oven if that matters",
        f"convert {fahrenheit} F to C pls",
        f"the packet says bake at {fahrenheit} degrees, that's american right? what's it for us",
    ])
    steps = [{"tool": "convert_units", "input": f"{fahrenheit} F to C",
              "observation": f"{fahrenheit} °F = {celsius} °C"}]
    answer = _pick(rng, [
        f"{fahrenheit}°F is about {celsius}°C, so around {fan}°C in a fan oven.",
        f"That's {celsius}°C conventional. For a fan oven knock off about 20 degrees: "
        f"{fan}°C.",
        f"About {celsius}°C - or {fan}°C fan. Check it a few minutes early the first time.",
    ])
    return user, steps, answer


def ounces(rng, now, topic):
    ounces_ = _pick(rng, [2, 3, 4, 5, 6, 8, 10, 12, 14, 16])
    ingredient = _pick(rng, ["butter", "dark chocolate", "cheese", "pasta", "mince",
                             "spinach", "flour", "sugar", "ground almonds", "parmesan"])
    grams = round(ounces_ * 28.35)
    user = _pick(rng, [
        f"{ounces_} oz of {ingredient} in grams?",
        f"how much is {ounces_}oz {ingredient} in g",
        f"Old recipe of my nan's says {ounces_} oz {ingredient}. Grams?",
        f"convert {ounces_} ounces to grams, it's {ingredient}",
    ])
    steps = [{"tool": "convert_units", "input": f"{ounces_} oz to g",
              "observation": f"{ounces_} oz = {grams} g"}]
    answer = _pick(rng, [f"{ounces_} oz is {grams} g.",
                         f"That's {grams} g of {ingredient}.",
                         f"About {grams} g (an ounce is 28.35 g)."])
    return user, steps, answer


RECIPE_SETS = [
    (["chickpeas", "spinach", "coconut milk"],
     ["Chickpea and spinach curry", "Coconut dal with greens", "Chana saag"]),
    (["leftover chicken", "rice", "peas"],
     ["Chicken fried rice", "Chicken and pea risotto", "Egg-fried rice with chicken"]),
    (["eggs", "potatoes", "onion"],
     ["Spanish tortilla", "Potato hash with fried eggs", "Frittata"]),
    (["mince", "kidney beans", "tinned tomatoes"],
     ["Chilli con carne", "Beef and bean burritos", "Cottage pie with beans"]),
    (["halloumi", "courgette", "couscous"],
     ["Halloumi couscous salad", "Griddled halloumi with courgette ribbons",
      "Roast veg and halloumi traybake"]),
    (["salmon", "broccoli", "soy sauce"],
     ["Teriyaki salmon with broccoli", "Salmon noodle stir-fry", "Soy-glazed salmon bowls"]),
    (["sausages", "lentils", "carrots"],
     ["Sausage and lentil casserole", "One-pot sausage and lentil stew",
      "Sausages with braised lentils"]),
    (["tofu", "peppers", "noodles"],
     ["Crispy tofu noodles", "Sweet chilli tofu stir-fry", "Tofu pad see ew"]),
    (["bananas", "oats", "yoghurt"],
     ["Banana oat muffins", "Overnight oats", "Banana oat pancakes"]),
    (["butternut squash", "feta", "pasta"],
     ["Roast squash and feta pasta", "Squash and sage pasta bake", "Squash orzo with feta"]),
    (["tortillas", "black beans", "sweetcorn"],
     ["Black bean quesadillas", "Bean and sweetcorn enchiladas", "Burrito bowls"]),
    (["cauliflower", "potatoes", "curry paste"],
     ["Aloo gobi", "Cauliflower and potato curry", "Spiced cauliflower traybake"]),
]


def recipes(rng, now, topic):
    have, found = _pick(rng, RECIPE_SETS)
    listed = ", ".join(have[:-1]) + " and " + have[-1]
    user = _pick(rng, [
        f"what can i make with {listed}",
        f"I've got {listed} to use up, ideas?",
        f"anything quick with {listed}? need it on the table in half an hour",
        f"fridge has {listed}. inspire me",
        f"dinner idea using {listed}?",
    ])
    steps = [{"tool": "find_recipes", "input": ", ".join(have),
              "observation": "; ".join(found)}]
    answer = _pick(rng, [
        f"A few that fit: {found[0]}, {found[1]} or {found[2]}. The first is the quickest.",
        f"You could do {found[0]} - or if you fancy something different, {found[1]}. "
        f"{found[2]} also works.",
        f"{found[0]} would use all of it. {found[1]} and {found[2]} are the other options "
        "I found.",
    ])
    return user, steps, answer


# --- money and numbers ---------------------------------------------------------------

def travel_money(rng, now, topic):
    if rng.random() < 0.55:
        euros = _pick(rng, [3.5, 8, 12, 14.5, 18, 22, 27, 35, 48, 60, 75, 95, 120, 180, 240])
        pounds = round(euros * GBP_PER_EUR, 2)
        user = _pick(rng, [f"€{_money(euros)} in pounds?", f"how much is {_money(euros)} euros",
                           f"what's {_money(euros)} EUR in GBP roughly",
                           f"convert €{_money(euros)} to £"])
        steps = [{"tool": "convert_units", "input": f"{_money(euros)} EUR to GBP",
                  "observation": f"{_money(euros)} EUR = {pounds:.2f} GBP"}]
        answer = _pick(rng, [f"About £{pounds:.2f}.",
                             f"Roughly £{pounds:.2f} at today's rate - your card may add a "
                             "small fee.",
                             f"€{_money(euros)} is about £{pounds:.2f}."])
    else:
        km = _pick(rng, [1.2, 2.5, 3, 4.8, 6, 8.5, 12, 15, 23, 28, 40])
        miles = round(km * 0.621371, 1)
        user = _pick(rng, [f"{km} km in miles?", f"how far is {km}km in miles",
                           f"is {km} km walkable? what's that in miles"])
        steps = [{"tool": "convert_units", "input": f"{km} km to mi",
                  "observation": f"{km} km = {miles} mi"}]
        answer = _pick(rng, [f"{km} km is about {miles} miles.",
                             f"About {miles} miles - at an easy walking pace roughly "
                             f"{round(km / 4.5 * 60)} minutes."])
    return user, steps, answer


def calc(rng, now, topic):
    shape = rng.randrange(5)
    if shape == 0:
        price = _pick(rng, [24, 39.99, 64, 85, 120, 149, 210, 349, 499])
        off = _pick(rng, [10, 15, 20, 25, 30, 40])
        result = round(price * (100 - off) / 100, 2)
        user = _pick(rng, [f"what's {off}% off £{_money(price)}", f"£{_money(price)} with {off}% off?",
                           f"{off} percent discount on {_money(price)} quid, what do i pay"])
        expr = f"{price} * (1 - {off}/100)"
        answer = _pick(rng, [f"£{_money(result)} - you'd save £{_money(round(price - result, 2))}.",
                             f"You'd pay £{_money(result)}.", f"£{_money(result)} after the discount."])
    elif shape == 1:
        monthly = _pick(rng, [12.99, 18, 25, 34.5, 42, 60, 75])
        months = _pick(rng, [6, 9, 12, 18, 24])
        result = round(monthly * months, 2)
        user = _pick(rng, [f"£{_money(monthly)} a month for {months} months, total?",
                           f"if something's {_money(monthly)} a month how much over {months} months",
                           f"how much is {_money(monthly)} x {months}"])
        expr = f"{monthly} * {months}"
        answer = _pick(rng, [f"£{_money(result)} over {months} months.", f"That's £{_money(result)} in total.",
                             f"{months} x £{_money(monthly)} = £{_money(result)}."])
    elif shape == 2:
        values = [rng.choice([4.2, 7.5, 12, 13.8, 19.99, 22, 31.5, 8.4, 5.75]) for _ in range(3)]
        result = round(sum(values), 2)
        user = _pick(rng, ["add these up: " + ", ".join(_money(v) for v in values),
                           " + ".join(_money(v) for v in values) + " = ?",
                           "total of " + ", ".join("£" + _money(v) for v in values) + " please"])
        expr = " + ".join(str(v) for v in values)
        answer = _pick(rng, [f"{result:.2f} altogether.", f"That comes to {result:.2f}.",
                             f"Total: {result:.2f}."])
    elif shape == 3:
        part = _pick(rng, [18, 27, 45, 62, 130, 240])
        whole = _pick(rng, [150, 200, 360, 480, 900, 1200])
        result = round(part / whole * 100, 1)
        user = _pick(rng, [f"what percentage is {part} of {whole}",
                           f"{part} out of {whole} as a percent?",
                           f"{part}/{whole} in %"])
        expr = f"{part} / {whole} * 100"
        answer = _pick(rng, [f"{result:g}%.", f"About {result:g}%.", f"It's {result:g}%."])
    else:
        total = _pick(rng, [96, 150, 275, 420, 640, 1000])
        people = _pick(rng, [3, 4, 6, 7, 8])
        result = round(total / people, 2)
        user = _pick(rng, [f"{total} divided by {people}?", f"what's {total}/{people}",
                           f"share {total} between {people}, how much each"])
        expr = f"{total} / {people}"
        answer = _pick(rng, [f"{result:g}.", f"{result:g} each.", f"That's {result:g}."])
    steps = [{"tool": "calculate", "input": expr, "observation": f"{result:g}"}]
    return user, steps, answer


def split_bill(rng, now, topic):
    total = _pick(rng, [38.4, 57, 64.8, 86.5, 112, 148.6, 176, 214.3])
    people = _pick(rng, [2, 3, 4, 5, 6])
    tip = _pick(rng, [0, 10, 12.5, 15])
    each = round(total * (1 + tip / 100) / people, 2)
    occasion = _pick(rng, ["the curry", "dinner", "the taxi", "brunch", "the pub quiz tab",
                           "the cabin", "the meal"])
    tip_text = "" if tip == 0 else f" plus {tip:g}% tip"
    user = _pick(rng, [f"split £{_money(total)} between {people}{tip_text}",
                       f"{occasion} came to {_money(total)}, {people} of us{tip_text}. each?",
                       f"how much each for {occasion}? £{_money(total)}, {people} people{tip_text}"])
    steps = [{"tool": "split_bill", "input": f"total={total} people={people} tip={tip}",
              "observation": f"{each:.2f} each"}]
    answer = _pick(rng, [f"£{each:.2f} each.",
                         f"That's £{each:.2f} per person" + (" including the tip." if tip else "."),
                         f"Each of you pays £{each:.2f}."])
    return user, steps, answer


def pace(rng, now, topic):
    km = _pick(rng, [3, 5, 6.4, 8, 10, 12, 16.1])
    minutes = _pick(rng, [17, 24, 29, 31.5, 38, 46, 52, 58, 63, 71, 95])
    per_km = minutes / km
    if per_km < 4 or per_km > 8:
        minutes = round(km * rng.uniform(5.2, 6.8), 1)
        per_km = minutes / km
    mins, secs = int(per_km), round((per_km - int(per_km)) * 60)
    if secs == 60:
        mins, secs = mins + 1, 0
    user = _pick(rng, [f"ran {km}k in {minutes:g} mins, what pace is that",
                       f"pace for {km} km in {minutes:g} minutes?",
                       f"what's my per km pace if i did {km}km in {minutes:g}min"])
    steps = [{"tool": "calculate", "input": f"{minutes} / {km}",
              "observation": f"{per_km:.3f}"}]
    answer = _pick(rng, [f"{mins}:{secs:02d} per km.",
                         f"About {mins}:{secs:02d} min/km - nice and steady.",
                         f"That works out at {mins}:{secs:02d} per kilometre."])
    return user, steps, answer


def area(rng, now, topic):
    length = _pick(rng, [1.6, 2.2, 2.7, 3.1, 3.4, 3.8, 4.2, 4.6])
    width = _pick(rng, [1.4, 1.9, 2.3, 2.8, 3.0, 3.5])
    what = _pick(rng, ["the hallway", "Ollie's room", "the spare room", "the landing",
                       "the kitchen floor", "the patio", "the shed roof"])
    sqm = round(length * width, 2)
    user = _pick(rng, [f"{what} is {length} by {width} metres, how many square metres",
                       f"area of {length}m x {width}m?",
                       f"need the floor area of {what}: {length} x {width} m"])
    steps = [{"tool": "calculate", "input": f"{length} * {width}", "observation": f"{sqm:g}"}]
    answer = _pick(rng, [f"{sqm:g} m². Add about 10% for offcuts if you're buying "
                         "flooring.", f"That's {sqm:g} square metres.",
                         f"{sqm:g} m² - so order about {round(sqm * 1.1, 1):g} m² to be safe."])
    return user, steps, answer


def garden_units(rng, now, topic):
    if rng.random() < 0.5:
        inches = _pick(rng, [2, 3, 4, 6, 9, 12, 18])
        cm = round(inches * 2.54, 1)
        user = _pick(rng, [f"seed packet says plant {inches} inches apart, in cm?",
                           f"{inches} inches to cm", f"how many cm is {inches} in"])
        steps = [{"tool": "convert_units", "input": f"{inches} in to cm",
                  "observation": f"{inches} in = {cm} cm"}]
        answer = _pick(rng, [f"{cm} cm.", f"About {cm} cm - a hand span is roughly 20 cm "
                             "if you're eyeballing it."])
    else:
        gallons = _pick(rng, [1, 2, 5, 10, 40, 50])
        litres = round(gallons * 4.546, 1)
        user = _pick(rng, [f"{gallons} gallons in litres? (uk gallons)",
                           f"water butt says {gallons} gallons, how many litres"])
        steps = [{"tool": "convert_units", "input": f"{gallons} imperial gallon to L",
                  "observation": f"{gallons} gal (imp) = {litres} L"}]
        answer = f"{litres} litres."
    return user, steps, answer


# --- dates ---------------------------------------------------------------------------

def date_math(rng, now: datetime, topic):
    today = now.date()
    shape = rng.randrange(4)
    if shape == 0:
        target = today + timedelta(days=rng.randint(9, 140))
        days = (target - today).days
        phrase = f"{target.day} {target.strftime('%B')}"
        user = _pick(rng, [f"how many days until {phrase}?", f"days till {phrase}",
                           f"how long is it until {phrase}, in days",
                           f"count the days from today to {phrase} for me"])
        steps = [{"tool": "days_between", "input": f"{today.isoformat()} to {target.isoformat()}",
                  "observation": f"{days} days"}]
        answer = _pick(rng, [f"{days} days.", f"{days} days from today "
                             f"({days // 7} weeks and {days % 7} days).",
                             f"It's {days} days away."])
    elif shape == 1:
        target = today + timedelta(days=rng.randint(3, 200))
        phrase = f"{target.day} {target.strftime('%B')}"
        weekday = target.strftime("%A")
        user = _pick(rng, [f"what day of the week is {phrase}", f"is {phrase} a weekend?",
                           f"{phrase} - what day is that", f"which day does {phrase} fall on"])
        steps = [{"tool": "day_of_week", "input": target.isoformat(), "observation": weekday}]
        answer = _pick(rng, [f"It's a {weekday}.", f"{phrase} is a {weekday}.",
                             f"That's a {weekday}."])
    elif shape == 2:
        weeks = rng.randint(2, 16)
        target = today + timedelta(weeks=weeks)
        user = _pick(rng, [f"what's the date {weeks} weeks from today",
                           f"{weeks} weeks from now is when?",
                           f"if something takes {weeks} weeks starting today, when's it done"])
        steps = [{"tool": "add_days", "input": f"{today.isoformat()} + {weeks * 7}",
                  "observation": target.isoformat()}]
        answer = _pick(rng, [f"{target.strftime('%A')} {target.day} {target.strftime('%B')}.",
                             f"That lands on {target.strftime('%A %-d %B')}."])
    else:
        start = today - timedelta(days=rng.randint(20, 400))
        days = (today - start).days
        phrase = f"{start.day} {start.strftime('%B %Y')}"
        user = _pick(rng, [f"how many days since {phrase}", f"how long ago was {phrase} in days",
                           f"days between {phrase} and today?"])
        steps = [{"tool": "days_between", "input": f"{start.isoformat()} to {today.isoformat()}",
                  "observation": f"{days} days"}]
        answer = _pick(rng, [f"{days} days.", f"It's been {days} days."])
    return user, steps, answer


# --- lists, notes, rewrites ----------------------------------------------------------

TODOS = {
    "travel": ["check passport expiry dates", "order some euros", "download offline maps",
               "check the travel insurance covers all three of us", "buy suncream",
               "charge the kindle before we go", "print the boarding passes",
               "find the travel adaptors in the loft", "ask Jo to water the plants",
               "cancel the milk delivery for the week away", "pack Ollie's swimming goggles"],
    "home": ["phone the council about the missed bin", "buy lightbulbs for the landing",
             "bleed the radiators", "fix the dripping kitchen tap", "get a new shower curtain",
             "take the old paint tins to the tip", "order more dishwasher tablets",
             "descale the kettle", "clear out the under-stairs cupboard",
             "renew the TV licence"],
    "work": ["send Ruth the updated wireframes feedback", "book a room for the planning day",
             "reply to the customer NPS thread", "update the risks slide",
             "chase finance about the pilot pricing", "write up the retro actions",
             "review Tomasz's API doc", "submit expenses from the Manchester trip",
             "prep questions for the customer call", "tidy up the backlog labels"],
    "garden": ["buy more compost", "fix the water butt tap", "sharpen the secateurs",
               "order seed potatoes", "put netting over the brassicas",
               "pay the allotment association subs", "get a new hose connector",
               "sow more salad leaves", "mend the fence panel by the shed"],
    "family": ["buy a birthday card for Fergal", "sort photos for the album",
               "ring Mum on Sunday", "book the babysitter for Saturday",
               "post the parcel to Dublin", "get wrapping paper", "send thank-you cards",
               "order flowers"],
    "health": ["collect prescription", "book the nurse for a flu jab",
               "ring the surgery at 8am", "buy more antihistamines", "renew the gym direct debit",
               "book an eye test"],
    "pet": ["buy poo bags", "order more dog food", "book Biscuit's nail clip",
            "wash the dog bed", "renew the pet insurance", "get a new lead"],
    "car": ["top up the screenwash", "check the tyre pressures", "hoover the car",
            "renew the parking permit", "book a car wash", "find the spare key"],
    "money": ["move the savings pot money", "cancel the unused streaming sub",
              "check the pension statement", "send Dev his half of the bills",
              "download the payslips", "look at the credit card statement"],
    "school": ["sign the trip consent form", "buy new school shoes", "label Ollie's jumpers",
               "pay for school dinners", "send in the cake sale bake", "reply to the class WhatsApp",
               "find Ollie's reading record"],
    "books": ["return the library books", "reserve the next book club pick",
              "lend Jo my copy", "write down the quote for the group chat"],
    "tech": ["update the laptop", "back up the phone", "change the wifi password",
             "sort out the printer ink subscription", "clear space on the family iCloud"],
}


def todo(rng, now, topic):
    task = _pick(rng, TODOS.get(topic, TODOS["home"]))
    user = _pick(rng, [f"add '{task}' to my todo list", f"remind me to {task}",
                       f"put {task} on the list pls", f"todo: {task}",
                       f"can you add {task} to my to-dos"])
    steps = [{"tool": "add_todo", "input": task, "observation": "added"}]
    answer = _pick(rng, ["Done - it's on your list.", f"Added: {task}.",
                         "Added to your to-dos.", f"Got it, '{task}' is on the list."])
    return user, steps, answer


REWRITES = {
    "work": ["hi all the release is late again because of testing, sorry, new date to follow",
             "can we move the standup, it clashes with the customer call every week",
             "i need the numbers by thursday or I can't do the deck",
             "thanks for your work on this but the scope is too big for this quarter"],
    "family": ["sorry we can't make sunday, ollie has a thing, another time?",
               "can you let everyone know the time has changed",
               "thanks so much for having us, the food was amazing",
               "please don't buy ollie any more lego, we have no room"],
    "home": ["hi, the bin wasn't collected again this week, this is the third time",
             "could you let me know when you're able to come and finish the job",
             "hi neighbour, your hedge is blocking the path, any chance you could trim it"],
    "school": ["ollie will be off today he has a temperature",
               "hi, ollie came home without his coat, has anyone seen it",
               "sorry i missed the parents evening slot can we rebook"],
    "travel": ["hi we're arriving late around 11pm is that ok for check in",
               "could we have a cot in the room, actually no, an extra bed for our son",
               "is there somewhere to leave our bags after checkout"],
}


def rewrite(rng, now, topic):
    message = _pick(rng, REWRITES.get(topic, REWRITES["home"]))
    tone = _pick(rng, ["nicer", "more polite", "less blunt", "more professional",
                       "friendlier", "shorter"])
    user = _pick(rng, [f"make this {tone}: \"{message}\"", f"can you reword this to sound {tone} - {message}",
                       f"rewrite pls, {tone}: {message}"])
    first = message[0].upper() + message[1:]
    answer = _pick(rng, [
        f"Here's a version: \"{first.rstrip('.')}. Thanks for understanding!\"",
        f"Try: \"Hi - just a quick note: {message.rstrip('.')}. Let me know if that's a "
        "problem.\"",
        f"How about: \"{first.rstrip('.')} - I hope that's okay, and thanks in advance.\"",
    ])
    return user, [], answer


PICKS = {
    "food": [["pizza", "tacos", "stir fry"], ["pasta bake", "fajitas", "soup and bread"],
             ["chinese takeaway", "fish and chips", "thai"]],
    "films": [["something funny", "a thriller", "a documentary"],
              ["Paddington", "Wallace & Gromit", "Kiki's Delivery Service"],
              ["a series", "a film", "an early night"]],
    "general": [["walk", "swim", "bike ride"], ["red", "green", "blue"],
                ["Saturday", "Sunday"], ["heads", "tails"]],
}


def pick(rng, now, topic):
    options = _pick(rng, PICKS.get(topic, PICKS["general"]))
    listed = ", ".join(options[:-1]) + " or " + options[-1]
    chosen = _pick(rng, options)
    user = _pick(rng, [f"can't decide - {listed}? you pick", f"pick one: {listed}",
                       f"choose for me, {listed}", f"{listed}. go"])
    steps = [{"tool": "pick_random", "input": " | ".join(options), "observation": chosen}]
    answer = _pick(rng, [f"{chosen[0].upper() + chosen[1:]}!", f"I picked {chosen}.",
                         f"The draw says {chosen}. Enjoy."])
    return user, steps, answer


def ack(rng, now, topic):
    user = _pick(rng, ["thanks!", "perfect, ta", "brill, cheers", "ok great thank you",
                       "amazing thanks", "that's really helpful", "lovely, thank you",
                       "ok", "ta", "cool thx", "nice one", "thank you so much!"])
    answer = _pick(rng, ["You're welcome!", "Any time.", "Glad it helps.",
                         "No problem - shout if you need anything else.",
                         "Happy to help."])
    return user, [], answer


FAMILIES = {"kitchen_convert": kitchen_convert, "oven": oven, "ounces": ounces,
            "recipes": recipes, "travel_money": travel_money, "calc": calc,
            "split_bill": split_bill, "pace": pace, "area": area,
            "garden_units": garden_units, "date_math": date_math, "todo": todo,
            "rewrite": rewrite, "pick": pick, "ack": ack}


def make_turn(rng: random.Random, families: list[str], now: datetime,
              seen_users: set[str]) -> dict:
    """One filler turn from one of the session's families, new to the whole set."""
    if not families:
        raise ValueError("a session with %fill slots needs a families: line")
    for _ in range(200):
        name, _, topic = _pick(rng, families).partition(":")
        user, steps, answer = FAMILIES[name](rng, now, topic)
        # the same to-do or sum asked twice in other words reads like a bot: key on the
        # tool input as well as the wording
        key = f"{name}|{steps[0]['input']}" if steps else user
        if user not in seen_users and key not in seen_users:
            seen_users.add(key)
            return {"user": user, "steps": steps, "answer": answer}
    raise ValueError(f"families {families} ran out of distinct turns")
