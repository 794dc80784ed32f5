"""The wire contract between the server and the browser, as pydantic models.

Every message is a JSON object with a `type` tag. The server sends `hello`, `snapshot`,
`step`, `event` and `error`; the browser sends `control`. Step fields mirror the engine's
`StepReport` (app/engine/report.py) name for name, so the engine, the server and the browser
talk about the same things. The JSON Schema in docs/protocol.schema.json is generated from
these models and a test fails when the two drift apart:

    python -m app.protocol > docs/protocol.schema.json
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter, create_model

from app.engine.trace import GROUPS, KINDS
from app.options import Options, bounds, config_name, settings_of
from app.speed import LESSON as LESSON  # the runner's names for the paces, from here
from app.speed import MAX as MAX
from app.speed import SPEED_MAX, SPEED_MIN

PROTOCOL_VERSION = 2
# The runs a server holds (app/web/runs.py): "class" is the one `trainingrun` started; the
# others are named "<story>.<run>" (a story chapter's run, e.g. "one-gpu.dp2").
CLASS_RUN = "class"
RUN_REF_PATTERN = r"^(class|[a-z0-9-]{1,32}\.[a-z0-9-]{1,16})$"
SCENE_NAME = "training-run"

# Event kinds the server raises: run control, and what went wrong around the run (a worker
# that failed, steps not recorded). The engine's own, `diverged` among them, are in report.py.
CONTROL_EVENT_KINDS = (
    "paused",
    "resumed",
    "speed_changed",
    "run_reset",
    "worker_failed",
    "record_failed",
    "fault_injected",
    "record_set_aside",
)

Speed = Literal["lesson", "max"] | Annotated[float, Field(ge=SPEED_MIN, le=SPEED_MAX)]
# "waiting": a `trainingrun watch` server with no run reporting to it (yet, or any more).
RunState = Literal["running", "paused", "resting", "waiting"]


class _Out(BaseModel):
    """Server-to-client records. Unknown attributes are ignored, so the engine may grow."""

    model_config = ConfigDict(from_attributes=True)


# --- pieces of a step (mirrors of the engine's dataclasses) ------------------------------


class EventMsg(_Out):
    type: Literal["event"] = "event"
    kind: str = Field(
        description="engine kind (checkpoint_saved, checkpoint_skipped, checkpoint_failed, "
        "gpu_failed, restored, gpu_replaced, epoch_started, shard_rebuilt) or server kind "
        "(paused, resumed, speed_changed, run_reset, diverged, worker_failed, record_failed, "
        "fault_injected, record_set_aside, recording_ended)"
    )
    step: int
    message: str
    detail: dict[str, Any] = Field(default_factory=dict)


class TraceSpanMsg(_Out):
    """One kind of work on a set of lanes at once (app/engine/trace.py `Span`)."""

    kind: str = Field(description="one of the kinds listed in hello.trace_kinds")
    t0: float = Field(description="simulated seconds from the start of the step")
    dur: float
    lanes: list[int] | None = Field(default=None, description="GPUs it runs on; null: all")
    wall_s: float | None = Field(default=None, description="measured seconds here")
    mb: int | None = Field(default=None, description="the microbatch it works on")


class TraceRingMsg(_Out):
    """A ring collective: 2(G-1) passes; in pass k ring position i sends one chunk to
    position i+1 (which chunk follows from the ring algorithm, see docs/protocol.md)."""

    kind: str
    t0: float
    pass_s: list[tuple[float, int]] = Field(
        description="seconds of each pass, run-length encoded as [seconds, passes in a row]"
    )
    ring: list[int] = Field(description="GPU ids in ring order")
    links: list[str] = Field(description="link kind of each ring position's outgoing hop")
    chunk_bytes: list[int] = Field(description="bytes of each chunk")
    wall_s: float | None = None
    mb: int | None = Field(default=None, description="the microbatch a tensor-parallel join is for")


class TraceP2PMsg(_Out):
    """A point-to-point transfer between pipeline stages: a send on `src` and a receive on
    `dst`, beside the GPUs' compute (a copy engine), so it overlaps other events."""

    kind: str
    t0: float
    dur: float
    src: int
    dst: int
    bytes: int
    link: str
    mb: int | None = None


class TraceAllToAllMsg(_Out):
    """An all-to-all in `gpus` (tokens to the GPUs holding their experts, and back): g-1 rounds;
    in round k position i sends to position i+k and receives from i-k."""

    kind: str
    t0: float
    round_s: list[float] = Field(description="seconds of each round")
    gpus: list[int]
    bytes: list[int] = Field(description="g x g, row-major: bytes gpus[i] sends to gpus[j]")
    links: list[str] = Field(description="g x g: the link each pair's bytes cross")
    mb: int | None = None


class TraceMsg(_Out):
    """The step as lanes of timed events, one lane per GPU, in a compact form that the
    browser expands (static/js/scene/trace.js; app/engine/trace.py `expand`)."""

    gpus: int
    step_s: float = Field(description="simulated seconds from the first start to the last end")
    spans: list[TraceSpanMsg]
    rings: list[TraceRingMsg]
    p2p: list[TraceP2PMsg] = Field(default_factory=list)
    all_to_all: list[TraceAllToAllMsg] = Field(default_factory=list)


class TraceKindMsg(_Out):
    kind: str
    group: str = Field(description="the time-bar group its seconds add to")
    transfer: bool = Field(description="moves data between GPUs (has a peer, bytes, link)")
    overlaps: bool = Field(
        default=False,
        description="runs beside the GPU's compute (a copy engine): adds no time to its lane",
    )


class TraceGroupMsg(_Out):
    id: str
    label: str


class LinkLoadMsg(_Out):
    kind: str
    hops: int
    bytes: int


class RingMsg(_Out):
    passes: int
    gpus: int
    elements: int
    chunk_bytes: int
    bytes_total: int
    bytes_per_gpu: int
    busiest_link_bytes: int
    links: list[LinkLoadMsg]


class LoaderMsg(_Out):
    workers: int
    queue_depth: int
    queue_capacity: int
    waited: bool
    wait_s: float
    epoch: int
    batch_in_epoch: int
    batches_per_epoch: int
    samples_per_epoch: int


class MemoryMsg(_Out):
    gpu: int
    weights: int
    grads: int
    optimizer: int
    activations: int
    total: int
    capacity: int


class ProbeTokenMsg(_Out):
    token: str
    p: float


class ProbeRouteMsg(_Out):
    """Where one MoE layer's router sent the prompt's last token, live."""

    layer: int = Field(description="0-based layer")
    experts: list[int] = Field(description="the top_k experts chosen (0-based), highest gate first")
    gates: list[float] = Field(description="their gates, renormalised over the chosen: sum 1")


class ProbeMsg(_Out):
    prompt: str
    top: list[ProbeTokenMsg]
    weights: list[float]
    weights_name: str
    route: list[ProbeRouteMsg] | None = Field(
        default=None, description="a model with experts: each layer's routing of the last token"
    )


class BatchTextMsg(_Out):
    replica: int = Field(description="the data-parallel replica that read it (0-based)")
    text: str = Field(description="one of the step's training texts, as its words")


class PlanStatsMsg(_Out):
    """What the run's parallel plan cost in this step, measured (app/engine/report.py)."""

    bubble_fraction: float = Field(
        description="share of the pipeline's stage time spent idle (0 without a pipeline)"
    )
    peak_activation_bytes: int = Field(description="the most any GPU held at once")
    stage_activation_bytes: list[int] = Field(description="each pipeline stage's peak")
    traffic_bytes: dict[str, int] = Field(
        description="bytes sent between GPUs in the step, by trace event kind"
    )


class StepFields(_Out):
    """Every field of the engine's StepReport, as it travels on the wire."""

    step: int
    epoch: int
    loss: float
    gpu_losses: list[float]
    grad_norm: float
    lr: float
    tokens: int
    tokens_total: int
    trace: TraceMsg
    sim_step_s: float
    wall_step_s: float
    ring: RingMsg
    loader: LoaderMsg
    memory: list[MemoryMsg]
    probe: ProbeMsg | None = None
    events: list[EventMsg] = Field(default_factory=list)
    plan_stats: PlanStatsMsg | None = Field(
        default=None, description="the plan's measured figures; null in older recorded frames"
    )
    texts: list[BatchTextMsg] = Field(
        default_factory=list,
        description="the first few texts of the step's batch, dealt over the copies in turn; "
        "empty in older recorded frames",
    )


class StepMsg(StepFields):
    type: Literal["step"] = "step"
    seq: int = Field(
        description="position in the server's record of steps; only ever goes up, also across "
        "restarts and resets (a rollback shows as `step` going down while `seq` goes up)"
    )
    sent_at: float | None = Field(
        default=None, description="server clock (Unix seconds) when the step was published"
    )


def trace_kinds() -> list[TraceKindMsg]:
    return [
        TraceKindMsg(
            kind=k,
            group=str(v["group"]),
            transfer=bool(v["transfer"]),
            overlaps=bool(v.get("overlaps", False)),
        )
        for k, v in KINDS.items()
    ]


def trace_groups() -> list[TraceGroupMsg]:
    return [TraceGroupMsg(id=i, label=label) for i, label in GROUPS]


# --- hello --------------------------------------------------------------------------------


class GpuMsg(_Out):
    id: int
    server: int
    local: int
    leaf: int


class ServerMsg(_Out):
    id: int
    leaf: int
    gpus: list[int]


class LeafMsg(_Out):
    id: int
    servers: list[int]
    spines: list[int]


class SpineMsg(_Out):
    id: int
    leaves: list[int]


class RingLinkMsg(_Out):
    src: int
    dst: int
    kind: Literal["nvlink", "leaf", "spine"]
    path: list[str]


class TopologyMsg(_Out):
    gpus: list[GpuMsg]
    servers: list[ServerMsg]
    leaves: list[LeafMsg]
    spines: list[SpineMsg]
    ring: list[int]
    ring_links: list[RingLinkMsg]


class ConfigMsg(_Out):
    """The run's RunConfig (app/engine/config.py), field for field."""

    seed: int
    gpus: int
    servers: int
    leaves: int
    spines: int
    preset: str
    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    experts: int = Field(default=0, description="experts per MoE layer; 0: a dense MLP")
    top_k: int = Field(default=2, description="experts each token is routed to")
    dtype: str
    batch_size: int
    lr: float
    warmup_steps: int
    weight_decay: float
    beta1: float
    beta2: float
    eps: float
    grad_clip: float
    data: str | None
    corpus_stories: int
    loader_workers: int
    prefetch: int
    checkpoint_every: int
    keep_checkpoints: int
    probe_every: int
    tp: int = Field(default=1, description="tensor-parallel GPUs per layer")
    pp: int = Field(default=1, description="pipeline stages")
    ep: int = Field(default=1, description="expert-parallel GPUs per EP group")
    microbatches: int = Field(default=1, description="microbatches per replica per step")
    schedule: str = Field(default="1f1b", description="pipeline schedule: gpipe or 1f1b")


class PlanMsg(_Out):
    """The run's parallel plan: dp x tp x pp = GPUs (app/engine/plan.py)."""

    dp: int = Field(description="data-parallel copies of the whole pipeline")
    tp: int = Field(description="GPUs each layer is split over (tensor parallel)")
    pp: int = Field(description="pipeline stages the layers are cut into")
    ep: int = Field(description="GPUs each layer's experts are shared out over")
    microbatches: int = Field(description="microbatches each copy's batch is cut into")
    schedule: str = Field(description="pipeline schedule: gpipe or 1f1b")
    experts: int = Field(description="experts per MoE layer; 0: a dense MLP")
    top_k: int = Field(description="experts each token is routed to")


class RoleMsg(_Out):
    """What one GPU does under the plan."""

    gpu: int
    dp: int = Field(description="its data-parallel copy")
    stage: int = Field(description="its pipeline stage")
    tp: int = Field(description="its tensor-parallel rank within the layer's split")
    ep: int = Field(description="its expert-parallel rank")
    layers: tuple[int, int] = Field(description="the layers its stage holds: [first, last + 1)")
    experts: tuple[int, int] = Field(
        description="the experts it holds in each MoE layer: [first, last + 1); [0, 0]: none"
    )
    holds: str = Field(description="what it holds, in words")


class PresetMsg(_Out):
    """The simulated hardware: named public figures the timing model assumes."""

    model_config = ConfigDict(extra="allow")
    name: str
    label: str
    sources: list[str] = Field(default_factory=list)


class AttachedRunMsg(_Out):
    """A real torch.distributed job reporting to this server (app/reporter/ in the job,
    app/attached/run.py here)."""

    backend: str = Field(description="its process group backend, e.g. gloo or nccl")
    device: str = Field(description="where its ranks compute, e.g. cpu or cuda")
    world_size: int = Field(description="ranks in the job")
    nodes: int = Field(description="machines the ranks run on")
    ranks_per_node: int
    hosts: list[str] = Field(description="the machines' names, as the ranks reported them")


class RecordingMsg(_Out):
    """A run played from a recording of a real run of this engine (app/run/recording.py)."""

    kind: Literal["recording"] = "recording"
    ref: str = Field(description="the run it is of, e.g. one-gpu.team64")
    steps: int = Field(description="steps recorded")
    first_step: int
    last_step: int = Field(description="the last recorded step: the run stops there")
    made_at: str = Field(description="when it was recorded (ISO 8601, UTC)")
    made_with: str = Field(description="how: the record command, or while first watched")


class HelloMsg(_Out):
    type: Literal["hello"] = "hello"
    protocol: int = PROTOCOL_VERSION
    run_id: str
    scene: str = SCENE_NAME
    can_control: bool
    config: ConfigMsg
    topology: TopologyMsg
    preset: PresetMsg
    n_params: int
    vocab_size: int
    plan: PlanMsg
    roles: list[RoleMsg] = Field(description="one per GPU, in GPU order")
    trace_kinds: list[TraceKindMsg] = Field(default_factory=trace_kinds)
    trace_groups: list[TraceGroupMsg] = Field(default_factory=trace_groups)
    watching: str = Field(
        default=CLASS_RUN,
        description="the run this page watches: 'class' (the one the server was started with) "
        "or another the server holds (GET /api/runs)",
    )
    measured: bool = Field(
        default=False,
        description="every number was measured on the user's own cluster (an attached run), "
        "none simulated: the step times are wall clock (or CUDA events), not the timing model",
    )
    attached: AttachedRunMsg | None = Field(default=None, description="the attached job")
    recording: RecordingMsg | None = Field(
        default=None,
        description="set when the steps are played from a recording of a real run, "
        "not computed now",
    )


# --- snapshot -----------------------------------------------------------------------------


class RunStatus(_Out):
    state: RunState
    speed: Speed
    step: int
    epoch: int
    loss: float | None
    tokens_total: int
    restarts: int
    viewers: int
    run_id: str


class HistoryPoint(_Out):
    seq: int
    step: int
    loss: float


class CheckpointMsg(_Out):
    step: int
    path: str
    bytes: int
    created: float
    ok: bool


class SnapshotMsg(_Out):
    type: Literal["snapshot"] = "snapshot"
    status: RunStatus
    last_step: StepMsg | None
    history: list[HistoryPoint] = Field(description="at most 2000 points, oldest first")
    events: list[EventMsg] = Field(description="the most recent events, at most 200")
    checkpoints: list[CheckpointMsg]


class ErrorMsg(_Out):
    type: Literal["error"] = "error"
    code: str
    message: str
    dropped: int | None = Field(
        default=None,
        ge=1,
        description="rate_limited: messages refused since the last such error (one a second "
        "at most)",
    )


# --- presenter and followers (app/web/presenter.py) -----------------------------------------------

# What a page shows, as named parts ("tour", "view", "lab", ...), each a flat object of plain
# values. The server only relays it, so a new part (a story chapter) needs no server change;
# the bounds keep one message small whatever a client puts in it.
FOLLOW_NAME = r"^[a-z][a-z0-9_]{0,31}$"
FollowName = Annotated[str, Field(pattern=FOLLOW_NAME)]
FollowValue = (
    bool
    | int
    | Annotated[float, Field(allow_inf_nan=False)]
    | Annotated[str, Field(max_length=200)]
    | None
)
FollowPart = Annotated[dict[FollowName, FollowValue], Field(max_length=24)]
FollowParts = Annotated[dict[FollowName, FollowPart], Field(max_length=16)]


class FollowMsg(_Out):
    """The presenter's view for followers: sent to every page when a presentation starts,
    moves or stops, and to a page that joins while one is on."""

    type: Literal["follow"] = "follow"
    presenting: bool = Field(description="a presentation is on")
    lead: bool = Field(default=False, description="this page is the one presenting")
    seq: int = Field(description="the presentation's move counter; only goes up")
    parts: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="what the presenter's page shows, by named part"
    )
    followers: int = Field(description="pages following the presenter now")
    sent_at: float = Field(description="server clock (Unix seconds) when it was sent")


class AttachStatusMsg(_Out):
    """Where a `trainingrun watch` server stands with the job reporting to it: sent on
    connect and whenever it changes (a rank appears, reports were dropped, the job went
    quiet)."""

    type: Literal["attach_status"] = "attach_status"
    waiting: bool = Field(description="no run is reporting: the page says how to attach one")
    message: str = Field(description="what is going on, in one line")
    run_id: str = ""
    world_size: int = 0
    ranks_seen: int = 0
    steps_shown: int = 0
    dropped: int = Field(default=0, description="reports the ranks dropped while unsent")


ServerMessage = Annotated[
    HelloMsg | SnapshotMsg | StepMsg | EventMsg | ErrorMsg | FollowMsg | AttachStatusMsg,
    Field(discriminator="type"),
]

# --- client to server ---------------------------------------------------------------------


# What a client may send as a speed: as Speed, but strictly a finite number (true is not 1
# step/s, "5" is not 5) when it is not a name.
SpeedValue = (
    Literal["lesson", "max"]
    | Annotated[float, Field(ge=SPEED_MIN, le=SPEED_MAX, strict=True, allow_inf_nan=False)]
)


class _In(BaseModel):
    # A misspelt field is an error the sender hears about, not something silently dropped;
    # numbers are numbers (no true for 1, no "7" for 7) and finite.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    type: Literal["control"] = "control"
    token: str | None = Field(default=None, max_length=256, description="presenter token")


class PauseControl(_In):
    action: Literal["pause"]


class ResumeControl(_In):
    action: Literal["resume"]


class StepControl(_In):
    """Run exactly one step; only while paused."""

    action: Literal["step"]


class SpeedControl(_In):
    action: Literal["speed"]
    value: SpeedValue


class ResetBase(_In):
    """Start a fresh run (new run_id); the old run's history stays in the database.

    Fields left out keep the current run's value. A new cluster shape must be one the server
    could start with: `gpus` at most the server's cap (the same bound as its `--gpus`),
    spread evenly over `servers`; the runner answers `bad_config` naming the rule otherwise.
    So must a new plan: the engine's rules (app/engine/plan.py `plan_problems`) decide, and
    `bad_config` names the rule a plan breaks.
    """

    action: Literal["reset"]


class OwnRunBase(BaseModel):
    """From any page, rights or not: start a run of its own (a side run only it controls),
    with the choices of a reset, and watch it. `key` is the page's own random key: it rides on
    the websocket's address (`?key=`), so the page controls its run again after a reconnect.
    A server holds a few such runs, each of at most a few GPUs, and stops one nobody has
    watched for a minute (app/web/runs.py)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    type: Literal["own_run"]
    key: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")


def reset_control(
    table: type[BaseModel], name: str = "ResetControl", base: type[BaseModel] = ResetBase
) -> type[BaseModel]:
    """The reset control for a table of settings (app/options.py): one optional field for each
    setting a reset may set, named as RunConfig names it, with the setting's bounds and help,
    so no client can ask for more than the server itself could be started with."""
    fields: dict[str, Any] = {}
    for name, on in settings_of(table):
        if on.reset is None:
            continue
        info = table.model_fields[name]
        kind = StrictInt if info.annotation is int else info.annotation
        field = Field(default=None, description=info.description, **bounds(info))
        fields[config_name(name, on)] = (kind | None, field)
    return create_model(name, __base__=base, __module__=__name__, __doc__=base.__doc__, **fields)


ResetControl = reset_control(Options)
OwnRunMsg = reset_control(Options, "OwnRunMsg", OwnRunBase)

# The plan's fields a reset may set, as RunConfig names them (app/run/controls.py `new_plan`).
PLAN_FIELDS = tuple(config_name(n, on) for n, on in settings_of(Options) if on.reset == "plan")
# The run's own fields a reset may set (seed, preset, batch, learning rate), likewise.
RUN_FIELDS = tuple(config_name(n, on) for n, on in settings_of(Options) if on.reset == "run")


class FailGpuControl(_In):
    """Fail one GPU now; the run rolls back to the last good checkpoint."""

    action: Literal["fail_gpu"]
    gpu: StrictInt = Field(
        ge=0, le=2**31 - 1, description="checked against the cluster size by the runner"
    )


class CheckpointControl(_In):
    action: Literal["checkpoint_now"]


FaultKind = Literal["dead", "straggler", "data_stall", "link"]  # app/engine/steptrace.py


class InjectFaultControl(_In):
    """Inject a fault at scale from the next step (app/engine/trainer.py `inject`): a GPU
    that dies (a rollback), a straggler GPU (slow; the others wait for it at the all-reduce),
    a stalled data loader (every GPU waits for its batch) or a cut link (the ring hop out of
    a GPU takes the longer way round). The runner checks `target` against the run and
    answers `bad_gpu` or `bad_fault` naming what is wrong."""

    action: Literal["inject_fault"]
    kind: FaultKind
    target: StrictInt = Field(
        ge=0,
        le=60_000,
        description="the GPU (dead, straggler), the GPU whose outgoing ring link is cut "
        "(link), or the milliseconds of simulated time the loaders stall (data_stall, 1 or more)",
    )
    steps: StrictInt = Field(default=3, ge=1, le=1000, description="steps the fault lasts")


Control = Annotated[
    PauseControl
    | ResumeControl
    | StepControl
    | SpeedControl
    | ResetControl
    | FailGpuControl
    | CheckpointControl
    | InjectFaultControl,
    Field(discriminator="action"),
]
ClientMessage = Control  # the only thing a client sends today


class PresentMsg(BaseModel):
    """From a page with control rights: start or stop presenting, or move the room (`parts`:
    what the page shows now). Only the presenting page's moves reach the followers."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    type: Literal["present"]
    action: Literal["start", "stop", "move"]
    parts: FollowParts = Field(default_factory=dict)
    token: str | None = Field(default=None, max_length=256, description="presenter token")


class FollowingMsg(BaseModel):
    """From any page: it follows the presenter, or has broken away to explore on its own."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["following"]
    following: bool


class WatchMsg(BaseModel):
    """From any page: watch another run the server holds (its hello and snapshot follow), or
    the class run again. Watching needs no rights; controlling a run does. `warm` instead
    only starts that run, if it is not running, for a watch that is coming (a story's next
    chapters); nothing is sent back, and a run that cannot start is not an error then."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["watch", "warm"]
    run: str = Field(min_length=1, max_length=64, pattern=RUN_REF_PATTERN)


present_adapter: TypeAdapter[Any] = TypeAdapter(PresentMsg)
watch_adapter: TypeAdapter[Any] = TypeAdapter(WatchMsg)
own_run_adapter: TypeAdapter[Any] = TypeAdapter(OwnRunMsg)
following_adapter: TypeAdapter[Any] = TypeAdapter(FollowingMsg)


control_adapter: TypeAdapter[Any] = TypeAdapter(Control)
server_message_adapter: TypeAdapter[Any] = TypeAdapter(ServerMessage)


# --- a real job reporting its steps (app/reporter/ -> POST /api/attach) ----------------------

ATTACH_MAX_STEPS = 128  # step reports in one batch
Seconds = Annotated[float, Field(ge=0.0, le=86_400.0)]
Count = Annotated[int, Field(ge=0, le=2**53)]
ShortName = Annotated[str, Field(min_length=1, max_length=64)]


class _Report(BaseModel):
    # As strict as a control: misspelt fields are errors, numbers are finite numbers.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class RankInfo(_Report):
    """Who is reporting: one rank of a torch.distributed job."""

    rank: int = Field(ge=0, le=65_535)
    world_size: int = Field(ge=1, le=4096)
    local_rank: int = Field(ge=0, le=1024)
    local_world_size: int = Field(ge=1, le=1024, description="ranks on this rank's machine")
    node: int = Field(ge=0, le=65_535, description="the machine's index (torchrun's GROUP_RANK)")
    host: str = Field(min_length=1, max_length=128)
    backend: ShortName
    device: ShortName
    params: Count = Field(default=0, description="the model's parameters")
    weights_bytes: Count = 0
    grads_bytes: Count = 0
    optimizer_bytes: Count = 0
    device_memory_bytes: Count = Field(default=0, description="the device's memory; 0: unknown")
    peak_memory_bytes: Count = Field(default=0, description="the most the rank had allocated")


class RankStep(_Report):
    """One rank's step, measured: wall clock on a CPU, CUDA events on a GPU."""

    step: int = Field(ge=0, le=2**53)
    loss: float | None = Field(default=None, ge=-1e30, le=1e30)
    tokens: Count = 0
    tokens_total: Count = 0
    lr: float | None = Field(default=None, ge=0.0, le=1e6)
    grad_norm: float | None = Field(default=None, ge=0.0, le=1e30)
    data_s: Seconds = 0.0
    forward_s: Seconds = 0.0
    backward_s: Seconds = Field(
        default=0.0, description="the backward call, including any wait for the all-reduce"
    )
    optimizer_s: Seconds = 0.0
    step_s: Seconds = Field(default=0.0, description="the whole step")
    allreduce_s: Seconds = Field(
        default=0.0, description="the gradient all-reduce, from its first launch to its end"
    )
    allreduce_exposed_s: Seconds = Field(
        default=0.0, description="the part the rank waited for after its backward compute"
    )
    allreduce_bytes: Count = Field(default=0, description="gradient bytes all-reduced")
    allreduce_calls: Count = Field(default=0, description="all-reduce calls (DDP buckets)")
    allreduce_elements: Count = Field(default=0, description="gradient elements all-reduced")


class AttachBatch(_Report):
    """What a rank's reporter sends to POST /api/attach: who it is and its latest steps,
    oldest first."""

    type: Literal["attach"] = "attach"
    protocol: int = Field(ge=1, le=1000)
    run_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    rank: RankInfo
    steps: list[RankStep] = Field(max_length=ATTACH_MAX_STEPS)
    dropped: Count = Field(default=0, description="reports this rank dropped so far")
    token: str | None = Field(default=None, max_length=256, description="presenter token")


attach_batch_adapter: TypeAdapter[Any] = TypeAdapter(AttachBatch)


# --- the recorded run, page by page (GET /api/steps; the page's rewind) ---------------------


class RecordedStepMsg(_Out):
    """One recorded step as runs.sqlite keeps it."""

    seq: int = Field(description="position in the server's record (a rollback repeats `step`)")
    step: int
    epoch: int
    loss: float
    grad_norm: float
    lr: float
    tokens_total: int
    sim_step_s: float
    wall_step_s: float
    time: float = Field(description="server clock (Unix seconds) when the step was recorded")
    probe: ProbeMsg | None = Field(
        description="the probe as it stood at this step: the latest computed at or before it"
    )
    probe_step: int | None = Field(description="the step that probe was computed at")


class StepsPage(_Out):
    """Recorded steps `from`..`to` of a run, in the order they were trained, one page."""

    type: Literal["steps"] = "steps"
    run_id: str
    from_step: int = Field(description="the `from` asked for")
    to_step: int = Field(description="the `to` asked for")
    first_step: int | None = Field(description="the run's lowest recorded step")
    last_step: int | None = Field(description="the run's highest recorded step")
    recorded: int = Field(description="steps the run has recorded in all")
    steps: list[RecordedStepMsg]
    next_after_seq: int | None = Field(
        description="more steps in the range: ask again with after_seq set to this"
    )
    checkpoints: list[int] = Field(
        description="steps of the checkpoints kept on disk (full weights exist for these)"
    )


def json_schema() -> dict[str, Any]:
    """One JSON Schema document for both directions of the wire."""
    server = server_message_adapter.json_schema(ref_template="#/$defs/{model}")
    client = control_adapter.json_schema(ref_template="#/$defs/{model}")
    present = TypeAdapter(PresentMsg | FollowingMsg | WatchMsg | OwnRunMsg).json_schema(
        ref_template="#/$defs/{model}"
    )
    defs = {**server.pop("$defs", {}), **client.pop("$defs", {}), **present.pop("$defs", {})}
    defs["AttachBatch"] = attach_batch_adapter.json_schema(ref_template="#/$defs/{model}")
    defs.update(defs["AttachBatch"].pop("$defs", {}))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Training Run wire protocol",
        "description": "Every message is a JSON object tagged by `type`. See docs/protocol.md.",
        "protocol": PROTOCOL_VERSION,
        "anyOf": [
            {"$ref": "#/$defs/ServerMessage"},
            {"$ref": "#/$defs/ClientMessage"},
            {"$ref": "#/$defs/PresentMsg"},
            {"$ref": "#/$defs/FollowingMsg"},
            {"$ref": "#/$defs/WatchMsg"},
            {"$ref": "#/$defs/OwnRunMsg"},
        ],
        "$defs": {**dict(sorted(defs.items())), "ServerMessage": server, "ClientMessage": client},
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text())
