"""Small talk, as sentences an embedder reads: the no-tool side of the offer.

A message whose sentence vector is closer to one of these than to every tool (and
close to it in absolute terms) is chit-chat: it is offered no tool. Written for this
purpose (greetings, thanks, feelings, opinions, questions about the assistant, general
knowledge); in English only, since the embedding space is multilingual. The threshold
and margin were tuned on the tune halves (docs/retrieval.md, "Chit-chat").
"""

SMALL_TALK = (
    "hi", "hello there", "good morning!", "hey, how are you?", "how's it going",
    "good night", "thanks!", "thank you so much", "ok cool", "got it", "sounds good",
    "never mind", "lol", "haha that's funny", "awesome", "great job", "sorry about that",
    "no worries", "bye, see you later", "I'm tired today", "I feel a bit sad",
    "I'm so happy right now", "ugh what a long week", "I'm bored", "that was a great movie",
    "what's your favourite colour?", "do you like music?", "who are you?", "are you a robot?",
    "what can you do?", "tell me about yourself", "who wrote Hamlet?", "why is the sky blue?",
    "what is the capital of France?", "how tall is Mount Everest?",
    "when did the Second World War end?", "what do you think about cats?",
    "life is strange sometimes", "I had pizza for lunch", "my weekend was fun",
    "that's interesting",
)
