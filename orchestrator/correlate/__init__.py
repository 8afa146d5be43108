"""Per-request correlation: the pure join of client and server halves by request id (join.py) and the bus
subscriber that runs it live (live.py)."""

from orchestrator.correlate.join import Joiner, JoinerStatistics, KeyParser
from orchestrator.correlate.live import Correlator

__all__ = ["KeyParser", "Joiner", "JoinerStatistics", "Correlator"]
