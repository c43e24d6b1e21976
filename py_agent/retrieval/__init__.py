"""Tool retrieval: the few tools that matter for a message, and why.

- :mod:`.text`: normalisation (Snowball stems, stop words, arithmetic as a signal);
- :mod:`.bm25`: BM25F over a tool's fields;
- :mod:`.ngrams`: character n-grams, the signal that survives spelling mismatch;
- :mod:`.embeddings`: static word vectors, the signal that survives vocabulary mismatch;
- :mod:`.retriever`: :class:`ToolRetriever`, fusing the three, with follow-ups.
"""

from .retriever import FieldWeights, PreviousTurn, ScoredTool, ToolRetriever, Why
from .text import STOP_WORDS, analyze, stem, tokenize, words

__all__ = ["FieldWeights", "PreviousTurn", "STOP_WORDS", "ScoredTool", "ToolRetriever", "Why",
           "analyze", "stem", "tokenize", "words"]
