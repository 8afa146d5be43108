"""Every event aqbench journals: frozen, tagged msgspec Structs (base, run, server, load, judging) with their
payloads (payloads.py), and the `AnyEvent` union built from them.

The journal format is designed here once. It imports from the project only the configuration (RunStarted
carries its resolved snapshot) and the judge's value types it reports. Schema evolution: add fields only at the end of a class,
with defaults; never retype or reuse a field or a tag without a new SCHEMA_VERSION, whose upgrade of
older journals lives in orchestrator/journal.py. Payloads are Structs; dicts remain only for foreign
data (log fields, AIPerf's aggregate, HTTP bodies kept as evidence).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias, Union

from orchestrator.events.base import SCHEMA_VERSION, Event
from orchestrator.events.judging import (
    AnswerIncomplete,
    CapabilityProbed,
    GateEvaluated,
    ModelResult,
    NoninferiorityJudged,
    ProcessSampled,
    SoakVerdict,
    SoakWindowClosed,
    SoakWindowOpened,
    VerdictReached,
)
from orchestrator.events.load import (
    AccountingChecked,
    AiperfExited,
    AiperfStarted,
    CauseCode,
    ClientRecord,
    Phase,
    RequestCorrelated,
    RequestsInFlight,
    RequestUnmatched,
    ServerRecord,
)
from orchestrator.events.payloads import (
    AiperfSettings,
    AnswerMismatch,
    CompletenessChange,
    GateCitation,
    GateCounts,
    HostFacts,
    IncompleteAnswer,
    ItemRef,
    Json,
    MemorySummary,
    NoninferiorityResult,
    NoticeContext,
    PhaseDetail,
    ResultRow,
    WindowStats,
)
from orchestrator.events.run import (
    EventsDropped,
    Failed,
    PhaseFinished,
    PhaseStarted,
    RunFinished,
    RunStarted,
    SubscriberFailed,
    Warned,
)
from orchestrator.events.server import (
    GpuSampled,
    LogLine,
    OrphanKilled,
    ResourceSampled,
    ServerExited,
    ServerHealthChanged,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    ServerState,
    ServerStateChanged,
)

__all__ = ["SCHEMA_VERSION", "Event", "AnyEvent", "EVENT_TYPES", "AiperfSettings", "AnswerMismatch", "CompletenessChange", "GateCitation", "GateCounts", "HostFacts", "IncompleteAnswer", "ItemRef", "Json", "MemorySummary", "NoninferiorityResult", "NoticeContext", "PhaseDetail", "ResultRow", "WindowStats", "RunStarted", "RunFinished", "PhaseStarted", "PhaseFinished", "Warned", "Failed", "EventsDropped", "SubscriberFailed", "ServerSpawned", "ServerStateChanged", "ServerReady", "ServerHealthChanged", "ServerExited", "ServerRestarting", "OrphanKilled", "ResourceSampled", "GpuSampled", "LogLine", "ServerState", "AiperfStarted", "AiperfExited", "ClientRecord", "ServerRecord", "RequestsInFlight", "RequestCorrelated", "RequestUnmatched", "AccountingChecked", "Phase", "CauseCode", "CapabilityProbed", "VerdictReached", "GateEvaluated", "ModelResult", "SoakWindowClosed", "SoakVerdict", "AnswerIncomplete", "SoakWindowOpened", "ProcessSampled", "NoninferiorityJudged"]


# The union is built from the classes above so that adding an event is one edit in one place.
EVENT_TYPES: tuple[type[Event], ...] = tuple(
    cls for cls in Event.__subclasses__() if cls.__module__.startswith(__name__ + ".")
)
if TYPE_CHECKING:
    # The type checker cannot build a union at run time: to it every event is an Event (narrow with
    # isinstance); msgspec decodes the real tagged union below.
    AnyEvent: TypeAlias = Event
else:
    AnyEvent = Union[EVENT_TYPES]  # noqa: UP007 - built from a tuple at run time, which `|` cannot do
