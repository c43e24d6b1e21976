"""Archive recall: find the archived turns, of any session, that answer a query.

- :mod:`.analysis`: a turn's terms per field (user, answer, tools, names) and display text;
- :mod:`.dates`: "last week", "yesterday", "in March" resolved against the query's time;
- :mod:`.neighbors`: related words by meaning, for query expansion;
- :mod:`.query`: a query's weighted terms, time and speaker;
- :mod:`.segment`: one session's turns and postings;
- :mod:`.index`: :class:`RecallIndex`, incremental BM25F with conversation, time, speaker
  and recency signals (see docs/recall.md);
- :mod:`.storage`: a session's part of the index as bytes, for stores;
- :mod:`.hit`: :class:`Hit`, what a search returns, with :class:`HitWhy`.
"""

from .analysis import AnalyzedTurn, analyze_turn
from .dates import TimeHint, read_time
from .hit import Hit, HitWhy
from .index import RecallIndex, RecallSettings
from .storage import ANALYZER_VERSION, IndexBlobError, StaleIndexError, dump_session, load_session

__all__ = ["ANALYZER_VERSION", "AnalyzedTurn", "Hit", "HitWhy", "IndexBlobError", "RecallIndex",
           "RecallSettings", "StaleIndexError", "TimeHint", "analyze_turn", "dump_session",
           "load_session", "read_time"]
