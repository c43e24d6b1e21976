"""The public knobs of a turn: deadlines and retries of its model calls and tool calls.

Plain frozen data, given to :class:`~py_agent.Agent` and read by the loop
(:mod:`py_agent.turn.loop`) and the tool runner (:mod:`py_agent.turn.tool_runner`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepPolicy:
    """Deadlines and retries of the model calls in a turn.

    The default step deadline is sized for Gemini Nano on the slowest machines
    Chrome runs it on (CPU only): a step clone re-reads at most the memory, tools
    and message (~3,000 tokens, prefill at ~100 tokens/s ≈ 30 s) and writes a step
    of up to ~500 tokens (~10 tokens/s ≈ 50 s). A call past the deadline ends the
    turn as failed (saved, with a clear message); it is not retried.

    Attributes:
        timeout_s: deadline of one step call (``prompt``), and of the clone and
            token count around it.
        retries: further attempts of a step call that failed with a retryable
            :class:`~py_agent.model.ModelError` (a network error), after
            ``retry_delay_s``. None by default: backends retry what is worth it
            themselves (the OpenAI-compatible client retries 429 and 502-504).
    """

    timeout_s: float = 90.0
    retries: int = 0
    retry_delay_s: float = 1.0

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError("StepPolicy.timeout_s must be positive")
        if self.retries < 0 or self.retry_delay_s < 0:
            raise ValueError("StepPolicy.retries and retry_delay_s must not be negative")


@dataclass(frozen=True)
class ToolPolicy:
    """How tool calls are guarded. Defaults suit small, local tools.

    A call that passes ``timeout_s`` ends the call with an observation saying so;
    it is not retried. Only :class:`~py_agent.tools.RetryableToolError` is retried, up to
    ``max_attempts`` calls with exponential backoff.
    """

    timeout_s: float = 3.0
    max_attempts: int = 3
    backoff_s: float = 0.25
    backoff_factor: float = 2.0
    max_observation_chars: int = 1500

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError("ToolPolicy.timeout_s must be positive")
        if self.max_attempts < 1:
            raise ValueError("ToolPolicy.max_attempts must be at least 1")
        if self.max_observation_chars < 100:
            raise ValueError("ToolPolicy.max_observation_chars must be at least 100")
