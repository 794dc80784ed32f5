"""The GPU memory calculator: how much memory a model needs to serve and to train.

One set of rules of thumb, stated as data so the screen, the REST API and the CLI say the
same thing:

- Weights: parameters x bytes per number (the chosen precision).
- Serving: weights plus about 20% working memory (activations, the attention cache), on as
  many GPUs as a tensor-parallel deployment takes: 1, 2, 4 or 8 GPUs of one server (the
  attention heads must divide evenly), then whole servers of 8. Given the model's shape and
  the traffic (context and batch), the attention's key/value cache is counted instead of
  the 20%: 2 (a key and a value) x layers x KV heads x head size x context x batch numbers.
- Training: about 16 bytes per parameter with mixed-precision Adam: 2 for the bf16 weight,
  2 for its gradient, 12 for the optimizer (an fp32 master copy 4, momentum 4, variance 4).
  This is the baseline of the ZeRO paper (Rajbhandari et al., 2020): 7.5B params -> 120 GB.
  A variant keeps fp32 gradients (2 + 4 = 6 bytes for the weight and its gradient), which
  makes 18 bytes per parameter, the figure used in the "One GPU" story.
- Usable memory per GPU: 90% of the datasheet figure, because the CUDA context, the
  framework's allocator and fragmentation take the rest in practice.
- Activations: what the forward pass keeps for the backward, for one sequence of a published
  shape (Llama 3's 8B, 70B and 405B, sequences of 8,192 tokens) through every layer, by
  Korthikanti et al. (2022): nothing recomputed, the attention's scores recomputed, or each
  layer's forward recomputed (app/engine/activations.py).
- "GPUs just to fit" splits the training state evenly over GPUs with no copies (fully
  sharded, ZeRO stage 3 style) and leaves out activations: a floor, not a plan. Real runs use
  far more GPUs, for speed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from app.engine import activations
from app.engine.lens import MODELS

from .hardware import GPUS, PRECISIONS, parse_count

SERVE_OVERHEAD = 0.20
USABLE_FRACTION = 0.90
GPUS_PER_SERVER = 8  # an HGX / DGX server; tensor parallelism stays inside one

# Mixed-precision Adam, bytes per parameter.
TRAINING_PARTS: list[tuple[str, str, float]] = [
    ("weights", "bf16 weights", 2.0),
    ("gradients", "bf16 gradients", 2.0),
    ("master", "fp32 master copy (optimizer)", 4.0),
    ("momentum", "Adam momentum, fp32 (optimizer)", 4.0),
    ("variance", "Adam variance, fp32 (optimizer)", 4.0),
]
TRAINING_BYTES_PER_PARAM = sum(b for _, _, b in TRAINING_PARTS)  # 16
FP32_GRADS_BYTES_PER_PARAM = 2.0 + 4.0 + 12.0  # 18: bf16 weight + fp32 gradient + optimizer
FP32_GRADS_SOURCE = (
    "Megatron-LM, distributed optimizer guide: bf16 parameters with fp32 gradients take 18 "
    "bytes a parameter without the distributed optimizer"
)

RULES: list[str] = [
    "Weights = parameters x bytes per number (the precision you pick).",
    "Serving needs the weights plus about 20% working memory, on 1, 2, 4 or 8 GPUs of one "
    "server (a tensor-parallel size the attention heads divide into), then whole servers.",
    "Given the model's shape, a context and a batch, serving counts the key/value cache "
    "instead of the 20%: 2 x layers x KV heads x head size x context x batch numbers.",
    "Training needs about 16 bytes per parameter with mixed-precision Adam: "
    "2 weight + 2 gradient + 12 optimizer (fp32 master copy 4, momentum 4, variance 4). "
    "Precision here changes serving only; training uses this usual recipe.",
    "Keeping gradients in fp32 makes it 18 bytes: 6 for the weight and its gradient plus 12 "
    "for the optimizer.",
    "Usable memory per GPU is taken as 90% of the datasheet figure (CUDA context, allocator "
    "and fragmentation use the rest).",
    "For Llama 3's published sizes, training also keeps activations for the backward pass: "
    "for one 8,192-token sequence through every layer, with nothing recomputed, with the "
    "attention's scores recomputed, or with each layer's forward recomputed "
    "(Korthikanti et al. 2022).",
    "'GPUs just to fit' shares the training state evenly with no copies and ignores "
    "activations: a lower bound. Real runs use far more GPUs, for speed.",
]


# Published shapes, by the lens's models ("The Llama 3 Herd of Models", Meta, 2024, Table 3):
# the name the lab and the command line use -> the lens's model, and the size chip it
# matches. Grouped-query attention keeps 8 key/value heads of 128 numbers.
PUBLISHED: dict[str, str] = {"llama3-8b": "8B", "llama3-70b": "70B", "llama3-405b": "405B"}
SHAPE_PARAMS: dict[str, float] = {"llama3-8b": 8e9, "llama3-70b": 70e9, "llama3-405b": 405e9}
# For serving's key/value cache: (layers, key/value heads, head size).
MODEL_SHAPES: dict[str, tuple[int, int, int]] = {
    name: (m.n_layer, m.n_kv_head, m.d_model // m.n_head)
    for name, m in ((name, MODELS[model]) for name, model in PUBLISHED.items())
}
# Serving traffic to try (the memory lab's choices): (tokens each request holds, requests
# at once). A chat service's many 8K conversations; one long 128K document.
SERVING_TRAFFIC: dict[str, tuple[int, int]] = {"32 x 8K": (8192, 32), "1 x 128K": (131_072, 1)}
SHAPE_MAX = 1_000_000  # layers, heads, head size, context or batch: far past any model


@dataclass
class Serving:
    """What a deployment holds beside the weights: the key/value cache of `batch`
    sequences of `context` tokens through `layers` layers of `kv_heads` x `head_dim`."""

    layers: int
    kv_heads: int
    head_dim: int
    context: int
    batch: int

    def kv_cache_bytes(self, bytes_per_number: float) -> float:
        return (
            2.0 * self.layers * self.kv_heads * self.head_dim * self.context * self.batch
        ) * bytes_per_number


def serving_from(
    shape: str | None = None,
    layers: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    context: int | None = None,
    batch: int | None = None,
) -> Serving | None:
    """The serving traffic from a named shape (MODEL_SHAPES) or its three numbers, plus the
    context and the batch; None when none of it is given. FieldError names what is missing."""
    given = {"layers": layers, "kv_heads": kv_heads, "head_dim": head_dim}
    if (
        shape is None
        and context is None
        and batch is None
        and all(v is None for v in given.values())
    ):
        return None
    if shape is not None:
        if shape not in MODEL_SHAPES:
            raise FieldError("shape", f"unknown shape {shape!r}; use {list(MODEL_SHAPES)}")
        given = {
            k: v if v is not None else d
            for (k, v), d in zip(given.items(), MODEL_SHAPES[shape], strict=True)
        }
    for name, v in {**given, "context": context, "batch": batch}.items():
        if v is None:
            why = "" if name in ("context", "batch") else " (or give a shape)"
            raise FieldError(name, f"is needed to count the key/value cache{why}")
    return Serving(given["layers"], given["kv_heads"], given["head_dim"], context, batch)  # type: ignore[arg-type]


@dataclass
class Activations:
    """What one sequence's forward pass keeps for the backward, through every layer of a
    published shape, on one GPU (no tensor parallelism), by how much is recomputed."""

    shape: str
    layers: int
    hidden: int
    heads: int
    sequence: int
    bytes: dict[str, float]
    source: str = activations.SOURCE


def activations_for(params: float) -> Activations | None:
    """The activations of the published shape with exactly `params` parameters, if any."""
    for shape, n in SHAPE_PARAMS.items():
        if n == params:
            m = MODELS[PUBLISHED[shape]]
            per = activations.by_recompute(m.seq_len, 1, m.d_model, m.n_head, 1, m.n_layer, 1)
            return Activations(shape, m.n_layer, m.d_model, m.n_head, m.seq_len, per)
    return None


@dataclass
class MemoryPart:
    name: str
    label: str
    bytes_per_param: float
    bytes: float


@dataclass
class SceneMemoryPart:
    name: str  # weights, grads or optimizer, as in the live model's memory account
    fraction: float  # of one GPU's usable memory


@dataclass
class SceneMemoryCase:
    """What the browser passes to store.set('memoryCase', ...) for the GPU memory walls."""

    label: str
    fraction: float
    parts: list[SceneMemoryPart]
    fits: bool
    # How many GPUs share the model in this case, each holding `fraction` of its own memory;
    # the scene fills that many walls (all of them when it has fewer). None: every wall shows
    # the one-GPU case.
    gpus: int | None = None


@dataclass
class MemoryResult:
    params: float
    precision: str
    bytes_per_param: float
    gpu: str
    gpu_label: str
    gpu_memory_bytes: float
    usable_fraction: float
    usable_bytes_per_gpu: float
    weights_bytes: float
    serve_bytes: float
    gpus_to_serve: int
    training_bytes_per_param: float
    training_bytes: float
    training_parts: list[MemoryPart]
    gpus_to_fit_training: int
    training_bytes_fp32_grads: float
    gpus_to_fit_training_fp32_grads: int
    # Training state as if it all sat on ONE GPU, as a fraction of that GPU's usable memory.
    one_gpu_fraction: float
    fits_one_gpu: bool
    rules: list[str]
    source: str
    # The same one-GPU case, in the shape the 3D scene's memory walls read.
    memory_case: SceneMemoryCase
    # The training state shared evenly over gpus_to_fit_training GPUs: each one's share.
    spread_case: SceneMemoryCase
    # The key/value cache counted in serve_bytes, when the serving shape was given (else
    # serve_bytes is the weights + 20% rule of thumb), and the shape it was worked out for.
    kv_cache_bytes: float | None = None
    serving: Serving | None = None
    # What training keeps for the backward pass, for a published shape of this size.
    activations: Activations | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _memory_case(
    params: float,
    gpu_label: str,
    parts: list[MemoryPart],
    total: float,
    fraction: float,
    fits: bool,
) -> SceneMemoryCase:
    return SceneMemoryCase(
        label=f"{format_count(params)} params, training on one {gpu_label}",
        fraction=fraction,
        # Named like the live memory account (weights, grads, optimizer) so the walls
        # colour a calculator case the same way as the tiny model's own memory.
        parts=[
            SceneMemoryPart(name, fraction * b / total) for name, b in _scene_parts(parts).items()
        ],
        fits=fits,
    )


def _spread_case(case: SceneMemoryCase, params: float, gpus: int) -> SceneMemoryCase:
    share = case.fraction / gpus
    return SceneMemoryCase(
        label=f"{format_count(params)} params, shared over {gpus} GPUs",
        fraction=share,
        parts=[SceneMemoryPart(p.name, p.fraction / gpus) for p in case.parts],
        # gpus is the ceiling of the one-GPU fraction, so the share is at most one GPU's
        # memory (up to rounding in the last digit).
        fits=share <= 1.0 + 1e-9,
        gpus=gpus,
    )


def _scene_parts(parts: list[MemoryPart]) -> dict[str, float]:
    out = {"weights": 0.0, "grads": 0.0, "optimizer": 0.0}
    for p in parts:
        key = {"weights": "weights", "gradients": "grads"}.get(p.name, "optimizer")
        out[key] += p.bytes
    return out


def gpus_needed(total_bytes: float, per_gpu: float) -> int:
    # Round before the ceiling so 1120 GB / 80 GB is 14, not 14.000000000000002 -> 15.
    return max(1, math.ceil(round(total_bytes / per_gpu, 9)))


def gpus_to_serve(total_bytes: float, per_gpu: float) -> int:
    """GPUs a deployment serves `total_bytes` on: the fewest that hold it, rounded up to a
    tensor-parallel size real deployments use (1, 2, 4 or 8 GPUs of one server, so the
    attention heads split evenly), then to whole servers of 8."""
    n = gpus_needed(total_bytes, per_gpu)
    if n <= GPUS_PER_SERVER:
        return 1 << (n - 1).bit_length()
    return GPUS_PER_SERVER * math.ceil(n / GPUS_PER_SERVER)


def compute_memory(
    params: float | str, precision: str, gpu: str, serving: Serving | None = None
) -> MemoryResult:
    """Work out serving and training memory; with `serving`, the serving memory is the
    weights and that traffic's key/value cache. Raises ValueError naming the bad field."""
    try:
        n = parse_count(params)
    except ValueError as e:
        raise FieldError("params", str(e)) from None
    if precision not in PRECISIONS:
        raise FieldError("precision", f"unknown precision {precision!r}; use {list(PRECISIONS)}")
    if gpu not in GPUS:
        raise FieldError("gpu", f"unknown GPU {gpu!r}; use {list(GPUS)}")
    spec = GPUS[gpu]
    bpp = PRECISIONS[precision]
    capacity = float(spec.datasheet.memory_bytes)
    usable = capacity * USABLE_FRACTION
    weights = n * bpp
    kv = None
    if serving is not None:
        for name, v in asdict(serving).items():
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= SHAPE_MAX:
                raise FieldError(name, f"must be a whole number from 1 to {SHAPE_MAX:,}")
        kv = serving.kv_cache_bytes(bpp)
    serve = weights * (1 + SERVE_OVERHEAD) if kv is None else weights + kv
    parts = [MemoryPart(name, label, b, n * b) for name, label, b in TRAINING_PARTS]
    training = n * TRAINING_BYTES_PER_PARAM
    training18 = n * FP32_GRADS_BYTES_PER_PARAM
    fraction = training / usable
    fits = fraction <= 1.0
    case = _memory_case(n, spec.label, parts, training, fraction, fits)
    to_fit = gpus_needed(training, usable)
    return MemoryResult(
        params=n,
        precision=precision,
        bytes_per_param=bpp,
        gpu=gpu,
        gpu_label=spec.label,
        gpu_memory_bytes=capacity,
        usable_fraction=USABLE_FRACTION,
        usable_bytes_per_gpu=usable,
        weights_bytes=weights,
        serve_bytes=serve,
        gpus_to_serve=gpus_to_serve(serve, usable),
        training_bytes_per_param=TRAINING_BYTES_PER_PARAM,
        training_bytes=training,
        training_parts=parts,
        gpus_to_fit_training=to_fit,
        training_bytes_fp32_grads=training18,
        gpus_to_fit_training_fp32_grads=gpus_needed(training18, usable),
        one_gpu_fraction=fraction,
        fits_one_gpu=fits,
        rules=RULES,
        source=spec.source,
        memory_case=case,
        spread_case=_spread_case(case, n, to_fit),
        kv_cache_bytes=kv,
        serving=serving,
        activations=activations_for(n),
    )


class FieldError(ValueError):
    """Invalid input, tied to the field it came from (the API turns it into a 422)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def format_bytes(b: float) -> str:
    """Decimal units, three significant figures: 1.12 TB, 140 GB, 16 GB."""
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{_sig3(b / scale)} {unit}"
    return f"{b:.0f} B"


def format_count(n: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{_sig3(n / scale)}{unit}"
    return f"{n:.0f}"


def _sig3(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"
