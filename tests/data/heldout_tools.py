"""Held-out tool registry for retriever evaluation.

A hand-written registry of 45 tools for a hypothetical personal on-device
assistant app (home, travel, health, media, communication, weather, local
search, finance, learning, productivity, device, fun). Written independently
of the project's demo tools. Descriptions mimic the first paragraph of a
developer's Google-style docstring; examples mimic the docstring's
"Examples:" section as the tool author imagines users phrase requests.

Plain data only; no imports.
"""

TOOLS = [
    # ------------------------------------------------------------------ home
    {
        "name": "set_timer",
        "description": "Schedules a countdown timer that fires a notification when it elapses.",
        "params": {"duration_s": "integer", "label": "string"},
        "examples": [
            "set a timer for 10 minutes",
            "timer 45 seconds",
            "start a 20 minute timer for the pasta",
            "countdown 1 hour please",
        ],
    },
    {
        "name": "set_alarm",
        "description": "Creates a wake-up alarm at a given wall-clock time, optionally repeating on selected weekdays.",
        "params": {"time_hhmm": "string", "repeat_days": "string", "label": "string"},
        "examples": [
            "wake me up at 6:30",
            "set an alarm for 7am tomorrow",
            "alarm at 5:45 on weekdays",
            "set an alarm for 8 on Saturday",
        ],
    },
    {
        "name": "set_lights",
        "description": "Controls smart bulbs in a room: on/off, brightness (0-100) and color.",
        "params": {"room": "string", "power": "boolean", "brightness_pct": "integer", "color": "string"},
        "examples": [
            "turn off the kitchen lights",
            "dim the living room lights to 30%",
            "make the bedroom lights blue",
            "lights on in the hallway",
        ],
    },
    {
        "name": "set_thermostat",
        "description": "Sets the HVAC target temperature and mode via the thermostat integration.",
        "params": {"target_c": "number", "mode": "string"},
        "examples": [
            "set the heat to 21 degrees",
            "make it warmer in here",
            "turn the AC to 68",
            "switch the thermostat to eco mode",
        ],
    },
    {
        "name": "add_to_shopping_list",
        "description": "Appends one or more items to the shared grocery list.",
        "params": {"items": "string", "quantity": "integer"},
        "examples": [
            "add milk to the shopping list",
            "put eggs and bread on my grocery list",
            "we need 2 packs of paper towels",
            "add bananas to the list",
        ],
    },
    {
        "name": "show_shopping_list",
        "description": "Returns the current contents of the grocery list.",
        "params": {"list_name": "string"},
        "examples": [
            "what's on my shopping list",
            "read me the grocery list",
            "show the shopping list",
            "what do I need to buy",
        ],
    },
    # ---------------------------------------------------------------- travel
    {
        "name": "get_flight_status",
        "description": "Looks up live status (departure/arrival times, gate, delays) for a flight by carrier code and number.",
        "params": {"flight_no": "string", "iso_date": "string"},
        "examples": [
            "is flight BA 283 on time",
            "status of UA 901 today",
            "has my LH400 flight been delayed",
            "what gate is DL 45 leaving from",
        ],
    },
    {
        "name": "make_packing_list",
        "description": "Generates a packing checklist based on destination, trip length and planned activities.",
        "params": {"destination": "string", "nights": "integer", "activities": "string"},
        "examples": [
            "what should I pack for 5 days in Iceland",
            "make me a packing list for a beach weekend",
            "packing list for a business trip to Tokyo",
            "help me pack for a ski trip",
        ],
    },
    {
        "name": "convert_currency",
        "description": "Converts an amount between two ISO 4217 currencies using the latest cached FX rates.",
        "params": {"amount": "number", "from_ccy": "string", "to_ccy": "string"},
        "examples": [
            "how much is 50 euros in dollars",
            "convert 1200 yen to GBP",
            "what's 100 USD in pesos",
            "exchange rate from CHF to EUR",
        ],
    },
    {
        "name": "get_world_time",
        "description": "Returns the current local time in a city or IANA tz, and the offset from the device's zone.",
        "params": {"tz": "string"},
        "examples": [
            "what time is it in Sydney",
            "current time in New York",
            "how many hours ahead is Berlin",
            "is it night in Tokyo right now",
        ],
    },
    {
        "name": "get_visa_requirements",
        "description": "Checks entry/visa requirements for a passport country travelling to a destination country.",
        "params": {"passport_country": "string", "destination_country": "string"},
        "examples": [
            "do I need a visa for Japan with a Canadian passport",
            "visa requirements for Indians going to Thailand",
            "can US citizens visit Brazil without a visa",
            "what do I need to enter Turkey",
        ],
    },
    # ---------------------------------------------------------------- health
    {
        "name": "log_water_intake",
        "description": "Records a hydration entry in ml and returns today's running total vs. goal.",
        "params": {"amount_ml": "integer"},
        "examples": [
            "I just drank a glass of water",
            "log 500 ml of water",
            "add two cups of water",
            "how much water have I had today",
        ],
    },
    {
        "name": "get_step_count",
        "description": "Reads pedometer data from the health store for a given day or range.",
        "params": {"iso_date": "string", "range_days": "integer"},
        "examples": [
            "how many steps have I taken today",
            "my step count yesterday",
            "did I hit 10k steps",
            "steps this week",
        ],
    },
    {
        "name": "add_medication_reminder",
        "description": "Schedules recurring dose reminders for a medication.",
        "params": {"med_name": "string", "dose": "string", "times": "string"},
        "examples": [
            "remind me to take my vitamin D every morning",
            "set a reminder for ibuprofen every 8 hours",
            "I take metformin at 8am and 8pm, remind me",
            "add a pill reminder for antibiotics 3 times a day",
        ],
    },
    {
        "name": "calculate_bmi",
        "description": "Computes body mass index from height and weight and returns the WHO category.",
        "params": {"weight_kg": "number", "height_cm": "number"},
        "examples": [
            "what's my BMI if I'm 180 cm and 75 kg",
            "calculate BMI for 5'6\" and 140 lbs",
            "am I overweight at 90 kg and 1.75 m",
            "BMI check",
        ],
    },
    # ----------------------------------------------------------------- media
    {
        "name": "play_music",
        "description": "Starts playback of a song, artist, album or playlist through the default music provider.",
        "params": {"query": "string", "shuffle": "boolean"},
        "examples": [
            "play some Taylor Swift",
            "put on my workout playlist",
            "play Bohemian Rhapsody",
            "shuffle jazz music",
        ],
    },
    {
        "name": "pause_media",
        "description": "Pauses or resumes whatever is currently playing.",
        "params": {"action": "string"},
        "examples": [
            "pause",
            "stop the music",
            "resume playback",
            "hold on, pause that",
        ],
    },
    {
        "name": "skip_track",
        "description": "Skips forward or back in the current playback queue.",
        "params": {"direction": "string", "count": "integer"},
        "examples": [
            "next song",
            "skip this track",
            "go back to the previous song",
            "skip two songs",
        ],
    },
    {
        "name": "set_volume",
        "description": "Adjusts media output volume to an absolute level or by a relative step.",
        "params": {"level_pct": "integer", "delta": "integer"},
        "examples": [
            "turn the volume up",
            "set volume to 40 percent",
            "it's too loud",
            "mute",
        ],
    },
    {
        "name": "play_podcast",
        "description": "Plays the latest (or a specific) episode of a subscribed podcast feed.",
        "params": {"show": "string", "episode": "string"},
        "examples": [
            "play the latest episode of The Daily",
            "continue my podcast",
            "put on Radiolab",
            "play episode 200 of Hardcore History",
        ],
    },
    # --------------------------------------------------------- communication
    {
        "name": "send_message",
        "description": "Sends an SMS/chat message to a contact.",
        "params": {"recipient_id": "string", "body": "string"},
        "examples": [
            "text Mom that I'll be late",
            "send a message to Alex saying see you at 7",
            "tell Sarah I'm on my way",
            "message John: running 10 minutes behind",
        ],
    },
    {
        "name": "draft_email",
        "description": "Composes an email draft (subject + body) from a short instruction and saves it to Drafts without sending.",
        "params": {"to": "string", "subject": "string", "instructions": "string"},
        "examples": [
            "write an email to my boss asking for Friday off",
            "draft a thank-you email to the interviewer",
            "compose an email to the landlord about the broken heater",
            "help me write an email declining the meeting",
        ],
    },
    {
        "name": "call_contact",
        "description": "Places a phone or VoIP call to a contact from the address book.",
        "params": {"contact_name": "string", "use_speaker": "boolean"},
        "examples": [
            "call Dad",
            "phone the dentist",
            "ring Emma on speaker",
            "dial my wife",
        ],
    },
    # --------------------------------------------------------------- weather
    {
        "name": "get_weather_forecast",
        "description": "Fetches current conditions and an hourly/daily forecast for a location.",
        "params": {"location": "string", "days": "integer"},
        "examples": [
            "what's the weather like today",
            "will it rain tomorrow in Seattle",
            "weekend forecast",
            "do I need an umbrella",
        ],
    },
    # ---------------------------------------------------------- local search
    {
        "name": "find_restaurants",
        "description": "Searches nearby places to eat, filtered by cuisine, price tier and rating.",
        "params": {"cuisine": "string", "near": "string", "price_tier": "integer", "open_now": "boolean"},
        "examples": [
            "find a good sushi place nearby",
            "cheap pizza around here",
            "where can I get dinner near the office",
            "best rated Thai restaurants in town",
        ],
    },
    {
        "name": "get_opening_hours",
        "description": "Returns business hours for a place and whether it is open right now.",
        "params": {"place_name": "string", "iso_date": "string"},
        "examples": [
            "is the pharmacy open now",
            "what time does Costco close",
            "opening hours for the library on Sunday",
            "when does the post office open",
        ],
    },
    {
        "name": "get_directions",
        "description": "Computes a route and ETA from the current location to a destination by the chosen travel mode.",
        "params": {"destination": "string", "mode": "string", "avoid_tolls": "boolean"},
        "examples": [
            "directions to the airport",
            "how do I get to Central Park by subway",
            "how long to drive to work",
            "walk me to the nearest train station",
        ],
    },
    {
        "name": "track_package",
        "description": "Gets the latest carrier tracking events and estimated delivery for a shipment.",
        "params": {"tracking_no": "string", "carrier": "string"},
        "examples": [
            "where is my package",
            "track UPS 1Z999AA10123456784",
            "when will my Amazon order arrive",
            "has my parcel been delivered",
        ],
    },
    # --------------------------------------------------------------- finance
    {
        "name": "log_expense",
        "description": "Adds a transaction to the ledger with amount, category and optional note.",
        "params": {"amount": "number", "category": "string", "note": "string"},
        "examples": [
            "I spent 12 dollars on lunch",
            "log 45.99 for groceries",
            "add a $30 taxi expense",
            "record 60 euros for gas",
        ],
    },
    {
        "name": "show_budget",
        "description": "Summarizes spending vs. budget per category for the current period.",
        "params": {"category": "string", "period": "string"},
        "examples": [
            "how much have I spent this month",
            "how much is left in my food budget",
            "am I over budget",
            "show my spending by category",
        ],
    },
    # -------------------------------------------------------------- learning
    {
        "name": "define_word",
        "description": "Dictionary lookup: returns definitions, part of speech and an example sentence.",
        "params": {"word": "string", "lang": "string"},
        "examples": [
            "what does ephemeral mean",
            "define serendipity",
            "meaning of the word 'ubiquitous'",
            "what's a quokka",
        ],
    },
    {
        "name": "translate_text",
        "description": "Machine-translates text from a source language (auto-detected by default) into a target language.",
        "params": {"text": "string", "target_lang": "string", "source_lang": "string"},
        "examples": [
            "how do you say 'where is the bathroom' in Spanish",
            "translate 'thank you very much' to Japanese",
            "what does 'je ne sais pas' mean in English",
            "say good morning in Italian",
        ],
    },
    {
        "name": "find_synonyms",
        "description": "Thesaurus lookup returning synonyms (and optionally antonyms) for a word.",
        "params": {"word": "string", "include_antonyms": "boolean"},
        "examples": [
            "another word for happy",
            "synonyms for important",
            "what's a fancier way to say big",
            "opposite of generous",
        ],
    },
    # ---------------------------------------------------------- productivity
    {
        "name": "start_pomodoro",
        "description": "Starts a focus session using the Pomodoro technique (work block followed by a short break).",
        "params": {"work_min": "integer", "break_min": "integer", "cycles": "integer"},
        "examples": [
            "start a pomodoro",
            "let's do a 25 minute focus session",
            "help me focus for the next hour",
            "begin 4 pomodoro cycles",
        ],
    },
    {
        "name": "create_event",
        "description": "Inserts a new event into the user's calendar.",
        "params": {"title": "string", "start_iso": "string", "duration_min": "integer", "attendees": "string"},
        "examples": [
            "schedule a meeting with Sam tomorrow at 3pm",
            "add dentist appointment on May 12 at 10",
            "put lunch with Priya on my calendar Friday noon",
            "book a 30 minute call with the team on Monday",
        ],
    },
    {
        "name": "list_events",
        "description": "Lists calendar events within a date range.",
        "params": {"start_iso": "string", "end_iso": "string"},
        "examples": [
            "what's on my calendar today",
            "do I have any meetings tomorrow",
            "what's my schedule next week",
            "am I free Thursday afternoon",
        ],
    },
    {
        "name": "cancel_event",
        "description": "Deletes a calendar event by id or fuzzy title/time match and optionally notifies attendees.",
        "params": {"event_id": "string", "title_hint": "string", "notify": "boolean"},
        "examples": [
            "cancel my 3pm meeting",
            "delete the dentist appointment",
            "remove Friday's lunch from my calendar",
            "call off tomorrow's standup",
        ],
    },
    {
        "name": "set_reminder",
        "description": "Creates a one-off reminder that triggers at a time or when arriving at/leaving a location.",
        "params": {"text": "string", "when_iso": "string", "location": "string"},
        "examples": [
            "remind me to call the bank at 2pm",
            "remind me to buy stamps when I get to the post office",
            "remind me tomorrow morning to water the plants",
            "don't let me forget to send the report tonight",
        ],
    },
    # ---------------------------------------------------------------- device
    {
        "name": "get_battery_status",
        "description": "Returns battery percentage, charging state and estimated time remaining.",
        "params": {},
        "examples": [
            "how much battery do I have",
            "battery level",
            "is my phone charging",
            "how long until my battery dies",
        ],
    },
    {
        "name": "toggle_wifi",
        "description": "Enables/disables the Wi-Fi radio or connects to a known SSID.",
        "params": {"enabled": "boolean", "ssid": "string"},
        "examples": [
            "turn off wifi",
            "connect to HomeNetwork",
            "switch wifi back on",
            "am I connected to wifi",
        ],
    },
    {
        "name": "take_screenshot",
        "description": "Captures the current screen and saves it to the gallery.",
        "params": {"delay_s": "integer"},
        "examples": [
            "take a screenshot",
            "screenshot this",
            "capture my screen in 3 seconds",
            "grab a screen capture",
        ],
    },
    {
        "name": "toggle_flashlight",
        "description": "Turns the camera LED torch on or off.",
        "params": {"on": "boolean"},
        "examples": [
            "turn on the flashlight",
            "torch off",
            "I need some light",
            "flashlight please",
        ],
    },
    {
        "name": "toggle_do_not_disturb",
        "description": "Enables or disables Do Not Disturb mode, optionally for a fixed duration.",
        "params": {"enabled": "boolean", "duration_min": "integer"},
        "examples": [
            "turn on do not disturb",
            "silence notifications for an hour",
            "don't disturb me until 5",
            "turn off DND",
        ],
    },
    # ------------------------------------------------------------------- fun
    {
        "name": "tell_joke",
        "description": "Returns a random joke, optionally from a category (puns, dad jokes, programming).",
        "params": {"category": "string"},
        "examples": [
            "tell me a joke",
            "make me laugh",
            "got any dad jokes",
            "tell me a programming joke",
        ],
    },
    {
        "name": "get_trivia_question",
        "description": "Fetches a multiple-choice trivia question by topic and difficulty.",
        "params": {"topic": "string", "difficulty": "string"},
        "examples": [
            "ask me a trivia question",
            "quiz me on geography",
            "let's play trivia",
            "give me a hard history question",
        ],
    },
]
