"""REST for the concept labs: ring all-reduce lab, memory calculator, cost and the whole-run
estimate, the model lens, classroom text.

Every answer is computed by app/labs (the ring by the engine's own collectives), so the
browser draws what the Python says. Bad input is a 422 whose `loc` names the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.engine.activations import Recompute
from app.engine.lens import DEFAULT_PLANS, MODELS, LensError, LensResult, lens
from app.engine.pipeline import LENS_SCHEDULES
from app.engine.timing import PRESETS
from app.labs.content import Classroom, classroom
from app.labs.cost import (
    CO2_KG_PER_KWH_MAX,
    DEFAULT_CO2_KG_PER_KWH,
    DEFAULT_KWH_PRICE,
    DEFAULT_PUE,
    DEFAULT_UTILISATION,
    GPUS_MAX,
    KWH_PRICE_MAX,
    PEAK_TFLOPS_MAX,
    PEAK_TFLOPS_MIN,
    POWER_W_MAX,
    PRECISION_CHOICES,
    PRICE_PER_GPU_HOUR_MAX,
    PUE_MAX,
    UTILISATION_MIN,
    CostResult,
    EstimateResult,
    compute_cost,
    estimate,
)
from app.labs.goodput import (
    RESTART_S,
    RESTART_S_MAX,
    STORAGE_TBPS,
    STORAGE_TBPS_MAX,
    STORAGE_TBPS_MIN,
)
from app.labs.hardware import (
    GPUS,
    MODEL_PRESETS,
    PRECISION_LABELS,
    PRECISIONS,
    PRICE_NOTE,
    GpuSpec,
    parse_count,
)
from app.labs.memory import (
    MODEL_SHAPES,
    RULES,
    SERVING_TRAFFIC,
    SHAPE_MAX,
    SHAPE_PARAMS,
    USABLE_FRACTION,
    FieldError,
    MemoryResult,
    compute_memory,
    serving_from,
)
from app.labs.reallook import RealLook, reallook
from app.labs.ringlab import MAX_GPUS, MIN_GPUS, run_ring_lab

router = APIRouter(prefix="/api/labs", tags=["labs"])

PrecisionId = Literal["fp32", "bf16", "fp16", "fp8", "int4"]
GpuId = Literal[
    "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "b200-180gb", "h800-80gb", "v100-32gb"
]
# The Literals give precise 422s and a schema listing the choices; tests check they match
# the tables in app/labs/hardware.py.


def _count(v: Any) -> float:
    return parse_count(v)  # ValueError -> 422 for this field


# A count as a number or as text such as "70B"; the limits (finite, up to 1e16) are
# parse_count's. Text longer than any count is refused before it is read.
Count = float | Annotated[str, Field(max_length=32)]
# Every number a lab takes is finite: NaN and infinity are refused as input.
Finite = Annotated[float, Field(allow_inf_nan=False)]


class _LabRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans(cls, v: Any) -> Any:
        if isinstance(v, bool):  # JSON true is not the number 1
            raise ValueError("must be a number, not true or false")
        return v


# ---- ring lab -------------------------------------------------------------------------------


class RingSend(BaseModel):
    src: int
    dst: int
    chunk: int
    bytes: int


class RingPass(BaseModel):
    index: int
    phase: Literal["reduce_scatter", "all_gather"]
    sends: list[RingSend]
    values: list[list[int]]
    coverage: list[list[int]]


class RingLink(BaseModel):
    src: int
    dst: int
    bytes: int


class RingScalingPoint(BaseModel):
    gpus: int
    ring_busiest_bytes: int
    naive_busiest_bytes: int


class RingLabResponse(BaseModel):
    gpus: int
    seed: int
    chunks: int
    itemsize: int
    chunk_bytes: int
    initial: list[list[int]]
    totals: list[int]
    passes: list[RingPass]
    owner_chunk: list[int]
    per_link_bytes: list[RingLink]
    ring_busiest_bytes: int
    naive_busiest_bytes: int
    scaling_buffer_bytes: int
    scaling: list[RingScalingPoint]


@router.get("/ring", response_model=RingLabResponse)
def ring_lab(
    gpus: Annotated[int, Query(ge=MIN_GPUS, le=MAX_GPUS)] = 6,
    seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 1,
) -> dict[str, Any]:
    return run_ring_lab(gpus, seed).to_dict()


# ---- memory calculator ---------------------------------------------------------------------


ShapeCount = Annotated[int, Field(ge=1, le=SHAPE_MAX)]
ShapeId = Literal[tuple(MODEL_SHAPES)]  # type: ignore[valid-type]


class MemoryRequest(_LabRequest):
    params: Count = Field("70B", description="model size: 70B, 1T, 7e9 ... up to 1e16")
    precision: PrecisionId = "bf16"
    gpu: GpuId = "h100-80gb"
    # Serving traffic: with a context and a batch, the key/value cache is counted (the
    # model's shape by name, or its layers, KV heads and head size).
    shape: ShapeId | None = None
    layers: ShapeCount | None = None
    kv_heads: ShapeCount | None = None
    head_dim: ShapeCount | None = None
    context: ShapeCount | None = Field(None, description="tokens each request holds")
    batch: ShapeCount | None = Field(None, description="requests served at once")

    @field_validator("params")
    @classmethod
    def _params_positive(cls, v: float | str) -> float:
        return _count(v)


def _memory(req: MemoryRequest, where: str = "query") -> dict[str, Any]:
    d = req.model_dump()
    try:
        serving = serving_from(
            *(d[k] for k in ("shape", "layers", "kv_heads", "head_dim", "context", "batch"))
        )
        return compute_memory(req.params, req.precision, req.gpu, serving).to_dict()
    except FieldError as e:
        raise HTTPException(422, [_problem(e.field, e.message, where)]) from None


@router.get("/memory", response_model=MemoryResult)
def memory_get(req: Annotated[MemoryRequest, Query()]) -> dict[str, Any]:
    return _memory(req)


@router.post("/memory", response_model=MemoryResult)
def memory_post(req: MemoryRequest) -> dict[str, Any]:
    return _memory(req, "body")


class PrecisionOption(BaseModel):
    id: str
    label: str
    bytes: float


class ShapeOption(BaseModel):
    id: str
    params: float
    layers: int
    kv_heads: int
    head_dim: int


class TrafficOption(BaseModel):
    id: str
    context: int
    batch: int


class LabOptions(BaseModel):
    models: dict[str, float]
    precisions: list[PrecisionOption]
    gpus: list[GpuSpec]
    usable_fraction: float
    shapes: list[ShapeOption]
    traffic: list[TrafficOption]
    rules: list[str]
    price_note: str
    cost_defaults: dict[str, float]


@router.get("/options", response_model=LabOptions)
def options() -> dict[str, Any]:
    """Choices and stated assumptions for the calculators, so the page never hard-codes them."""
    return {
        "models": MODEL_PRESETS,
        "precisions": [
            {"id": k, "label": PRECISION_LABELS[k], "bytes": b} for k, b in PRECISIONS.items()
        ],
        "gpus": [g.to_dict() for g in GPUS.values()],
        "usable_fraction": USABLE_FRACTION,
        # Models whose shape is published, for serving's key/value cache, and the traffic
        # the lab offers to try.
        "shapes": [
            {"id": k, "params": SHAPE_PARAMS[k], "layers": L, "kv_heads": H, "head_dim": D}
            for k, (L, H, D) in MODEL_SHAPES.items()
        ],
        "traffic": [{"id": k, "context": c, "batch": b} for k, (c, b) in SERVING_TRAFFIC.items()],
        "rules": RULES,
        "price_note": PRICE_NOTE,
        "cost_defaults": {
            "utilisation": DEFAULT_UTILISATION,
            "pue": DEFAULT_PUE,
            "kwh_price": DEFAULT_KWH_PRICE,
            "co2_kg_per_kwh": DEFAULT_CO2_KG_PER_KWH,
        },
    }


# ---- cost and energy -----------------------------------------------------------------------


class CostRequest(_LabRequest):
    # The limits are app/labs/cost.py's: every figure worked out from them stays finite.
    params: Count = Field("70B", description="model size: 70B, 1T, 7e9 ... up to 1e16")
    tokens: Count = Field("2T", description="training tokens: 2T, 15e12 ... up to 1e16")
    gpu: GpuId = "h100-80gb"
    gpus: int = Field(1024, ge=1, le=GPUS_MAX)
    utilisation: Finite = Field(DEFAULT_UTILISATION, ge=UTILISATION_MIN, le=1)
    # None = take the GPU's datasheet figure / the rough price.
    peak_tflops: Finite | None = Field(None, ge=PEAK_TFLOPS_MIN, le=PEAK_TFLOPS_MAX)
    power_w: Finite | None = Field(None, gt=0, le=POWER_W_MAX)
    pue: Finite = Field(DEFAULT_PUE, ge=1, le=PUE_MAX)
    price_per_gpu_hour: Finite | None = Field(None, ge=0, le=PRICE_PER_GPU_HOUR_MAX)
    kwh_price: Finite = Field(DEFAULT_KWH_PRICE, ge=0, le=KWH_PRICE_MAX)
    co2_kg_per_kwh: Finite = Field(
        DEFAULT_CO2_KG_PER_KWH, ge=0, le=CO2_KG_PER_KWH_MAX, description="the grid's kg CO2 a kWh"
    )

    @field_validator("params", "tokens")
    @classmethod
    def _counts_positive(cls, v: float | str) -> float:
        return _count(v)


def _cost(req: CostRequest) -> dict[str, Any]:
    return compute_cost(**req.model_dump()).to_dict()


@router.get("/cost", response_model=CostResult)
def cost_get(req: Annotated[CostRequest, Query()]) -> dict[str, Any]:
    return _cost(req)


@router.post("/cost", response_model=CostResult)
def cost_post(req: CostRequest) -> dict[str, Any]:
    return _cost(req)


# ---- the whole-run estimate ------------------------------------------------------------------

PrecisionChoice = Literal["bf16", "fp8"]
EstimateGpu = GpuId | Literal["b200"]


class EstimateRequest(_LabRequest):
    params: Count = Field("70B", description="model size: 70B, 671B, 7e9 ... up to 1e16")
    active_params: Count | None = Field(
        None, description="parameters each token uses (a mixture of experts); null: all"
    )
    tokens: Count = Field("2T", description="training tokens: 2T, 15e12 ... up to 1e16")
    gpu: EstimateGpu = "h100-80gb"
    gpus: int = Field(1024, ge=1, le=GPUS_MAX)
    mfu: Finite = Field(DEFAULT_UTILISATION, ge=UTILISATION_MIN, le=1)
    precision: PrecisionChoice = "bf16"
    pue: Finite = Field(DEFAULT_PUE, ge=1, le=PUE_MAX)
    price_per_gpu_hour: Finite | None = Field(None, ge=0, le=PRICE_PER_GPU_HOUR_MAX)
    storage_tbps: Finite = Field(
        STORAGE_TBPS,
        ge=STORAGE_TBPS_MIN,
        le=STORAGE_TBPS_MAX,
        description="checkpoint storage, TB/s sustained",
    )
    restart_s: Finite = Field(
        RESTART_S, ge=0, le=RESTART_S_MAX, description="seconds a restart takes"
    )
    co2_kg_per_kwh: Finite = Field(
        DEFAULT_CO2_KG_PER_KWH, ge=0, le=CO2_KG_PER_KWH_MAX, description="the grid's kg CO2 a kWh"
    )

    @field_validator("params", "tokens", "active_params")
    @classmethod
    def _counts_positive(cls, v: float | str | None) -> float | None:
        return None if v is None else _count(v)


def _estimate(req: EstimateRequest, where: str) -> dict[str, Any]:
    d = req.model_dump()
    try:
        return estimate(d.pop("params"), d.pop("tokens"), d.pop("gpu"), **d).to_dict()
    except FieldError as e:  # a choice the GPU cannot do (FP8 on an A100)
        raise HTTPException(422, [_problem(e.field, e.message, where)]) from None


@router.get("/estimate", response_model=EstimateResult)
def estimate_get(req: Annotated[EstimateRequest, Query()]) -> dict[str, Any]:
    return _estimate(req, "query")


@router.post("/estimate", response_model=EstimateResult)
def estimate_post(req: EstimateRequest) -> dict[str, Any]:
    return _estimate(req, "body")


def _problem(field: str, message: str, where: str) -> dict[str, Any]:
    return {"loc": [where, field], "msg": message, "type": "value_error"}


# ---- the model lens ------------------------------------------------------------------------

ModelId = Literal["1B", "8B", "70B", "405B", "671B"]
PresetId = Literal["h100", "a100", "b200", "h800"]
# The Literals list the choices in the schema; a test checks they match the engine's tables.


class LensRequest(_LabRequest):
    model: ModelId = "70B"
    gpus: int = Field(1024, ge=1, le=GPUS_MAX)
    preset: PresetId = "h100"
    tp: int | None = Field(None, ge=1, le=64, description="tensor parallel (default: per model)")
    pp: int | None = Field(None, ge=1, le=1024, description="pipeline stages")
    ep: int | None = Field(None, ge=1, le=1024, description="expert parallel")
    schedule: Literal[LENS_SCHEDULES] = Field(  # type: ignore[valid-type]
        "1f1b",
        description="pipeline schedule: gpipe, 1f1b, interleaved (virtual stages) or zb-h1",
    )
    virtual: int = Field(
        1, ge=1, le=64, description="chunks of layers a stage holds (interleaved only)"
    )
    checkpoint: bool = Field(False, description="write a checkpoint in this step")
    recompute: Recompute = Field(
        "selective", description="what the backward recomputes: none, selective or full"
    )
    zero: int | None = Field(
        None, ge=0, le=3, description="ZeRO stage over data parallelism (default: per model)"
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans(cls, v: Any, info: Any) -> Any:
        if isinstance(v, bool) and info.field_name != "checkpoint":
            raise ValueError("must be a number, not true or false")
        return v


@router.get("/lens", response_model=LensResult)
def lens_get(req: Annotated[LensRequest, Query()]) -> dict[str, Any]:
    """One training step of a real-size model on a real-size cluster, by the live step's
    timing rules: its seconds by time-bar group and what bounds it."""
    try:
        return lens(**req.model_dump()).to_dict()
    except LensError as e:
        raise HTTPException(422, [_problem(e.field, str(e), "query")]) from None


@router.get("/lens/models")
def lens_models() -> dict[str, Any]:
    """The lens's model presets, their default plans and the cluster presets."""
    return {
        "models": {
            k: {
                "label": m.label,
                "params": m.params,
                "active_params": m.active_params,
                "tokens_per_step": m.tokens_per_step,
                "seq_len": m.seq_len,
                "plan": dict(zip(("tp", "pp", "ep"), DEFAULT_PLANS[k], strict=True)),
                "source": m.source,
                "batch_source": m.batch_source,
            }
            for k, m in MODELS.items()
        },
        "presets": sorted(PRESETS),
        "precisions": list(PRECISION_CHOICES),
    }


# ---- classroom text ------------------------------------------------------------------------


@router.get("/content", response_model=Classroom)
def content() -> Classroom:
    return classroom()


@router.get("/reallook", response_model=RealLook)
def real_look() -> RealLook:
    return reallook()
