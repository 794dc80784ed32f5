"""REST for the guided stories (`scenes/stories/<id>.json`): the chapters as data, the
figures a story quotes at full scale from the memory lab's rules, and the "what if" side
copies really trained by the engine (app/engine/drift.py).

    GET /api/stories/one-gpu         the chapters, the runs they need, the scale figures
    GET /api/stories/one-gpu/drift   two copies after a few steps, apart and together
    GET /api/stories/one-gpu/first-step/<run>
                                     one step of a chapter's run on a side copy: what a later
                                     chapter quotes of it when the page never watched it
"""

from __future__ import annotations

import json
import math
import tempfile
import threading
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from app.engine import model as M
from app.engine.config import RunConfig
from app.engine.drift import drift
from app.engine.lens import MODELS
from app.engine.plan import SCHEDULES
from app.engine.trainer import Trainer
from app.labs.hardware import GPUS
from app.labs.memory import FP32_GRADS_BYTES_PER_PARAM, FP32_GRADS_SOURCE, compute_memory
from app.options import bounds
from app.paths import SCENES_DIR
from app.protocol import ResetControl
from app.run.climb import CLIMBS_DIR, load_climb

router = APIRouter(prefix="/api/stories", tags=["stories"])

STORIES_DIR = SCENES_DIR / "stories"
STORY_IDS = ("one-gpu",)
DRIFT_STEPS_MAX = 5


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# What a chapter's run sets: the reset control's fields, each required here.
STORY_RUN_FIELDS = (
    "gpus", "servers", "n_layer", "experts", "top_k", "tp", "pp", "ep", "microbatches",
)  # fmt: skip


def _story_run() -> type[BaseModel]:
    """A run a chapter needs: the reset a presenter's page sends for it, with the bounds of
    the settings table (app/options.py) through the reset control, and one of the engine's
    schedules."""
    fields: dict[str, Any] = {
        name: (
            int,
            Field(
                description=ResetControl.model_fields[name].description,
                **bounds(ResetControl.model_fields[name]),
            ),
        )
        for name in STORY_RUN_FIELDS
    }
    fields["schedule"] = (Literal[SCHEDULES], ...)  # type: ignore[valid-type]
    return create_model("StoryRun", __base__=_Strict, __module__=__name__, **fields)


StoryRun = _story_run()


class StoryDo(_Strict):
    label: str = Field(min_length=1)
    action: Literal["speed_max", "rerun", "oom"]
    until_step: int | None = None


class Chapter(_Strict):
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    group: str
    title: str
    text: str = Field(min_length=1)
    run: str
    fresh: bool = False
    view: int | None = Field(default=None, ge=0, le=4)
    part: str | None = Field(default=None, pattern=r"^([a-z-]+|gpu:[0-9]+)$")
    field: int | None = Field(default=None, ge=8)
    module: str | None = Field(default=None, pattern=r"^[0-9]{2}-[a-z0-9-]+$")
    oom: bool = False
    do: StoryDo | None = None


class StoryScale(_Strict):
    # The published model whose layer is "full size" (the lens's shapes, app/engine/lens.py).
    layer_of: str
    gpu: str
    field: int = Field(ge=8)
    deep_layers: int = Field(ge=1)


class Story(_Strict):
    id: str
    title: str
    subtitle: str
    runs: dict[str, StoryRun]
    # The runs too heavy to compute live at a page's pace: `trainingrun record` records them.
    recorded: list[str] = Field(default_factory=list)
    # The long real run its climax plays back (scenes/climb/<name>.json, `trainingrun climb`).
    climb: str | None = Field(default=None, pattern=r"^[a-z0-9-]+$")
    scale: StoryScale
    chapters: list[Chapter] = Field(min_length=1)


def load_story(story_id: str) -> Story:
    """Read and check a story: every chapter's run is one the engine can plan, and every
    module named exists. Raises ValueError naming what is wrong. Read once per file."""
    return _load_story(STORIES_DIR / f"{story_id}.json", story_id)


@cache
def _load_story(path: Path, story_id: str) -> Story:
    try:
        story = Story.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, ValidationError) as e:
        raise ValueError(f"story {story_id!r}: {e}") from None
    base = RunConfig()
    for name, run in story.runs.items():
        try:  # RunConfig checks the plan's rules (app/engine/plan.py) itself
            base.with_(**run.model_dump(), batch_size=RunConfig.batch_for(run.gpus, 64))
        except ValueError as e:
            raise ValueError(f"story {story_id!r}: run {name!r}: {e}") from None
    for name in story.recorded:
        if name not in story.runs:
            raise ValueError(f"story {story_id!r}: recorded run {name!r} is not one of its runs")
    for ch in story.chapters:
        if ch.run not in story.runs:
            raise ValueError(f"story {story_id!r}: chapter {ch.id!r} needs unknown run {ch.run!r}")
    if story.climb is not None:
        try:
            load_climb(CLIMBS_DIR / f"{story.climb}.json")
        except (OSError, ValueError, KeyError) as e:
            raise ValueError(f"story {story_id!r}: climb {story.climb!r}: {e}") from None
    if story.scale.layer_of not in MODELS or MODELS[story.scale.layer_of].moe:
        raise ValueError(f"story {story_id!r}: no dense published model {story.scale.layer_of!r}")
    if story.scale.gpu not in GPUS:
        raise ValueError(f"story {story_id!r}: unknown GPU {story.scale.gpu!r}")
    return story


def scale_figures(story: Story) -> dict[str, Any]:
    """The full-size figures the out-of-memory chapter quotes, by the memory lab's rules:
    18 bytes a weight (6 for the weight and its gradient, 12 for the optimizer; Megatron-LM's
    count for bf16 weights with fp32 gradients), each GPU's usable memory, and what four and
    eight full-size layers need on one GPU; a full-size layer is one of a published model's
    (its attention, MLP and norms, by the lens's shapes)."""
    s = story.scale
    model = MODELS[s.layer_of]
    layer_params = sum(model.layer_params(0))
    out: dict[str, Any] = {
        "bytes_per_weight": FP32_GRADS_BYTES_PER_PARAM,
        "weight_grad_bytes": 6.0,
        "optimizer_bytes": FP32_GRADS_BYTES_PER_PARAM - 6.0,
        "bytes_source": FP32_GRADS_SOURCE,
        "layer_params": layer_params,
        "layer_model": model.label,
        "layer_model_layers": model.n_layer,
        "layer_source": model.source,
        "deep_layers": s.deep_layers,
        "field": s.field,
    }
    for layers in (4, 8):
        m = compute_memory(layer_params * layers, "bf16", s.gpu)
        need = m.training_bytes_fp32_grads
        out[f"layers{layers}"] = {
            "params": m.params,
            "bytes": need,
            "weight_grad": m.params * 6.0,
            "optimizer": m.params * (FP32_GRADS_BYTES_PER_PARAM - 6.0),
            "fraction": need / m.usable_bytes_per_gpu,
        }
        out["gpu_label"] = m.gpu_label
        out["gpu_usable_bytes"] = m.usable_bytes_per_gpu
    return out


def layer_figures(run: StoryRun) -> dict[str, Any]:
    """One layer of the live model, from the engine's own parameter shapes: its weights and
    the share of them in the experts (the vocabulary does not change a layer)."""
    base = RunConfig()
    cfg = M.ModelConfig(
        vocab_size=2,
        n_layer=1,
        n_head=base.n_head,
        n_embd=base.n_embd,
        block_size=base.block_size,
        experts=run.experts,
        top_k=run.top_k,
    )
    shapes = {k: math.prod(v) for k, v in M.param_shapes(cfg).items() if k.startswith("layers.0.")}
    experts = sum(n for k, n in shapes.items() if k.endswith((".moe.w1", ".moe.w2")))
    total = sum(shapes.values())
    return {"layer_weights": total, "expert_weights": experts, "expert_share": experts / total}


@cache
def _story(story_id: str) -> dict[str, Any]:
    story = load_story(story_id)
    figures = scale_figures(story) | layer_figures(story.runs[story.chapters[0].run])
    out = {**story.model_dump(), "figures": figures}
    if story.climb is not None:
        out["climb"] = load_climb(CLIMBS_DIR / f"{story.climb}.json")
    return out


def side_run(run_ref: str, base: RunConfig) -> tuple[RunConfig, str] | None:
    """The run a story chapter needs, as the server's side run `<story>.<run>` (app/web/
    runs.py): the story's cluster, model and plan on the class run's other settings, with a
    batch of 64 shared evenly. None when no story has that run."""
    story_id, _, key = run_ref.partition(".")
    if story_id not in STORY_IDS:
        return None
    story = load_story(story_id)
    run = story.runs.get(key)
    if run is None:
        return None
    config = base.with_(**run.model_dump(), batch_size=RunConfig.batch_for(run.gpus, 64))
    return config, f"{story.title}: {key}"


def is_recorded(run_ref: str) -> bool:
    """Whether `<story>.<run>` is one of the story's heavy runs, kept as a recording."""
    story_id, _, key = run_ref.partition(".")
    return story_id in STORY_IDS and key in load_story(story_id).recorded


def _known(story_id: str) -> None:
    if story_id not in STORY_IDS:
        raise HTTPException(404, f"no story {story_id!r} (known: {', '.join(STORY_IDS)})")


@router.get("/{story_id}")
def get_story(story_id: str) -> dict[str, Any]:
    _known(story_id)
    return _story(story_id)


_drift_lock = threading.Lock()


@cache
def _drift(story_id: str, steps: int) -> dict[str, Any]:
    story = load_story(story_id)
    run = story.runs[next(c.run for c in story.chapters if c.module == "14-what-if")]
    cfg = RunConfig().with_(**run.model_dump(), batch_size=16, corpus_stories=400)
    return drift(cfg, steps=steps).to_dict()


@router.get("/{story_id}/drift")
def get_drift(
    story_id: str,
    steps: Annotated[int, Query(ge=1, le=DRIFT_STEPS_MAX)] = 3,
) -> dict[str, Any]:
    """Two copies of the story's model really trained for `steps` steps on a side copy:
    without sharing gradients (apart) and with the average (together). Computed once per
    step count and kept; the live run is untouched."""
    _known(story_id)
    with _drift_lock:  # one side copy at a time: the machine is shared with the live run
        return _drift(story_id, steps)


_first_step_lock = threading.Lock()


@cache
def _first_step(config: RunConfig) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(config.with_(checkpoint_every=0), tmp)
        try:
            r = trainer.train_step()
        finally:
            trainer.close()
    return {
        "step": r.step,
        "memory": r.memory[0].total,
        "sim_step": r.sim_step_s,
        "bubble": r.plan_stats.bubble_fraction,
        "tokens_per_gpu": r.tokens / config.dp,
    }


@router.get("/{story_id}/first-step/{run}")
def get_first_step(
    story_id: str,
    run: Annotated[str, PathParam(pattern=r"^[a-z0-9-]{1,32}$")],
    request: Request,
) -> dict[str, Any]:
    """The first step of one of the story's runs, trained on a side copy with the settings
    the server would give that run (the class run's own, the story's cluster, model and
    plan): GPU 1's memory, the step's simulated time, the pipeline's bubble, the tokens per
    GPU. They hold at every step of the run (memory only in a dense run: routing to experts
    moves the activations' peak), so a chapter can quote a run the page never watched
    (opened directly at a later chapter). Computed once and kept; the story's recorded
    (heavy) runs are not trained here."""
    _known(story_id)
    story = load_story(story_id)
    if run not in story.runs:
        raise HTTPException(404, f"story {story_id!r} has no run {run!r}")
    if run in story.recorded:
        raise HTTPException(404, f"run {run!r} is recorded, too heavy to train on a side copy")
    runs = getattr(request.app.state, "runs", None)
    base = runs.base_config() if runs is not None else RunConfig()
    config, _ = side_run(f"{story_id}.{run}", base)
    with _first_step_lock:  # one side copy at a time: the machine is shared with the live run
        return {"run": run, **_first_step(config)}
