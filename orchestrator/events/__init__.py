"""Every event aqbench journals as a frozen, tagged msgspec Struct, their payloads, value types and detail unions,
and the `AnyEvent` union: the journal's schema, designed here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias, Union

# Imports from the project only the configuration (RunStarted carries its resolved snapshot); judges import their
# value types from here (values.py), never the reverse. Schema evolution: add fields only at the end of a class, with
# defaults, and new kinds of detail as new tagged variants of their union (phases.py, verdicts.py, evidence.py); never
# retype or reuse a field or a tag without a new SCHEMA_VERSION, whose upgrade of older journals lives in
# orchestrator/spine/journal_upgrade.py. Dicts of anything remain only for foreign data, in the fields
# payloads.FOREIGN_JSON lists.
from orchestrator.events.ab import AbPhase, AbPower
from orchestrator.events.base import SCHEMA_VERSION, Event, snake_tag
from orchestrator.events.evidence import (
    CAPABILITY_EVIDENCE,
    CapabilityEvidence,
    ConditioningEvidence,
    HttpExchange,
    PairAnswers,
    TextOnlyEvidence,
    TranscriptionEvidence,
    TransportEvidence,
)
from orchestrator.events.gpu import GpuIdentified, GpuIdentity, GpuProcessMemory
from orchestrator.events.host import HostSampled
from orchestrator.events.judging import (
    AnswerIncomplete,
    CapabilityProbed,
    GateEvaluated,
    ModelResult,
    NoninferiorityJudged,
    ProcessSampled,
    SoakHandover,
    SoakStopped,
    SoakTail,
    SoakVerdict,
    SoakWindowClosed,
    SoakWindowOpened,
    VerdictReached,
)
from orchestrator.events.key import RunKey
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
    FOREIGN_JSON,
    AiperfSettings,
    AnswerMismatch,
    AudioFacts,
    CompletenessChange,
    GateCitation,
    GateCounts,
    HostFacts,
    IncompleteAnswer,
    ItemRef,
    Json,
    NoninferiorityResult,
    NoticeContext,
    ResultRow,
)
from orchestrator.events.phases import (
    PHASE_DETAILS,
    AiperfPhase,
    AiperfRunPhase,
    CapabilityPhase,
    CorrectnessPhase,
    DatasetPhase,
    IdentityPhase,
    ModelPhase,
    NoninferiorityPhase,
    PhaseDetail,
    ReferencePhase,
    ServerPhase,
    SoakPhase,
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
    RESTART_CAUSES,
    GpuSampled,
    LogLine,
    OrphanKilled,
    OrphanReaped,
    ResourceSampled,
    RestartCause,
    ServerExited,
    ServerHealthChanged,
    ServerLoadSampled,
    ServerReady,
    ServerRestarting,
    ServerSpawned,
    ServerState,
    ServerStateChanged,
)
from orchestrator.events.sweep import (
    CapacityEstimate,
    PointStats,
    SloCapacity,
    SloCheck,
    SloPower,
    SweepConcluded,
    SweepPhase,
    SweepPointJudged,
)
from orchestrator.events.values import (
    AiperfRunFact,
    GateResult,
    MemorySummary,
    RestartFact,
    ServerExitFact,
    SoakLimits,
    StopPlan,
    Summary,
    TrendPlan,
    WindowStats,
)
from orchestrator.events.verdicts import (
    VERDICT_DETAILS,
    AccountingDetail,
    AiperfGeneration,
    CorrectnessDetail,
    DriftDetail,
    ErrorRateDetail,
    GapDetail,
    MemoryDetail,
    PooledGate,
    ProcessCheck,
    RestartDetail,
    RunAccount,
    SampledDriftDetail,
    SampledMemoryDetail,
    TailDetail,
    TrendNumbers,
    VerdictDetail,
    WindowCorrectness,
    WindowGap,
    verdict_numbers,
)

__all__ = [
    "SCHEMA_VERSION", "Event", "AnyEvent", "EVENT_TYPES", "snake_tag",
    # payloads
    "AiperfSettings", "AnswerMismatch", "AudioFacts", "CompletenessChange", "GateCitation", "GateCounts",
    "HostFacts", "IncompleteAnswer", "ItemRef", "Json", "FOREIGN_JSON", "NoninferiorityResult", "NoticeContext",
    "ResultRow",
    "RunKey",
    # values
    "Summary", "GateResult", "MemorySummary", "WindowStats", "SoakLimits", "ServerExitFact", "RestartFact", "AiperfRunFact", "TrendPlan", "StopPlan",
    # phase details
    "PhaseDetail", "PHASE_DETAILS", "DatasetPhase", "ModelPhase", "ServerPhase", "CapabilityPhase",
    "CorrectnessPhase", "IdentityPhase", "AiperfPhase", "AiperfRunPhase", "ReferencePhase", "NoninferiorityPhase",
    "SoakPhase",
    "AbPhase",
    "AbPower",
    # soak verdict details
    "VerdictDetail", "VERDICT_DETAILS", "TrendNumbers", "MemoryDetail", "AiperfGeneration", "SampledMemoryDetail", "SampledDriftDetail", "DriftDetail", "TailDetail",
    "ErrorRateDetail", "WindowCorrectness", "PooledGate", "CorrectnessDetail", "RestartDetail", "ProcessCheck",
    "WindowGap", "GapDetail", "RunAccount", "AccountingDetail", "verdict_numbers",
    # capability evidence
    "CapabilityEvidence", "CAPABILITY_EVIDENCE", "HttpExchange", "TransportEvidence", "PairAnswers", "ConditioningEvidence",
    "TextOnlyEvidence", "TranscriptionEvidence",
    # events
    "RunStarted", "RunFinished", "PhaseStarted", "PhaseFinished", "Warned", "Failed", "EventsDropped",
    "SubscriberFailed", "ServerSpawned", "ServerStateChanged", "ServerReady", "ServerHealthChanged", "ServerExited",
    "ServerRestarting", "RestartCause", "RESTART_CAUSES", "OrphanKilled", "OrphanReaped", "ResourceSampled", "ServerLoadSampled", "GpuSampled", "LogLine", "ServerState", "AiperfStarted",
    "AiperfExited", "ClientRecord", "ServerRecord", "RequestsInFlight", "RequestCorrelated", "RequestUnmatched",
    "AccountingChecked", "Phase", "CauseCode", "CapabilityProbed", "VerdictReached", "GateEvaluated", "ModelResult",
    "SoakWindowClosed", "SoakVerdict", "AnswerIncomplete", "SoakWindowOpened", "SoakHandover", "ProcessSampled",
    "NoninferiorityJudged", "HostSampled", "GpuIdentified", "SoakStopped", "SoakTail",
    # GPU payloads
    "GpuIdentity", "GpuProcessMemory",
    # sweep
    "SloCheck", "SloPower", "PointStats", "SweepPointJudged", "SweepConcluded", "SweepPhase", "SloCapacity",
    "CapacityEstimate",
]


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
