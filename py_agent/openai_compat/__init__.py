"""An OpenAI-compatible chat-completions backend: Ollama, llama.cpp, LM Studio, vLLM.

``OpenAIModel(base_url, model)`` implements the same ``LanguageModel`` protocol as
Chrome's Prompt API bridge, so the agent, its memory and its tools work unchanged.

Why the ReAct step stays a JSON object, not native ``tools`` calling
--------------------------------------------------------------------
Every step is one JSON object (thought, toolName, toolInput, finalAnswer), constrained
by ``response_format`` with the offered tools as an enum. We chose it over the API's
``tools``/``tool_calls`` for these reasons:

1. **Prefix caching.** Chat templates render the ``tools`` list into the system
   prompt, at the very start of the context. The agent offers a different handful
   of tools for each message (retrieval), so native tools would change the first
   tokens on every turn and the server would re-process the whole system
   instruction and few-shot examples each time. Our tools travel in the turn's
   user message, after the fixed prefix, which stays cached.
2. **It works on every server and model.** Native tool calls need a chat template
   with tool support and server flags (llama.cpp ``--jinja``; vLLM
   ``--enable-auto-tool-choice --tool-call-parser …``; Ollama refuses models not
   tagged for tools). ``response_format`` with a JSON schema is served by
   llama.cpp, vLLM, Ollama and LM Studio alike, and where a server refuses a schema
   the agent asks for a simpler one, down to none: the step is then parsed and
   corrected from plain text, as with any model (:mod:`py_agent.constraints`).
3. **Constrained decoding covers the whole step**: the tool name is an enum of the
   offered tools, so an unknown tool cannot be produced; vLLM's auto tool choice
   parses free model output and fails in ways we would have to correct anyway.
4. **One loop for every backend**: the Prompt API has no tool calling, so the
   same guards, few-shot examples and evaluations serve both.

A server that answers with ``tool_calls`` anyway is understood: the first call is
read as the equivalent step.
"""

from .client import ChatClient, Timeouts, normalize_base_url
from .discovery import ServerFacts
from .errors import (AuthenticationError, BadRequestError, ContextLengthError,
                     MalformedReplyError, ModelNotFoundError, RateLimitError,
                     ResponseFormatRefusedError, ServerError, ServerFailureError,
                     ServerTimeoutError, ServerUnreachableError, UnsupportedFeatureError)
from .model import DEFAULT_CONTEXT_WINDOW, OpenAIModel, OpenAISession, StreamChunk
from .transport import HttpRequest, HttpResponse, HttpTransport


def __getattr__(name: str):
    # Imported on demand: it needs threads and ssl, which Pyodide does not have.
    if name == "StdlibTransport":
        from .stdlib_transport import StdlibTransport
        return StdlibTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AuthenticationError", "BadRequestError", "ChatClient", "ContextLengthError",
    "DEFAULT_CONTEXT_WINDOW", "HttpRequest", "HttpResponse", "HttpTransport",
    "MalformedReplyError", "ModelNotFoundError", "OpenAIModel", "OpenAISession",
    "RateLimitError", "ResponseFormatRefusedError", "ServerError", "ServerFacts", "ServerFailureError", "ServerTimeoutError",
    "ServerUnreachableError", "StdlibTransport", "StreamChunk", "Timeouts",
    "UnsupportedFeatureError", "normalize_base_url",
]
