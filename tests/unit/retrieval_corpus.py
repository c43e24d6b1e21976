"""Labelled evaluation corpus for the tool retriever.

Why this exists
---------------
The agent only shows the model a handful of tools per turn, picked by a
retriever that ranks the tool registry against the user's message.  To know
whether a retriever is any good we need a fixed, hand-written set of
(user message -> correct tool) pairs and a baseline to compare against.

This module is deliberately plain data plus two small helpers, and it was
written without looking at any retriever implementation so that it is not
tuned to one:

* ``TOOLS``   -- 60 realistic tools for an on-device browser assistant, spread
  over ~20 small domains, with a mix of snake_case and camelCase names and some
  deliberately confusable neighbours (``add_note`` / ``add_todo`` /
  ``add_calendar_event``, ``convert_units`` / ``convertCurrency`` /
  ``convert_color``, ``count_words`` / ``page_word_count`` ...).
* ``QUERIES`` -- labelled (user message, expected tool name) pairs, at least
  two per tool, phrased the way people actually type.
* ``substring_overlap_rank`` -- the placeholder ranking the retriever must beat.
* ``recall_at_k`` -- fraction of ``QUERIES`` whose expected tool is returned in
  the top ``k``.
"""

from __future__ import annotations

import re
from typing import Callable


# --------------------------------------------------------------------------- #
# Tool registry
# --------------------------------------------------------------------------- #

TOOLS: list[dict] = [
    # --- math / calculation -------------------------------------------------
    {
        "name": "calculate",
        "description": "Evaluate an arithmetic expression such as '3 * (4 + 5) / 2' and return the numeric result.",
        "params": ["expression"],
    },
    {
        "name": "percentage_change",
        "description": "Compute the percentage increase or decrease going from an old value to a new value.",
        "params": ["old_value", "new_value"],
    },
    {
        "name": "computeStatistics",
        "description": "Return the mean, median, mode and standard deviation of a list of numbers.",
        "params": ["numbers"],
    },
    # --- unit conversion ----------------------------------------------------
    {
        "name": "convert_units",
        "description": "Convert a quantity between units of length, mass, volume or speed (e.g. miles to km, pounds to kg).",
        "params": ["value", "from_unit", "to_unit"],
    },
    {
        "name": "convertTemperature",
        "description": "Convert a temperature between Celsius, Fahrenheit and Kelvin.",
        "params": ["value", "from_scale", "to_scale"],
    },
    # --- dates / time / timezones ------------------------------------------
    {
        "name": "get_current_time",
        "description": "Return the current local date and time, optionally for a named city.",
        "params": ["city"],
    },
    {
        "name": "convertTimezone",
        "description": "Convert a clock time from one time zone to another, e.g. 3pm London time in Tokyo.",
        "params": ["time", "from_zone", "to_zone"],
    },
    {
        "name": "days_between_dates",
        "description": "Count the number of days between two dates.",
        "params": ["start_date", "end_date"],
    },
    {
        "name": "add_days_to_date",
        "description": "Add or subtract a number of days, weeks or months from a date and return the resulting date.",
        "params": ["date", "amount", "unit"],
    },
    {
        "name": "dayOfWeek",
        "description": "Tell which weekday a given date falls on.",
        "params": ["date"],
    },
    # --- notes --------------------------------------------------------------
    {
        "name": "add_note",
        "description": "Save a free-form text note to the user's local notebook.",
        "params": ["title", "body"],
    },
    {
        "name": "search_notes",
        "description": "Search saved notes for a keyword and return the matching notes.",
        "params": ["keyword"],
    },
    {
        "name": "deleteNote",
        "description": "Permanently delete a saved note by its title or id.",
        "params": ["note_id"],
    },
    # --- to-do list ---------------------------------------------------------
    {
        "name": "add_todo",
        "description": "Add an item to the user's to-do list, with an optional priority.",
        "params": ["task", "priority"],
    },
    {
        "name": "list_todos",
        "description": "Show the items on the to-do list, optionally only the ones not yet done.",
        "params": ["include_done"],
    },
    {
        "name": "completeTodo",
        "description": "Mark a to-do list item as done.",
        "params": ["task_id"],
    },
    # --- reminders ----------------------------------------------------------
    {
        "name": "set_reminder",
        "description": "Schedule a notification that pops up at a given time with a message.",
        "params": ["message", "remind_at"],
    },
    {
        "name": "cancelReminder",
        "description": "Cancel a previously scheduled reminder notification.",
        "params": ["reminder_id"],
    },
    # --- calendar -----------------------------------------------------------
    {
        "name": "add_calendar_event",
        "description": "Create an event in the calendar with a title, start time, duration and optional location.",
        "params": ["title", "start", "duration_minutes", "location"],
    },
    {
        "name": "list_calendar_events",
        "description": "List calendar events scheduled for a given day or date range.",
        "params": ["start_date", "end_date"],
    },
    # --- recipes / cooking --------------------------------------------------
    {
        "name": "find_recipe",
        "description": "Look up recipes in the built-in cookbook by dish name or by ingredients on hand.",
        "params": ["dish", "ingredients"],
    },
    {
        "name": "scaleRecipe",
        "description": "Multiply the ingredient quantities of a recipe so it serves a different number of people.",
        "params": ["recipe_name", "servings"],
    },
    {
        "name": "substitute_ingredient",
        "description": "Suggest a replacement for an ingredient you don't have, e.g. buttermilk or eggs.",
        "params": ["ingredient"],
    },
    # --- weather-like offline lookups --------------------------------------
    {
        "name": "get_weather_forecast",
        "description": "Return the cached weather forecast (temperature, chance of rain, wind) for a city over the next few days.",
        "params": ["city", "days"],
    },
    {
        "name": "sunriseSunset",
        "description": "Compute sunrise and sunset times for a location and date.",
        "params": ["latitude", "longitude", "date"],
    },
    # --- text utilities -----------------------------------------------------
    {
        "name": "count_words",
        "description": "Count the words, characters and sentences in a piece of text.",
        "params": ["text"],
    },
    {
        "name": "change_case",
        "description": "Convert text to UPPER, lower, Title or snake_case.",
        "params": ["text", "target_case"],
    },
    {
        "name": "translate_text",
        "description": "Translate short text between languages using an offline phrase dictionary.",
        "params": ["text", "target_language"],
    },
    {
        "name": "summarize_text",
        "description": "Produce a short summary of a long passage of text.",
        "params": ["text", "max_sentences"],
    },
    {
        "name": "findAndReplace",
        "description": "Replace every occurrence of a word or phrase in text with another.",
        "params": ["text", "find", "replace"],
    },
    # --- files / CSV --------------------------------------------------------
    {
        "name": "read_csv",
        "description": "Load a CSV file and return its header and first rows as a table.",
        "params": ["file_path", "max_rows"],
    },
    {
        "name": "csvToJson",
        "description": "Convert the contents of a CSV file into a JSON array of objects.",
        "params": ["file_path"],
    },
    {
        "name": "filter_csv_rows",
        "description": "Return only the rows of a CSV file where a column matches a condition.",
        "params": ["file_path", "column", "condition"],
    },
    # --- currency (offline rates table) ------------------------------------
    {
        "name": "convertCurrency",
        "description": "Convert an amount of money from one currency to another using the bundled offline exchange-rate table.",
        "params": ["amount", "from_currency", "to_currency"],
    },
    {
        "name": "list_exchange_rates",
        "description": "Show the stored exchange rates for a base currency and the date they were last updated.",
        "params": ["base_currency"],
    },
    # --- health / fitness ---------------------------------------------------
    {
        "name": "calculate_bmi",
        "description": "Calculate body mass index from height and weight.",
        "params": ["height_cm", "weight_kg"],
    },
    {
        "name": "estimateCaloriesBurned",
        "description": "Estimate calories burned for an activity like running or cycling, given duration and body weight.",
        "params": ["activity", "duration_minutes", "weight_kg"],
    },
    {
        "name": "daily_water_intake",
        "description": "Recommend how much water to drink per day based on body weight and activity level.",
        "params": ["weight_kg", "activity_level"],
    },
    # --- finance ------------------------------------------------------------
    {
        "name": "loan_payment",
        "description": "Calculate the monthly repayment for a loan or mortgage given principal, interest rate and term.",
        "params": ["principal", "annual_rate", "years"],
    },
    {
        "name": "calculateTip",
        "description": "Work out the tip and total for a restaurant bill at a given percentage.",
        "params": ["bill_amount", "tip_percent"],
    },
    {
        "name": "split_bill",
        "description": "Divide a bill evenly between a number of people, optionally including a tip.",
        "params": ["total", "people", "tip_percent"],
    },
    {
        "name": "sales_tax",
        "description": "Add sales tax or VAT to a price, or extract the tax from a tax-inclusive price.",
        "params": ["price", "tax_rate", "inclusive"],
    },
    {
        "name": "compoundInterest",
        "description": "Project how savings grow with compound interest over a number of years.",
        "params": ["principal", "annual_rate", "years", "compounds_per_year"],
    },
    # --- travel -------------------------------------------------------------
    {
        "name": "distance_between_cities",
        "description": "Compute the straight-line distance between two cities using the offline gazetteer.",
        "params": ["from_city", "to_city"],
    },
    {
        "name": "generatePackingList",
        "description": "Build a packing checklist for a trip based on destination, length of stay and planned activities.",
        "params": ["destination", "nights", "activities"],
    },
    {
        "name": "estimate_travel_time",
        "description": "Estimate how long a journey takes by car, train, bike or on foot between two places.",
        "params": ["origin", "destination", "mode"],
    },
    # --- contacts -----------------------------------------------------------
    {
        "name": "find_contact",
        "description": "Look up a contact's phone number, email or address by name.",
        "params": ["name"],
    },
    {
        "name": "addContact",
        "description": "Save a new person to the address book with their phone number and email.",
        "params": ["name", "phone", "email"],
    },
    # --- web page utilities -------------------------------------------------
    {
        "name": "extract_links",
        "description": "List all hyperlinks (URL and anchor text) on the current web page.",
        "params": ["include_external"],
    },
    {
        "name": "page_word_count",
        "description": "Count the words on the current web page and estimate the reading time.",
        "params": ["selector"],
    },
    {
        "name": "getPageTitle",
        "description": "Return the title and meta description of the current page.",
        "params": [],
    },
    # --- random / generators ------------------------------------------------
    {
        "name": "generate_password",
        "description": "Generate a random secure password of a given length, optionally with symbols.",
        "params": ["length", "include_symbols"],
    },
    {
        "name": "generateUuid",
        "description": "Create one or more random version-4 UUIDs.",
        "params": ["count"],
    },
    {
        "name": "roll_dice",
        "description": "Roll one or more dice using notation like 2d6 and return each result and the total.",
        "params": ["dice"],
    },
    # --- colour -------------------------------------------------------------
    {
        "name": "convert_color",
        "description": "Convert a colour between HEX, RGB and HSL formats.",
        "params": ["color", "to_format"],
    },
    {
        "name": "colorContrastRatio",
        "description": "Compute the WCAG contrast ratio between a foreground and a background colour.",
        "params": ["foreground", "background"],
    },
    # --- encoding / hashing -------------------------------------------------
    {
        "name": "base64_encode",
        "description": "Encode text as Base64.",
        "params": ["text"],
    },
    {
        "name": "base64Decode",
        "description": "Decode a Base64 string back into plain text.",
        "params": ["data"],
    },
    {
        "name": "url_encode",
        "description": "Percent-encode text so it is safe to put in a URL query string.",
        "params": ["text"],
    },
    {
        "name": "hash_text",
        "description": "Compute a hash digest (MD5, SHA-1 or SHA-256) of a piece of text.",
        "params": ["text", "algorithm"],
    },
]


# --------------------------------------------------------------------------- #
# Labelled queries: (user message, expected tool name)
# --------------------------------------------------------------------------- #

QUERIES: list[tuple[str, str]] = [
    # calculate
    ("what's 17.5 * 42 minus 380?", "calculate"),
    ("hey can you work out (1200 / 8) + 45 for me", "calculate"),
    ("2^10 divided by 16 = ?", "calculate"),
    # percentage_change
    ("prices went from 80 to 92, what percent increase is that?", "percentage_change"),
    ("by how many percent did my rent drop if it went from 1500 to 1350", "percentage_change"),
    # computeStatistics
    ("give me the average and median of 4, 8, 15, 16, 23, 42", "computeStatistics"),
    ("what's the standard deviation of these test scores: 71 88 93 65 80", "computeStatistics"),
    # convert_units
    ("how many kilometres is 26.2 miles", "convert_units"),
    ("convert 150 pounds to kg please", "convert_units"),
    ("converting 5 feet 11 inches to centimetres", "convert_units"),
    ("how many litres are in 3 gallons?", "convert_units"),
    # convertTemperature
    ("what is 350 fahrenheit in celsius", "convertTemperature"),
    ("is 30 degrees C hot? what's that in F", "convertTemperature"),
    # get_current_time
    ("what time is it right now", "get_current_time"),
    ("what's the time in Sydney at the moment?", "get_current_time"),
    # convertTimezone
    ("if it's 9am in New York what time is that in Berlin", "convertTimezone"),
    ("I have a call at 4pm Tokyo time, when is that for me in London?", "convertTimezone"),
    ("convert 14:00 PST to CET", "convertTimezone"),
    # days_between_dates
    ("how many days until Christmas, counting from 3 October", "days_between_dates"),
    ("how many days are there between March 1 and June 15, 2024", "days_between_dates"),
    # add_days_to_date
    ("what date is 90 days after 12 February?", "add_days_to_date"),
    ("what will the date be 6 weeks from today", "add_days_to_date"),
    ("what was the date 30 days before 1 May", "add_days_to_date"),
    # dayOfWeek
    ("what day of the week was 4 July 1976?", "dayOfWeek"),
    ("does 25 December 2027 fall on a Monday or what day is it", "dayOfWeek"),
    # add_note
    ("jot this down: the wifi password at the cabin is moose42", "add_note"),
    ("save a note titled 'gift ideas' with: scarf for mum, book for Sam", "add_note"),
    ("hey could you please write down that the parking spot is level 3, bay 17", "add_note"),
    # search_notes
    ("did I write anything down about the plumber?", "search_notes"),
    ("look through my notes for 'passport'", "search_notes"),
    # deleteNote
    ("delete the note called old shopping list", "deleteNote"),
    ("get rid of my 'meeting ideas' note, I don't need it anymore", "deleteNote"),
    # add_todo
    ("add 'renew car insurance' to my to-do list", "add_todo"),
    ("put buy milk on my todo list, high priority", "add_todo"),
    ("new task for my list: call the bank about the card, no rush", "add_todo"),
    # list_todos
    ("what's left on my to-do list?", "list_todos"),
    ("show me all my open tasks", "list_todos"),
    # completeTodo
    ("mark 'pay electricity bill' as done", "completeTodo"),
    ("I finished the laundry task, tick it off my todo list", "completeTodo"),
    # set_reminder
    ("remind me to take the chicken out of the freezer at 5pm", "set_reminder"),
    ("can you ping me tomorrow at 8 to water the plants", "set_reminder"),
    ("set a reminder for 10 minutes from now: check the oven", "set_reminder"),
    # cancelReminder
    ("cancel the reminder about watering the plants", "cancelReminder"),
    ("I don't need the 8am reminder anymore, turn it off", "cancelReminder"),
    ("please remove all the reminders I set for the dentist", "cancelReminder"),
    # add_calendar_event
    ("put a dentist appointment on my calendar for Tuesday at 2:30, about an hour", "add_calendar_event"),
    ("book a meeting with Priya in my calendar on Friday 10am at the office", "add_calendar_event"),
    # list_calendar_events
    ("what's on my calendar tomorrow?", "list_calendar_events"),
    ("do I have any meetings next week", "list_calendar_events"),
    ("show my schedule for 12 to 14 June", "list_calendar_events"),
    # find_recipe
    ("what can I cook with chicken, rice and spinach?", "find_recipe"),
    ("find me a recipe for banana bread", "find_recipe"),
    # scaleRecipe
    ("the lasagna recipe serves 4, I need it for 10 people", "scaleRecipe"),
    ("scale the pancake recipe down to 2 servings", "scaleRecipe"),
    # substitute_ingredient
    ("I'm out of buttermilk, what can I use instead?", "substitute_ingredient"),
    ("what's a good replacement for eggs in baking", "substitute_ingredient"),
    # get_weather_forecast
    ("will it rain in Manchester this weekend?", "get_weather_forecast"),
    ("what's the weather going to be like in Lisbon for the next 3 days", "get_weather_forecast"),
    ("is it going to be windy in Chicago tomorrow", "get_weather_forecast"),
    # sunriseSunset
    ("what time does the sun set in Reykjavik on June 21", "sunriseSunset"),
    ("when is sunrise tomorrow at lat 51.5, long -0.12", "sunriseSunset"),
    # count_words
    ("how many words is this: The quick brown fox jumps over the lazy dog", "count_words"),
    ("character count for my bio please, it needs to be under 160", "count_words"),
    # change_case
    ("make this all caps: free shipping today only", "change_case"),
    ("convert 'Hello World Example' to snake case", "change_case"),
    ("lowercase this whole sentence for me", "change_case"),
    # translate_text
    ("how do you say 'where is the train station' in Spanish", "translate_text"),
    ("translate 'merci beaucoup' into English", "translate_text"),
    # summarize_text
    ("can you give me a tl;dr of this article text I pasted", "summarize_text"),
    ("summarise this email thread in 3 sentences", "summarize_text"),
    ("condense the following paragraph into the key points", "summarize_text"),
    # findAndReplace
    ("swap every 'colour' for 'color' in this text", "findAndReplace"),
    ("replace all instances of ACME with Globex in the paragraph below", "findAndReplace"),
    # read_csv
    ("open sales_2023.csv and show me the first 10 rows", "read_csv"),
    ("what columns does customers.csv have?", "read_csv"),
    # csvToJson
    ("turn inventory.csv into json", "csvToJson"),
    ("I need the spreadsheet export data.csv as a JSON array", "csvToJson"),
    # filter_csv_rows
    ("from orders.csv only show rows where status is refunded", "filter_csv_rows"),
    ("in employees.csv, which rows have salary over 50000", "filter_csv_rows"),
    # convertCurrency
    ("how much is 250 euros in dollars", "convertCurrency"),
    ("convert 10,000 yen to GBP", "convertCurrency"),
    ("what's 45 USD worth in Canadian dollars", "convertCurrency"),
    # list_exchange_rates
    ("show me the current exchange rates against the euro", "list_exchange_rates"),
    ("when were the currency rates last updated", "list_exchange_rates"),
    # calculate_bmi
    ("I'm 178 cm and 82 kg, what's my BMI", "calculate_bmi"),
    ("is my body mass index healthy? 5'6\" and 140 lbs", "calculate_bmi"),
    # estimateCaloriesBurned
    ("how many calories did I burn cycling for 45 minutes? I weigh 70kg", "estimateCaloriesBurned"),
    ("calories burned running 5k in 30 min", "estimateCaloriesBurned"),
    ("I swam for an hour today, roughly how many kcal is that", "estimateCaloriesBurned"),
    # daily_water_intake
    ("how much water should I be drinking a day, I'm 65 kg and pretty active", "daily_water_intake"),
    ("recommended daily hydration for someone who weighs 90kg", "daily_water_intake"),
    # loan_payment
    ("what would the monthly payments be on a 300k mortgage at 4.5% over 25 years", "loan_payment"),
    ("car loan of 18000 at 6% for 5 years, how much per month?", "loan_payment"),
    ("I calculated my repayments by hand, can you check: borrowing 12k at 7% over 3 years", "loan_payment"),
    # calculateTip
    ("what's an 18% tip on $64.50", "calculateTip"),
    ("how much should I tip on a 120 dollar dinner at 20 percent", "calculateTip"),
    # split_bill
    ("split $240 between 6 of us including a 15% tip", "split_bill"),
    ("we're 4 people and the bill is 87.60, how much does each person owe", "split_bill"),
    # sales_tax
    ("what's 129.99 plus 8.25% sales tax", "sales_tax"),
    ("the price of 60 includes 20% VAT, how much of it is tax?", "sales_tax"),
    # compoundInterest
    ("if I put 5000 in savings at 3% compounded monthly, how much after 10 years", "compoundInterest"),
    ("how much will my investment grow in 20 years at 7% annual interest", "compoundInterest"),
    # distance_between_cities
    ("how far is Paris from Madrid", "distance_between_cities"),
    ("distance between Chicago and Denver in km", "distance_between_cities"),
    # generatePackingList
    ("what should I pack for a week of skiing in Austria", "generatePackingList"),
    ("make a list of what to pack for a 3 night beach trip", "generatePackingList"),
    ("hey, could you please help me figure out what to bring on a camping weekend", "generatePackingList"),
    # estimate_travel_time
    ("how long would it take to drive from Boston to New York", "estimate_travel_time"),
    ("how many hours by train from Rome to Florence", "estimate_travel_time"),
    # find_contact
    ("what's Jenny's phone number", "find_contact"),
    ("look up the email address for Tom Baker", "find_contact"),
    # addContact
    ("add Maria Lopez to my contacts, her number is 555-0134", "addContact"),
    ("save a new contact: Dr. Patel, patel@clinic.example", "addContact"),
    # extract_links
    ("list all the links on this page", "extract_links"),
    ("pull out every URL from the page I'm on", "extract_links"),
    # page_word_count
    ("how long is this article I'm reading, word-wise", "page_word_count"),
    ("how many minutes will it take me to read this web page", "page_word_count"),
    # getPageTitle
    ("what's the title of this page", "getPageTitle"),
    ("what does this site's meta description say?", "getPageTitle"),
    # generate_password
    ("generate a strong 20 character password with symbols", "generate_password"),
    ("I need a new random password for my router", "generate_password"),
    # generateUuid
    ("give me a uuid", "generateUuid"),
    ("generate 5 random GUIDs for my test data", "generateUuid"),
    # roll_dice
    ("roll 2d6", "roll_dice"),
    ("roll a twenty sided die for me", "roll_dice"),
    # convert_color
    ("what is #ff8800 in rgb", "convert_color"),
    ("convert rgb(34, 139, 34) to hex", "convert_color"),
    ("hsl value for the colour #336699?", "convert_color"),
    # colorContrastRatio
    ("is white text on #777777 readable enough for WCAG AA", "colorContrastRatio"),
    ("check the contrast between #222 and #f5f5f5", "colorContrastRatio"),
    # base64_encode
    ("base64 encode 'hello world'", "base64_encode"),
    ("encode this string in base64: user:pass", "base64_encode"),
    # base64Decode
    ("decode this base64: aGVsbG8gd29ybGQ=", "base64Decode"),
    ("what does 'SGVsbG8=' say? it's base64", "base64Decode"),
    # url_encode
    ("url-encode 'rock & roll tickets'", "url_encode"),
    ("escape the spaces and ampersands so I can paste this into a query string", "url_encode"),
    # hash_text
    ("what's the sha256 hash of 'password123'", "hash_text"),
    ("give me the md5 checksum of this string", "hash_text"),
]


# Import-time sanity checks: every label names a real tool, names are unique,
# and every tool has at least two queries.
_TOOL_NAMES = [t["name"] for t in TOOLS]
assert len(_TOOL_NAMES) == len(set(_TOOL_NAMES)), "duplicate tool names in TOOLS"
_unknown = sorted({name for _, name in QUERIES} - set(_TOOL_NAMES))
assert not _unknown, f"QUERIES reference unknown tools: {_unknown}"
_under_covered = [n for n in _TOOL_NAMES if sum(1 for _, e in QUERIES if e == n) < 2]
assert not _under_covered, f"tools with fewer than 2 queries: {_under_covered}"


# --------------------------------------------------------------------------- #
# Baseline and metric
# --------------------------------------------------------------------------- #

def substring_overlap_rank(query: str, tools: list[dict], k: int = 3) -> list[str]:
    """Placeholder ranking the retriever must beat.

    Score each tool by how many query tokens (length > 3, repeats counted)
    appear as a substring of ``name + " " + description`` (lowercased), then
    stable-sort by score descending (ties keep registry order) and return the
    first ``k`` names.
    """
    if len(tools) <= k:
        return [t["name"] for t in tools]
    tokens = [tok for tok in re.split(r"\W+", query.lower()) if len(tok) > 3]
    scored = []
    for tool in tools:
        target = (tool["name"] + " " + tool["description"]).lower()
        scored.append((sum(1 for tok in tokens if tok in target), tool["name"]))
    ranked = sorted(scored, key=lambda pair: -pair[0])  # sorted() is stable
    return [name for _, name in ranked[:k]]


def recall_at_k(rank_fn: Callable[[str, int], list[str]], k: int = 3) -> float:
    """Fraction of QUERIES whose expected tool is among ``rank_fn(query, k)``."""
    hits = sum(1 for query, expected in QUERIES if expected in rank_fn(query, k))
    return hits / len(QUERIES)
