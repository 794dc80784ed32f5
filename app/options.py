"""The one table of run and server settings.

Each setting is a field of `Options`, declared once: its type, bounds, default and help text
(the field's `description`), and, in an `On` marker in its `Annotated` metadata, the command
lines that take it, its option's name where that is not `--field-name`, whether a reset
control may set it, and RunConfig's name for it where that differs. A field with no marker is
read from its environment variable only.

Everything else follows from the table: the TRAININGRUN_* variables (pydantic-settings,
here), the serve, train and watch options (app/cli/flags.py), the reset control's fields and
bounds (app/protocol.py `reset_control`, `PLAN_FIELDS`), the words the plan's rules use for a
setting, and the RunConfig a server starts from (app/settings.py). The web edge's own checks
live on `Settings` (app/settings.py); this module imports neither the edge nor the wire
contract, so both may read it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, Field, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.engine.config import RunConfig
from app.engine.plan import SCHEDULES, plan_problems
from app.engine.timing import PRESETS
from app.speed import LESSON, parse_speed

Command = Literal["serve", "train", "watch"]
# How a reset control passes a setting on (app/run/controls.py `reset`): `plan` fields go to
# the new RunConfig as they are; `run` (seed, preset) and `cluster` (gpus, servers) are
# checked by handlers of their own first.
ResetKind = Literal["run", "cluster", "plan"]

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")  # uvicorn's
# RunConfig fields the plan's rules name that no setting sets: their words in a message.
FIXED_NAMES = {"n_head": "the model's heads", "n_embd": "the model's width"}
RUN_CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(RunConfig))


@dataclasses.dataclass(frozen=True, init=False)
class On:
    """Where a setting shows up besides its environment variable."""

    commands: tuple[Command, ...]
    flag: str | None  # the option, when it is not --field-name
    metavar: str | None
    choices: tuple[str, ...] | None  # the names a text setting may take
    defaults: tuple[tuple[Command, Any], ...]  # a command's own default, where it differs
    reset: ResetKind | None  # None: no reset control may set it
    config: str | None  # RunConfig's name for it, when not the field's

    def __init__(
        self,
        *commands: Command,
        flag: str | None = None,
        metavar: str | None = None,
        choices: tuple[str, ...] | None = None,
        defaults: Mapping[Command, Any] | None = None,
        reset: ResetKind | None = None,
        config: str | None = None,
    ) -> None:
        values = {
            "commands": commands,
            "flag": flag,
            "metavar": metavar,
            "choices": choices,
            "defaults": tuple((defaults or {}).items()),
            "reset": reset,
            "config": config,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)


ENV_ONLY = On()


class Options(BaseSettings):
    """Every run and server setting. Anything not given on the command line can come from
    the environment (for example TRAININGRUN_PORT=9000 or TRAININGRUN_TOKEN=...)."""

    model_config = SettingsConfigDict(env_prefix="TRAININGRUN_", extra="ignore")

    # The run. The reset fields keep the order the reset control has always had.
    seed: Annotated[int, On("serve", "train", reset="run")] = Field(
        default=RunConfig.seed,
        ge=0,
        le=2**31 - 1,
        description="the run's seed; same seed, same run",
    )
    preset: Annotated[str, On("serve", "train", choices=tuple(sorted(PRESETS)), reset="run")] = (
        Field(
            default=RunConfig.preset,
            min_length=1,
            max_length=64,
            description="simulated GPU and network hardware the step times are for",
        )
    )
    gpus: Annotated[int, On("serve", "train", reset="cluster")] = Field(
        default=RunConfig.gpus, ge=1, le=4096, description="simulated GPUs in all"
    )
    servers: Annotated[int, On("serve", "train", reset="cluster")] = Field(
        default=RunConfig.servers,
        ge=1,
        le=1024,
        description="servers the GPUs are spread evenly over",
    )
    leaves: int = Field(default=RunConfig.leaves, ge=1, description="leaf switches")
    spines: int = Field(default=RunConfig.spines, ge=1, description="spine switches")
    batch_size: Annotated[int | None, On("serve", "train", reset="run")] = Field(
        default=None,
        ge=1,
        le=1024,
        description=f"global batch in sequences (default {RunConfig.batch_size}, or one per GPU)",
    )
    lr: Annotated[float, On("serve", "train", reset="run")] = Field(
        default=RunConfig.lr,
        gt=0,
        le=1,
        description="the learning rate at its peak, after the warm-up steps",
    )
    checkpoint_every: Annotated[int, On("serve", "train")] = Field(
        default=RunConfig.checkpoint_every,
        ge=0,
        description="steps between checkpoints, 0 for none",
    )
    # The parallel plan and the model's shape (app/engine/plan.py): whether they fit
    # together is the engine's to say; these bounds are the server's own.
    tp: Annotated[int, On("serve", "train", reset="plan")] = Field(
        default=RunConfig.tp,
        ge=1,
        le=64,
        description="tensor parallel: GPUs each layer is split over (by attention heads and "
        "MLP columns), inside one server",
    )
    pp: Annotated[int, On("serve", "train", reset="plan")] = Field(
        default=RunConfig.pp,
        ge=1,
        le=32,
        description="pipeline parallel: stages the layers are split into",
    )
    ep: Annotated[int, On("serve", "train", reset="plan")] = Field(
        default=RunConfig.ep,
        ge=1,
        le=64,
        description="expert parallel: GPUs that share out each layer's experts; needs experts",
    )
    microbatches: Annotated[int, On("serve", "train", reset="plan")] = Field(
        default=RunConfig.microbatches,
        ge=1,
        le=256,
        description="microbatches each data-parallel copy's batch is cut into; gradients add "
        "up over them",
    )
    # Text, not a Literal: the plan's rules name a bad one (app/engine/plan.py), in the
    # reset control's answer and on the command line alike.
    schedule: Annotated[str, On("serve", "train", choices=SCHEDULES, reset="plan")] = Field(
        default=RunConfig.schedule,
        min_length=1,
        max_length=16,
        description="pipeline schedule: all forwards then all backwards (gpipe), or one "
        "forward one backward (1f1b)",
    )
    experts: Annotated[int, On("serve", "train", reset="plan")] = Field(
        default=RunConfig.experts,
        ge=0,
        le=64,
        description="experts per layer: 0 is a dense MLP; more make each layer's MLP a "
        "mixture of experts",
    )
    top_k: Annotated[int, On("serve", "train", reset="plan")] = Field(
        default=RunConfig.top_k, ge=1, le=64, description="experts each token is routed to"
    )
    layers: Annotated[int, On("serve", "train", reset="plan", config="n_layer")] = Field(
        default=RunConfig.n_layer, ge=1, le=32, description="transformer layers of the model"
    )
    # Which array library computes the model (app/engine/backend.py), and on what: the worker
    # process reads TRAININGRUN_BACKEND / TRAININGRUN_DEVICE, which serve sets from these.
    backend: Annotated[Literal["numpy", "torch"], On("serve", "train")] = Field(
        default="numpy",
        description="array library the model's maths runs in: numpy, or torch (PyTorch "
        "tensors, the same numbers within float32 rounding; pip install 'trainingrun[torch]')",
    )
    device: Annotated[Literal["cpu", "cuda"], On("serve", "train")] = Field(
        default="cpu",
        description="where the torch backend computes: cpu, or cuda (a GPU; falls back to the "
        "CPU with a message when CUDA is absent)",
    )
    run_dir: Annotated[
        Path,
        On(
            "serve",
            "train",
            "watch",
            defaults={"train": Path("runs/train"), "watch": Path("runs/watch")},
        ),
    ] = Field(
        default=Path("runs/default"),
        description="the folder for the data lake, checkpoints and runs.sqlite",
    )
    fresh: Annotated[bool, On("serve", "train")] = Field(
        default=False,
        description="start a new run, deleting the run dir's checkpoints (default: resume)",
    )

    # Pacing and fan-out
    speed: Annotated[str | float, On("serve")] = Field(
        default=LESSON,
        description="lesson (a step every couple of seconds), max, or steps per second",
    )
    paused: Annotated[bool, On("serve")] = Field(
        default=False,
        description="start with the run paused at its step: the room sees it wait until "
        "someone presses play (P), or steps it one at a time (N)",
    )
    lesson_interval_s: float = Field(
        default=2.0, gt=0, description="seconds between steps at the lesson pace"
    )
    max_fps: Annotated[float, On("serve", "watch")] = Field(
        default=20.0, gt=0, le=240, description="most step frames per second sent to each viewer"
    )
    rest_after_s: Annotated[float, On("serve", flag="--rest-after", metavar="SECONDS")] = Field(
        default=10.0,
        ge=0,
        description="stop stepping after this many seconds with no viewer, 0 never",
    )
    side_runs: Annotated[int, On("serve", "watch", metavar="N")] = Field(
        default=8,
        ge=0,
        le=64,
        description="most story runs held at once beside the class run (a story's chapters "
        "each watch one); 0: none, the story is told on the run a page watches",
    )
    control_rate: float = Field(
        default=10.0, gt=0, description="inbound messages per second per client (a token bucket)"
    )
    control_burst: int = Field(default=20, ge=1, description="the token bucket's size")
    rate_limited_every_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="messages refused for going over the rate are answered with one "
        "`rate_limited` error at most this often, counting those refused since the last",
    )
    max_message_bytes: int = Field(
        default=64 * 1024, description="the largest message a client may send"
    )
    client_queue_limit: int = Field(
        default=512,
        ge=8,
        description="frames waiting for one viewer before it is judged too slow and disconnected",
    )
    send_timeout_s: float = Field(default=30.0, gt=0, description="seconds a send may take")

    # Where to listen, and who may reach and control the run
    host: Annotated[str, On("serve", "watch")] = Field(
        default="127.0.0.1",
        description="address to listen on; loopback lets nobody else on the network reach it",
    )
    port: Annotated[int, On("serve", "watch")] = Field(
        default=8000, ge=0, le=65535, description="port, 0 picks a free one"
    )
    open_browser: Annotated[bool, On("serve", "watch", flag="--open")] = Field(
        default=False,
        description="open the page in the default web browser once the server is up",
    )
    token: Annotated[str | None, On("serve", "watch")] = Field(
        default=None,
        min_length=8,
        max_length=256,
        description="the token that controls a public server: the presenter's (serve), or the "
        "one a job's reporter sends (watch); made up and printed when none is given",
    )
    # None: public exactly when `host` is not a loopback address.
    public: Annotated[bool | None, On("serve", "watch")] = Field(
        default=None, description="require the token even on loopback"
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="browser origins allowed on /ws besides the server's own "
        '(a JSON list, e.g. ["http://example:8000"])',
    )
    # TRAININGRUN_ALLOWED_HOSTS takes a comma-separated list (or a JSON list).
    allowed_hosts: Annotated[
        list[str], NoDecode, On("serve", "watch", flag="--allowed-host", metavar="NAME")
    ] = Field(
        default_factory=list,
        description="another name or IP address people (or a job's ranks) use to reach this "
        "server, besides localhost and --host (repeatable). Requests for any other name are "
        "refused, so a web page cannot reach the run by pointing a name of its own at this "
        "machine (DNS rebinding). For a classroom on --host 0.0.0.0, add the address or name "
        "the students type, e.g. --allowed-host 192.168.1.20 --allowed-host teacher-pc.local "
        "(find them with `hostname -I` and `hostname`)",
    )
    max_body_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="request bodies over this many bytes get 413 before they are read",
    )
    # Idle and half-sent sockets cannot pile up.
    header_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="seconds a connection has to send a whole request header after it opens "
        "(or after its last response) before it is closed",
    )
    keep_alive_s: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="seconds a kept-alive connection may wait for its next request",
    )
    log_level: Annotated[str, On("serve", "watch", choices=LOG_LEVELS)] = Field(
        default="info", description="server log level"
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _host_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            text = v.strip()
            try:
                v = json.loads(text) if text.startswith("[") else None
            except ValueError:
                v = None  # "[::1]" is an address, not a JSON list
            if not isinstance(v, list):
                v = [part for part in text.replace(" ", ",").split(",") if part]
        if not isinstance(v, list | tuple):
            raise ValueError("must be a list of host names or addresses")
        return [str(h) for h in v]

    @field_validator("speed")
    @classmethod
    def _speed(cls, v: str | float) -> str | float:
        return parse_speed(v)


# --- reading the table ---------------------------------------------------------------------


def marker(info: FieldInfo) -> On:
    """The field's On marker; ENV_ONLY for a setting read from the environment only."""
    return next((m for m in info.metadata if isinstance(m, On)), ENV_ONLY)


def settings_of(table: type[BaseModel], command: Command | None = None) -> Iterator[tuple[str, On]]:
    """(field name, marker) of each setting of `table`, in order; only `command`'s if given."""
    for name, info in table.model_fields.items():
        on = marker(info)
        if command is None or command in on.commands:
            yield name, on


def option(name: str, on: On) -> str:
    """The setting's command-line option."""
    return on.flag or "--" + name.replace("_", "-")


def env_name(table: type[BaseModel], name: str) -> str:
    """The setting's environment variable."""
    return f"{table.model_config.get('env_prefix', '')}{name}".upper()


def config_name(name: str, on: On) -> str:
    """RunConfig's name for the setting (which may not be a RunConfig field at all)."""
    return on.config or name


def default(table: type[BaseModel], name: str, command: Command | None = None) -> Any:
    """The setting's default, or `command`'s own where it has one."""
    info = table.model_fields[name]
    own = dict(marker(info).defaults)
    if command in own:
        return own[command]
    return info.get_default(call_default_factory=True)


def choices(info: FieldInfo) -> tuple[Any, ...] | None:
    """The values a setting may take, where they are a known set (a Literal, or On.choices)."""
    on = marker(info)
    if on.choices is not None:
        return on.choices
    if get_origin(info.annotation) is Literal:
        return get_args(info.annotation)
    return None


BOUNDS = ("gt", "ge", "lt", "le", "min_length", "max_length")


def bounds(info: FieldInfo) -> dict[str, Any]:
    """The field's bounds, as Field() takes them: {"ge": 1, "le": 32}."""
    found: dict[str, Any] = {}
    for m in info.metadata:
        for key in BOUNDS:
            value = getattr(m, key, None)
            if value is not None:
                found[key] = value
    return found


def shown(value: Any) -> str:
    """A value as a message shows it: numbers plain (2.0 as 2), text quoted."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if isinstance(value, int) else repr(value)


# Each bound as a test and as words; text has lengths, numbers have sizes.
_RULES: dict[str, tuple[Any, str]] = {
    "ge": (lambda v, b: v >= b, "must be at least {}"),
    "gt": (lambda v, b: v > b, "must be more than {}"),
    "le": (lambda v, b: v <= b, "must be at most {}"),
    "lt": (lambda v, b: v < b, "must be less than {}"),
    "min_length": (lambda v, b: len(v) >= b, "must be at least {} characters long"),
    "max_length": (lambda v, b: len(v) <= b, "must be at most {} characters long"),
}


def problems(
    table: type[BaseModel], values: Mapping[str, Any], names: Mapping[str, str]
) -> list[str]:
    """The first bound or known set of the table that each of `values` (by field name)
    breaks, one message each, naming the setting as `names` says (its option, or its
    variable): `--gpus must be at least 1, got 0`."""
    out = []
    for name, value in values.items():
        info = table.model_fields.get(name)
        if info is None or value is None:
            continue
        known = choices(info)
        if known is not None and value not in known:
            listed = ", ".join(map(str, known))
            out.append(f"{names[name]} must be one of {listed}, got {shown(value)}")
            continue
        for key, bound in bounds(info).items():
            if key.endswith("_length") != isinstance(value, str):
                continue
            ok, words = _RULES[key]
            if not ok(value, bound):
                rule = "must be 0 or more" if (key, bound) == ("ge", 0) else words
                out.append(f"{names[name]} {rule.format(shown(bound))}, got {shown(value)}")
                break
    return out


def plan_names(table: type[BaseModel], where: Mapping[str, str]) -> dict[str, str]:
    """The words the plan's rules (app/engine/plan.py `plan_problems`) use for each RunConfig
    field: the setting as `where` names it (by field name), or what it is when no setting
    sets it."""
    names = dict(FIXED_NAMES)
    for name, on in settings_of(table):
        if name in where:
            names[config_name(name, on)] = where[name]
    return names


def plan_check(src: Any, batch_size: int, names: Mapping[str, str]) -> list[str]:
    """The plan's rules (app/engine/plan.py `plan_problems`) for the plan settings on `src`
    (a Settings, or a command line's parsed arguments), each problem in `names`' words."""
    return plan_problems(
        gpus=src.gpus,
        servers=src.servers,
        n_layer=src.layers,
        n_head=RunConfig.n_head,
        n_embd=RunConfig.n_embd,
        batch_size=batch_size,
        tp=src.tp,
        pp=src.pp,
        ep=src.ep,
        microbatches=src.microbatches,
        schedule=src.schedule,
        experts=src.experts,
        top_k=src.top_k,
        names=names,
    )


def config_values(table: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """The RunConfig fields among `values` (by field name), as RunConfig names them."""
    out = {}
    for name, on in settings_of(table):
        key = config_name(name, on)
        if key in RUN_CONFIG_FIELDS and name in values:
            out[key] = values[name]
    return out
