"""The replay harness: a session's recorded compactions re-run with today's prompts.

- ``harness``: the replay itself, and ``python -m py_agent.replay``'s command line;
- ``report``: what a replay reports, recorded and replayed memory side by side, as data
  and as Markdown.
"""

from .harness import load_probes, main, replay
from .report import Probe, ReplayedCompaction, ReplayReport, render_markdown

__all__ = ["Probe", "ReplayReport", "ReplayedCompaction", "load_probes", "main", "render_markdown",
           "replay"]
