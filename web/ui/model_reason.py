# Why Chrome's built-in model cannot answer here, as far as the page can tell: named
# above the generic guide. The LLM host finds the reason by asking availability() again
# with less (web/llm_host.js): a frame or page whose permissions policy blocks the Prompt
# API, languages the model does not take (it then answers without naming any), other
# options, the device itself. (A model that waits for a click to download, or is
# downloading, is ui/gemini_nano.py's download box's to explain.)
# Microsoft Edge ships the same API with its own model: on Edge the guide says how to
# turn it on there, in two lines of its own.
from pyscript import window

from ui.app import state
from ui.dom import by_id, missing

reason_box = by_id("model-reason")
edge_lines = by_id("edge-guide")

REASONS = {
    "unsupported": ("This browser has no Prompt API (LanguageModel), so there is no "
                    "built-in model to ask."),
    "frame": ("This page runs in a frame from another site, and that site did not let it use "
              "the Prompt API: the frame needs allow=\"language-model\" (the permissions "
              "policy), or open this page in its own tab."),
    "policy": ("This page's permissions policy does not allow the Prompt API "
               "(\"language-model\"): the server that sends it must allow it, or your "
               "organisation has turned it off."),
    "options": ("Chrome's model cannot take the kind of input and output the agent asks for "
                "(text) on this device."),
    "device": ("Chrome reports its model as unavailable on this device: the flags, the "
               "device's requirements or a policy stand in the way (see below)."),
}

# The same, in a few words, for the status line.
SHORT_REASONS = {
    "unsupported": "this browser has no Prompt API (LanguageModel)",
    "frame": "this page runs in a frame from another site that did not allow it",
    "policy": "this page's permissions policy does not allow it",
    "options": "it cannot take text in and out here",
    "device": "Chrome reports it as unavailable on this device",
}

LANGUAGE_NAMES = {"en": "English", "es": "Spanish", "ja": "Japanese", "de": "German",
                  "fr": "French"}


def language_text(languages):
    names = ", ".join("%s (%s)" % (LANGUAGE_NAMES.get(code, code), code)
                      for code in languages or []) or "the language asked for"
    return ("Chrome's model does not list %s among its languages here, so the agent asks "
            "without naming one; its answers may be less reliable." % names)


def reason_text(reason, languages=None):
    """What the page says about ``reason`` (web/llm_host.js's names), or "" for none."""
    if reason == "language":
        return language_text(languages)
    return REASONS.get(reason or "", "")


def is_edge():
    """Microsoft Edge, by its brand (User-Agent Client Hints) or its user agent."""
    navigator = window.navigator
    data = navigator.userAgentData
    brands = [] if missing(data) else [str(data.brands[i].brand)
                                       for i in range(data.brands.length)]
    return "Microsoft Edge" in brands or " Edg/" in str(navigator.userAgent)


def short_reason(reason):
    """The reason in a few words, or "" for none known."""
    return SHORT_REASONS.get(reason or "", "")


def show_reason(using_prompt_api):
    """Name the reason Chrome's model is missing (``using_prompt_api``: the page would
    answer with it), before the guide; Edge's lines on Edge."""
    reason = state.get("model_reason")
    text = reason_text(reason, state.get("model_languages")) if using_prompt_api else ""
    reason_box.textContent = text
    reason_box.hidden = not text
    reason_box.setAttribute("data-reason", (reason or "") if text else "")
    edge_lines.hidden = not is_edge()
