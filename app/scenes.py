"""Scene specs: the data a 3D scene is drawn and toured from, loaded and validated here.

A scene lives in `scenes/<name>.json` (see `app.paths.SCENES_DIR`): its numbered parts with
their one-line descriptions, what each is and why training needs it, and card facts, the
camera views behind keys 0-4, the guided tour with its caption templates (and a longer "more"
behind each), and what each colour means. The browser draws from this data; the
server hands it out at `/api/scenes/{name}`. Validating it here means a typo in a scene file
fails loudly at load time and in the tests, not as a blank label on a projector.

The keyboard map is not scene data: it is the page's own table (`static/js/ui/keys.js`),
which both the help and the key legend read.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from app.paths import SCENES_DIR

# The parts every training-run scene must number, in order: the story runs left to right.
PART_IDS = ("datalake", "loaders", "gpus", "fabric", "ring", "model", "checkpoints")

# The live values the page computes from the run (`liveValues` in static/js/ui/live.js), by
# name: the one list of them. Tour captions may quote any as {name} (checked below); part
# cards show some as facts. The page gets this table as the scene's `placeholders`, and a
# browser test checks that liveValues gives exactly these names.
CAPTION_PLACEHOLDERS = {
    "step": "steps completed on the current timeline",
    "epoch": "passes over the training text so far",
    "loss": "latest training loss (mean over all GPUs)",
    "tokens_per_s": "tokens per simulated second at the preset's speed",
    "tokens_per_s_here": "tokens per real second the run trains at, measured by the page",
    "tokens": "tokens in the latest step, all GPUs together",
    "tokens_total": "tokens trained on since step 0 of this timeline",
    "gpus": "number of simulated GPUs",
    "servers": "number of simulated servers",
    "gpus_per_server": "GPUs in each server",
    "leaves": "leaf switches",
    "spines": "spine switches",
    "n_params": "parameters in one copy of the model",
    "params": "parameters in one copy of the model (the same as n_params)",
    "vocab": "words in the model's vocabulary",
    "ring_bytes": "bytes every GPU sent in the last all-reduce, with units",
    "ring_bytes_per_gpu": "bytes every GPU sent in the last all-reduce (the same as ring_bytes)",
    "ring_bytes_total": "bytes carried over all links in the last all-reduce",
    "ring_passes": "passes in one ring all-reduce, 2 x (GPUs - 1)",
    "busiest_link": "bytes on the busiest single link in the last all-reduce",
    "queue_depth": "batches ready in the loaders' queue when the GPUs asked",
    "queue_capacity": "batches the loaders' queue can hold",
    "workers": "loader worker threads",
    "samples_per_epoch": "training samples in one pass over the text",
    "batches_per_epoch": "batches in one pass over the text",
    "checkpoint_step": "step of the newest saved checkpoint",
    "checkpoint_bytes": "size of the newest saved checkpoint",
    "checkpoints": "checkpoints saved and kept",
    "checkpoint_every": "steps between checkpoints",
    "memory_per_gpu": "memory one GPU uses for the tiny model",
    "memory_capacity": "memory one simulated GPU has",
    "sim_step": "simulated seconds for one step on the preset hardware",
    "sim_compute": "simulated seconds of that step spent computing (forward, backward, update)",
    "sim_allreduce": "simulated seconds of that step spent in the all-reduce",
    "top_word": "the model's most likely word after the probe prompt",
    "top_p": "that word's probability, as a percentage",
    "restarts": "rollbacks after failures so far",
    "interrupted_every": "how often a real job on this many GPUs would be interrupted, at the "
    "rate of Llama 3's pre-training (419 unexpected interruptions in 54 days on 16,384 GPUs)",
    "preset": "the simulated hardware preset",
    "gpu_name": "the simulated GPU's name",
}

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_HEX_RE = re.compile(r"^#[0-9a-fA-F]{6}$")

Vec3 = tuple[float, float, float]


class SceneNotFound(LookupError):
    """No scene file with that name (or the name is not a valid scene name)."""


class SceneInvalid(ValueError):
    """A scene file exists but is not valid JSON or does not match the spec."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fact(_Strict):
    label: str = Field(min_length=1, max_length=40)
    value: str = Field(min_length=1, max_length=80)


def _check_placeholders(v: str, what: str) -> str:
    """A caption-like text may quote live values as {name}, but only names the page knows."""
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(v) if f is not None]
    except ValueError as exc:
        raise ValueError(f"{what} has a broken placeholder: {exc}") from exc
    unknown = sorted({n for n in names if n not in CAPTION_PLACEHOLDERS})
    if unknown:
        raise ValueError(
            f"unknown {what} placeholder(s) {unknown}; known: {sorted(CAPTION_PLACEHOLDERS)}"
        )
    return v


# Live values that do not exist early in a run (NOT_YET in static/js/ui/live.js): a text that
# quotes one needs words for "not yet", and those words must not quote one themselves.
NOT_YET_PLACEHOLDERS = frozenset({"checkpoint_step", "checkpoint_bytes", "top_word", "top_p"})


def _quoted(v: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(v) if f}


def _check_not_yet(text: str, not_yet: str, what: str) -> None:
    waits = sorted(_quoted(text) & NOT_YET_PLACEHOLDERS)
    if waits and not not_yet:
        raise ValueError(
            f"{what} quotes {waits}, which a new run does not have yet: "
            f"give {what}_not_yet words for that moment"
        )
    if _quoted(not_yet) & NOT_YET_PLACEHOLDERS:
        raise ValueError(f"{what}_not_yet must not quote {sorted(NOT_YET_PLACEHOLDERS)}")


class PartSpec(_Strict):
    id: Literal["datalake", "loaders", "gpus", "fabric", "ring", "model", "checkpoints"]
    number: int = Field(ge=1, le=9)
    name: str = Field(min_length=1, max_length=40)
    description: str = Field(min_length=1, max_length=120)
    # The card's two short answers: what the part is in a real cluster, and why training a
    # model needs it. Plain text, a sentence or two each: the card is small.
    what: str = Field(default="", max_length=240)
    why: str = Field(default="", max_length=240)
    # Where its label sits: a fixed point, or "auto" = just above the part's laid-out box
    # (most parts grow with the cluster, so a fixed point would drift off them).
    anchor: Vec3 | Literal["auto"] = "auto"
    facts: list[Fact] = Field(default_factory=list, max_length=6)


class ViewSpec(_Strict):
    """A camera view. It names what it frames rather than fixed coordinates, because the
    cluster (and so the scene) is a different size for 8 GPUs and for 256."""

    key: int = Field(ge=0, le=9)
    name: str = Field(min_length=1, max_length=40)
    frame: list[str] = Field(min_length=1)  # part ids whose boxes the camera must fit
    direction: Vec3  # from the framed centre towards the camera (need not be unit length)
    fill: float = Field(default=1.0, gt=0.2, le=3.0)  # >1 moves closer, <1 leaves more margin

    @field_validator("direction")
    @classmethod
    def _nonzero(cls, v: Vec3) -> Vec3:
        if sum(c * c for c in v) < 1e-6:
            raise ValueError("direction must not be zero")
        return v


class TourAsk(_Strict):
    """Predict, then reveal: a question the room answers before the stop shows it; the answer
    quotes the live run (the same placeholders as captions). The sheet prints the questions."""

    question: str = Field(min_length=1, max_length=200)
    answer: str = Field(min_length=1, max_length=200)
    # Said instead of the answer while a value it quotes does not exist yet (no checkpoint
    # saved, no probe asked: NOT_YET in static/js/ui/live.js).
    answer_not_yet: str = Field(default="", max_length=200)
    # Panels that would give the answer away, hidden while the room predicts: "probe", the
    # model's bets after "Once upon a" (its page element is marked data-conceal="probe").
    conceals: list[Literal["probe"]] = Field(default_factory=list, max_length=4)

    @field_validator("question", "answer", "answer_not_yet")
    @classmethod
    def _known_ask_placeholders(cls, v: str) -> str:
        return _check_placeholders(v, "question")

    @model_validator(mode="after")
    def _not_yet_quotes_what_exists(self) -> TourAsk:
        _check_not_yet(self.answer, self.answer_not_yet, "answer")
        return self


class TourStop(_Strict):
    part: str
    view: int | None = None  # a view key; None = frame the part itself
    # What the teacher says at this stop: one idea, short enough to read aloud.
    caption: str = Field(min_length=1, max_length=220)
    # Said instead of the caption while a value it quotes does not exist yet.
    caption_not_yet: str = Field(default="", max_length=220)
    # The longer story behind it, for whoever asks "why?": shown folded under the caption.
    more: str = Field(default="", max_length=700)
    # How long the stop lasts when the tour moves on by itself.
    duration_s: float = Field(ge=2.0, le=60.0)
    # A question to predict before the stop shows its answer (it waits for the next press).
    ask: TourAsk | None = None
    # Open GPU 1 up close at this stop, the live step playing through the layers it holds.
    inside: bool = False

    @field_validator("caption", "caption_not_yet")
    @classmethod
    def _known_placeholders(cls, v: str) -> str:
        return _check_placeholders(v, "caption")

    @model_validator(mode="after")
    def _not_yet_quotes_what_exists(self) -> TourStop:
        _check_not_yet(self.caption, self.caption_not_yet, "caption")
        return self

    @field_validator("more")
    @classmethod
    def _known_more_placeholders(cls, v: str) -> str:
        return _check_placeholders(v, "more")


HexColour = Annotated[str, Field(pattern=_HEX_RE.pattern)]


class ColourSpec(_Strict):
    meaning: str = Field(min_length=1, max_length=80)
    default: HexColour
    projector: HexColour
    # The non-colour cue that goes with it, for colour-blind readers and washed-out projectors.
    shape: str = Field(default="", max_length=60)


class SceneSpec(_Strict):
    name: str
    title: str = Field(min_length=1, max_length=80)
    subtitle: str = Field(default="", max_length=160)
    note: str = Field(default="", max_length=200)
    parts: list[PartSpec]
    views: list[ViewSpec]
    tour: list[TourStop] = Field(min_length=1)
    colours: dict[str, ColourSpec]
    background: dict[str, HexColour]
    placeholders: dict[str, str] = Field(default_factory=lambda: dict(CAPTION_PLACEHOLDERS))

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not _NAME_RE.match(v):
            raise ValueError("name must be lower-case letters, digits and dashes")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> SceneSpec:
        ids = [p.id for p in self.parts]
        if sorted(ids) != sorted(PART_IDS) or len(ids) != len(set(ids)):
            raise ValueError(f"parts must be exactly {list(PART_IDS)}, each once; got {ids}")
        numbers = [p.number for p in self.parts]
        if sorted(numbers) != list(range(1, len(self.parts) + 1)):
            raise ValueError(f"parts must be numbered 1..{len(self.parts)} once each: {numbers}")
        view_keys = [v.key for v in self.views]
        if sorted(view_keys) != [0, 1, 2, 3, 4]:
            raise ValueError(f"views must have keys 0 (overview) and 1-4, once each: {view_keys}")
        known = set(ids) | {"all"}
        for v in self.views:
            bad = [f for f in v.frame if f not in known]
            if bad:
                raise ValueError(f"view {v.key} frames unknown part(s) {bad}")
        for i, stop in enumerate(self.tour):
            if stop.part not in ids:
                raise ValueError(f"tour stop {i + 1} names unknown part {stop.part!r}")
            if stop.view is not None and stop.view not in view_keys:
                raise ValueError(f"tour stop {i + 1} names unknown view {stop.view}")
        missing = [p for p in ids if p not in {s.part for s in self.tour}]
        if missing:
            raise ValueError(f"the tour never visits part(s) {missing}")
        needed = {"forward", "backward", "allreduce", "waiting", "failure", "saved"}
        if not needed <= set(self.colours):
            raise ValueError(f"colours must define {sorted(needed - set(self.colours))}")
        if not {"default", "projector"} <= set(self.background):
            raise ValueError("background must give 'default' and 'projector'")
        unknown_ph = set(self.placeholders) - set(CAPTION_PLACEHOLDERS)
        if unknown_ph:
            raise ValueError(f"placeholders lists unknown names {sorted(unknown_ph)}")
        return self

    def part(self, part_id: str) -> PartSpec:
        return next(p for p in self.parts if p.id == part_id)


def _path_for(name: str, directory: Path) -> Path:
    if not _NAME_RE.match(name):
        raise SceneNotFound(f"no scene named {name!r}")
    path = directory / f"{name}.json"
    if not path.is_file():
        raise SceneNotFound(f"no scene named {name!r}")
    return path


def parse_scene(text: str, *, source: str = "<scene>") -> SceneSpec:
    """Parse and validate scene JSON text; errors name the source and every problem."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SceneInvalid(f"{source}: not valid JSON: {exc}") from exc
    try:
        return SceneSpec.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(scene)'}: {e['msg']}" for e in exc.errors()
        )
        raise SceneInvalid(f"{source}: invalid scene: {problems}") from exc


def load_scene(name: str, directory: Path | None = None) -> SceneSpec:
    """Load `<directory>/<name>.json` and validate it. Raises SceneNotFound or SceneInvalid."""
    path = _path_for(name, directory or SCENES_DIR)
    text = path.read_text(encoding="utf-8")
    # scenes/ also holds other content (e.g. the classroom text, "kind": "classroom").
    kind = re.search(r'^\s*\{\s*"kind"\s*:\s*"([^"]*)"', text)
    if kind and kind.group(1) != "scene":
        raise SceneNotFound(f"no scene named {name!r} ({path.name} holds {kind.group(1)} content)")
    spec = parse_scene(text, source=path.name)
    if spec.name != name:
        raise SceneInvalid(f"{path.name}: its name field says {spec.name!r}, expected {name!r}")
    return spec


def list_scenes(directory: Path | None = None) -> list[dict[str, str]]:
    """[{name, title}] for every valid scene file, sorted by name. Invalid files are left out
    (load_scene on them reports why)."""
    out = []
    for path in sorted((directory or SCENES_DIR).glob("*.json")):
        try:
            spec = load_scene(path.stem, path.parent)
        except (SceneNotFound, SceneInvalid):
            continue
        out.append({"name": spec.name, "title": spec.title})
    return out
