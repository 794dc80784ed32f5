"""The model lens: one training step of a real-size model on a real-size cluster, priced by the
same timing rules as the live step (timing.py), so the page can say what the tiny model's step
would cost for a 70B model.

`lens(model, gpus, preset)` lays one step out as the live planned step does: the batch copied
in; every pipeline stage's forwards and backwards in the 1F1B order (pipeline.simulate), each
with its tensor-parallel all-reduces and expert all-to-alls; the sends between stages; each
stage's gradients all-reduced in DDP buckets beside its last backward (the hidden part and
the exposed part); the update; a checkpoint if asked. It returns the step's seconds split
into the live trace's time-bar groups for the stage that finishes last, and one sentence
saying what bounds it.

Model shapes are those of the published model cards and papers, each named in `source`; the
global batch of each is stated in `batch_source` (published where it is, an assumption where
it is not). Memory is the mixed-precision AdamW state, 16 bytes a parameter (timing.py),
spread by the plan; activations are not counted, so `fits` is a floor.

`split_step(trace)` splits a live step's trace the same way, so the two can be shown side
by side.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from . import activations
from .activations import Recompute
from .pipeline import LENS_SCHEDULES, simulate
from .timing import (
    ACTIVATION_WIRE_BYTES,
    BUCKET_BYTES,
    GRAD_WIRE_BYTES,
    OPTIMIZER_STATE_BYTES,
    TRAINING_BYTES_PER_PARAM,
    HardwarePreset,
    all_to_all_seconds,
    checkpoint_seconds,
    compute_seconds,
    data_seconds,
    get_preset,
    hop_seconds,
    layer_kernels,
    nccl_allreduce,
    optimizer_seconds,
    overlap_buckets,
    uniform_buckets,
)
from .trace import KINDS, StepTrace, expand

# ---- the models -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's published shape: grouped-query attention (or DeepSeek's
    multi-head latent attention), a SwiGLU MLP (three d x d_ff matrices) or a mixture of
    experts, RMS norms, an embedding and an output head (tied or not)."""

    name: str
    label: str
    n_layer: int
    d_model: int
    n_head: int
    n_kv_head: int
    d_ff: int  # the dense MLP's hidden width
    vocab: int
    tied: bool
    seq_len: int  # tokens a sequence
    tokens_per_step: int  # the global batch, in tokens
    source: str
    batch_source: str
    # Mixture of experts: the first `dense_layers` layers are dense, the rest MoE.
    dense_layers: int | None = None
    experts: int = 0  # routed experts per MoE layer
    shared_experts: int = 0
    top_k: int = 0
    d_expert: int = 0
    # Multi-head latent attention (q_lora_rank, kv_lora_rank, qk_nope, qk_rope, v_head).
    mla: tuple[int, int, int, int, int] | None = None

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def is_moe_layer(self, i: int) -> bool:
        return self.moe and i >= (self.dense_layers or 0)

    @property
    def attention_params(self) -> int:
        d, h = self.d_model, self.n_head
        if self.mla is not None:
            q_rank, kv_rank, nope, rope, v = self.mla
            return (
                d * q_rank  # q down-projection
                + q_rank * h * (nope + rope)  # q up-projection
                + d * (kv_rank + rope)  # joint kv down-projection (+ the shared rope key)
                + kv_rank * h * (nope + v)  # k and v up-projections
                + h * v * d  # output projection
                + q_rank
                + kv_rank  # their norms
            )
        hd = d // h
        return 2 * d * h * hd + 2 * d * self.n_kv_head * hd

    @property
    def expert_params(self) -> int:
        """One expert's weights (a SwiGLU of width d_expert)."""
        return 3 * self.d_model * self.d_expert

    def layer_params(self, i: int) -> tuple[int, int]:
        """(parameters outside the experts, routed experts' parameters) of layer i."""
        d = self.d_model
        common = self.attention_params + 2 * d  # + two norms
        if not self.is_moe_layer(i):
            return common + 3 * d * self.d_ff, 0
        shared = self.shared_experts * self.expert_params + d * self.experts  # + router
        return common + shared, self.experts * self.expert_params

    def layer_active(self, i: int) -> int:
        """Parameters one token uses in layer i."""
        dense, _ = self.layer_params(i)
        return dense + (self.top_k * self.expert_params if self.is_moe_layer(i) else 0)

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.d_model

    @property
    def head_params(self) -> int:
        return (0 if self.tied else self.vocab * self.d_model) + self.d_model  # + final norm

    @property
    def params(self) -> int:
        layers = sum(sum(self.layer_params(i)) for i in range(self.n_layer))
        return layers + self.embedding_params + self.head_params

    @property
    def active_params(self) -> int:
        layers = sum(self.layer_active(i) for i in range(self.n_layer))
        return layers + self.embedding_params + self.head_params


_LLAMA3 = (
    "Llama 3 model card and 'The Llama 3 Herd of Models' (Meta, 2024), Table 3: "
    "layers, model dimension, FFN dimension, attention and key/value heads; vocabulary "
    "128,256 (config.json)"
)
_LLAMA3_BATCH = (
    "Llama 3 paper, section 3.4.1: the 405B trained most of its tokens with 16M-token "
    "batches of 8,192-token sequences"
)


def _from_405b(model: str) -> str:
    return f"assumption: the 405B's 16M tokens ({_LLAMA3_BATCH}); the {model}'s is not published"


MODELS: dict[str, ModelShape] = {
    "1B": ModelShape(
        name="1B",
        label="Llama 3.2 1B",
        n_layer=16,
        d_model=2048,
        n_head=32,
        n_kv_head=8,
        d_ff=8192,
        vocab=128_256,
        tied=True,
        seq_len=4096,
        tokens_per_step=1024 * 4096,
        source="Llama 3.2 1B model card and config.json: 16 layers, dimension 2,048, FFN "
        "8,192, 32 heads, 8 key/value heads, vocabulary 128,256, tied embeddings",
        batch_source="assumption: 4M tokens (1,024 sequences of 4,096), as Llama 2 trained "
        "all its sizes (Llama 2 paper, section 2.2); Meta does not publish this one's",
    ),
    "8B": ModelShape(
        name="8B",
        label="Llama 3 8B",
        n_layer=32,
        d_model=4096,
        n_head=32,
        n_kv_head=8,
        d_ff=14_336,
        vocab=128_256,
        tied=False,
        seq_len=8192,
        tokens_per_step=2048 * 8192,
        source=_LLAMA3,
        batch_source=_from_405b("8B"),
    ),
    "70B": ModelShape(
        name="70B",
        label="Llama 3 70B",
        n_layer=80,
        d_model=8192,
        n_head=64,
        n_kv_head=8,
        d_ff=28_672,
        vocab=128_256,
        tied=False,
        seq_len=8192,
        tokens_per_step=2048 * 8192,
        source=_LLAMA3,
        batch_source=_from_405b("70B"),
    ),
    "405B": ModelShape(
        name="405B",
        label="Llama 3.1 405B",
        n_layer=126,
        d_model=16_384,
        n_head=128,
        n_kv_head=8,
        d_ff=53_248,
        vocab=128_256,
        tied=False,
        seq_len=8192,
        tokens_per_step=2048 * 8192,
        source=_LLAMA3,
        batch_source=_LLAMA3_BATCH,
    ),
    "671B": ModelShape(
        name="671B",
        label="DeepSeek-V3 (671B, 37B active)",
        n_layer=61,
        d_model=7168,
        n_head=128,
        n_kv_head=128,
        d_ff=18_432,
        vocab=129_280,
        tied=False,
        seq_len=4096,
        tokens_per_step=15_360 * 4096,
        source="DeepSeek-V3 Technical Report (2024), section 4.2, and config.json: 61 "
        "layers, the first 3 dense (FFN 18,432), then 256 routed experts and 1 shared of "
        "width 2,048, 8 routed per token; dimension 7,168; MLA with 128 heads, q rank "
        "1,536, kv rank 512, head dims 128 + 64 (rope), values 128; vocabulary 129,280",
        batch_source="DeepSeek-V3 report, section 4.2: batch 15,360 sequences of 4,096 "
        "tokens after the ramp",
        dense_layers=3,
        experts=256,
        shared_experts=1,
        top_k=8,
        d_expert=2048,
        mla=(1536, 512, 128, 64, 128),
    ),
}

# The parallel plan each model gets unless one is given: (tp, pp, ep); dp takes the rest.
DEFAULT_PLANS: dict[str, tuple[int, int, int]] = {
    "1B": (1, 1, 1),  # fits one GPU with its optimizer state: data parallel only
    "8B": (4, 1, 1),  # 16 B x 8B = 128 GB of state: split 4 ways inside a server
    "70B": (8, 4, 1),  # tensor parallel in the server, 4 pipeline stages: 35 GB per GPU
    "405B": (8, 16, 1),  # Llama 3 paper, Table 4: TP 8, PP 16
    "671B": (1, 16, 64),  # DeepSeek-V3 report, section 3.2: PP 16, EP 64
}

# How far each model's training state is sharded over its data-parallel GPUs (ZeRO,
# Rajbhandari et al. 2020): 1 the optimizer state, 2 the gradients too, 3 the weights too.
DEFAULT_ZERO: dict[str, int] = {
    "1B": 1,  # assumption: a distributed optimizer, as Megatron-LM and torchtitan runs use
    "8B": 1,
    "70B": 1,
    "405B": 2,  # Llama 3 paper, section 3.3.2: FSDP shards optimizer state and gradients
    "671B": 1,  # DeepSeek-V3 report, section 3.2: ZeRO-1 data parallelism
}


ZERO_WORDS = {
    0: "not sharded",
    1: "the optimizer state sharded over data parallelism (ZeRO-1)",
    2: "optimizer state and gradients sharded over data parallelism (ZeRO-2)",
    3: "all of it sharded over data parallelism (ZeRO-3)",
}


def state_bytes(elements: float, shards: int, zero: int) -> float:
    """Bytes of mixed-precision AdamW state for `elements` parameters on one GPU, with ZeRO
    stage `zero` over `shards` data-parallel GPUs: BF16 weights (2 bytes) and gradients (2),
    FP32 master weights and two moments (12)."""
    weights = 2.0 / (shards if zero >= 3 else 1)
    grads = 2.0 / (shards if zero >= 2 else 1)
    optimizer = 3.0 * OPTIMIZER_STATE_BYTES / (shards if zero >= 1 else 1)
    return elements * (weights + grads + optimizer)


GROUP_ORDER = (
    "data",
    "compute",
    "update",
    "tensor",
    "experts",
    "allreduce",
    "allreduce_hidden",
    "pipeline",
    "checkpoint",
    "wait",
)
# Groups whose time runs beside the lane's own work (they add nothing to the step).
BESIDE = frozenset(str(k["group"]) for k in KINDS.values() if k["overlaps"])
COMMUNICATION = ("tensor", "experts", "allreduce")


@dataclass
class LensResult:
    model: str
    label: str
    preset: str
    gpu: str
    gpus: int
    plan: dict[str, int | str]
    params: int
    active_params: int
    seq_len: int
    tokens_per_step: int
    microbatches: int  # per data-parallel replica, of microbatch_seqs sequences each
    step_s: float
    groups: dict[str, float]  # seconds, the live trace's time-bar groups
    shares: dict[str, float]  # of the step, for the groups that add to it
    compute_share: float
    communication_share: float
    mfu: float  # model FLOPs (6 x active x tokens) over the step at the GPUs' peak
    tokens_per_s: float
    allreduce_algorithm: str  # NCCL's pick for one gradient bucket
    memory_per_gpu_bytes: int  # state and activations, the fullest GPU
    state_bytes_per_gpu: int  # its weights, gradients and optimizer state
    activation_bytes_per_gpu: dict[str, int]  # what it keeps for the backward, by recompute
    recompute: str  # the recomputation `memory_per_gpu_bytes` counts
    zero: int  # how far the state is sharded over data parallelism (ZeRO stage)
    fits: bool
    bound: str  # "compute" | "communication" | "pipeline bubble" | ...
    why: str
    assumptions: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LensError(ValueError):
    """A model, cluster or plan the lens cannot price; the message says why in one line and
    `field` names the input at fault."""

    def __init__(self, message: str, field: str = "model") -> None:
        super().__init__(message)
        self.field = field


# ---- the step -------------------------------------------------------------------------------


def _stage_layers(n_layer: int, pp: int) -> list[list[int]]:
    """Layers by stage, as even as they go; a stage's extra layer goes to the later stages,
    since the first holds the most microbatches in flight (as Llama 3 balanced its stages,
    section 3.3.2)."""
    base, extra = divmod(n_layer, pp)
    out, i = [], 0
    for s in range(pp):
        n = base + (1 if s >= pp - extra else 0)
        out.append(list(range(i, i + n)))
        i += n
    return out


def _per_server(gpus: list[int], per_server: int) -> tuple[int, int]:
    """(members in each server, servers) of a group of GPU ids (its fullest server)."""
    counts: dict[int, int] = {}
    for g in gpus:
        counts[g // per_server] = counts.get(g // per_server, 0) + 1
    return max(counts.values()), len(counts)


def lens(
    model: str = "70B",
    gpus: int = 1024,
    preset: str = "h100",
    *,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    microbatch_seqs: int = 1,
    schedule: str = "1f1b",
    virtual: int = 1,
    checkpoint: bool = False,
    recompute: Recompute = "selective",
    zero: int | None = None,
) -> LensResult:
    """One training step of `model` on `gpus` GPUs of `preset`, priced by the timing rules."""
    if model not in MODELS:
        raise LensError(f"unknown model {model!r} (known: {', '.join(MODELS)})")
    try:
        p = get_preset(preset)
    except ValueError as e:
        raise LensError(str(e), "preset") from None
    m = MODELS[model]
    d_tp, d_pp, d_ep = DEFAULT_PLANS[model]
    tp, pp, ep = tp or d_tp, pp or d_pp, ep or d_ep
    zero = DEFAULT_ZERO[model] if zero is None else zero
    if zero not in (0, 1, 2, 3):
        raise LensError(f"ZeRO stage {zero} does not exist: use 0, 1, 2 or 3", "zero")
    _check_plan(m, p, gpus, tp, pp, ep, microbatch_seqs)
    dp = gpus // (tp * pp)
    seqs = m.tokens_per_step // m.seq_len
    M = seqs // dp // microbatch_seqs
    v = _check_schedule(m, schedule, virtual, pp, M)
    tokens_mb = microbatch_seqs * m.seq_len
    per_server = p.gpus_per_server

    def gpu(d: int, s: int, t: int) -> int:  # plan.py's layout
        return (d * pp + s) * tp + t

    # The layers in pp x v chunks (one a stage but for interleaved 1F1B): chunk c of stage s
    # is virtual stage c x pp + s, and a stage holds all of its chunks' layers.
    chunks = _stage_layers(m.n_layer, pp * v)
    last = pp * v - 1
    stages = [[i for c in range(v) for i in chunks[c * pp + s]] for s in range(pp)]

    # One microbatch's forward or backward on a stage: compute (with its kernel floor),
    # tensor-parallel joins (2 forward, 2 backward per layer, Megatron-LM) and expert
    # all-to-alls (dispatch and combine, forward and backward).
    act_bytes = tokens_mb * m.d_model * ACTIVATION_WIRE_BYTES
    tp_join = nccl_allreduce(p, act_bytes, tp, 1)[1] if tp > 1 else 0.0
    ep_members, ep_servers = _per_server([gpu(d, 0, 0) for d in range(ep)], per_server)
    pair = tokens_mb * m.top_k * m.d_model * ACTIVATION_WIRE_BYTES / ep if ep > 1 else 0.0
    a2a = all_to_all_seconds(p, pair, ep_members, ep_servers) if ep > 1 else 0.0

    parts: list[dict[str, dict[str, float]]] = []  # per chunk, per "F"/"B": group -> seconds
    for s, layers in enumerate(chunks):
        active = sum(m.layer_active(i) for i in layers)
        if s == 0:
            active += m.embedding_params
        if s == last:
            active += m.head_params
        moe_layers = sum(1 for i in layers if m.is_moe_layer(i))
        by_kind = {}
        for kind, factor, name in (("F", 2.0, "forward"), ("B", 4.0, "backward")):
            kernels = layer_kernels(name, len(layers), outside=False)
            if s in (0, last):
                kernels += layer_kernels(name, 0)
            by_kind[kind] = {
                "compute": compute_seconds(p, factor * active / tp * tokens_mb, kernels),
                "tensor": 2 * len(layers) * tp_join,
                "experts": 2 * moe_layers * a2a,
            }
        if schedule == "zb-h1":
            # The backward's two halves: the gradient for the layer below (B, with the
            # joins it waits on) and the weights' own (W, which nothing waits for).
            w = by_kind["B"]["compute"] / 2
            by_kind["B"]["compute"] -= w
            by_kind["W"] = {"compute": w, "tensor": 0.0, "experts": 0.0}
        parts.append(by_kind)

    def op_seconds(s: int, kind: str, mb: int) -> float:
        return sum(parts[s][kind].values())

    def send_link(a: int, b: int) -> str:
        return "nvlink" if a // per_server == b // per_server else "spine"

    def send_seconds(kind: str, mb: int, src: int, dst: int) -> float:
        link = send_link(gpu(0, src % pp, 0), gpu(0, dst % pp, 0))
        return hop_seconds(p, act_bytes / tp, link)

    tl = simulate(schedule, pp, M, op_seconds, send_seconds, virtual=v)
    data = data_seconds(p, seqs // dp * m.seq_len * 2 * 8)  # int64 inputs and targets

    # Each stage's gradients, in buckets beside its last backward: dense then experts.
    dp_members, dp_servers = _per_server([gpu(d, 0, 0) for d in range(dp)], per_server)
    edp = dp // ep
    edp_members, edp_servers = _per_server([gpu(d, 0, 0) for d in range(0, dp, ep)], per_server)
    algorithm = nccl_allreduce(p, BUCKET_BYTES, dp_members, dp_servers)
    stage_rows = []
    for s, layers in enumerate(stages):
        dense = sum(m.layer_params(i)[0] for i in layers)
        experts = sum(m.layer_params(i)[1] for i in layers)
        if s == 0:
            dense += m.embedding_params
        if s == last % pp:
            dense += m.head_params
        dense_gpu, experts_gpu = dense / tp, experts / (tp * ep)
        ops = tl.stage_ops(s)
        last_b = max((o for o in ops if o.kind in ("B", "W")), key=lambda o: o.t1)
        window = (last_b.t0, last_b.t1)
        t, sent, not_before = window[1], 0.0, window[0]
        for elements, members, servers, g in (
            (dense_gpu, dp_members, dp_servers, dp),
            (experts_gpu, edp_members, edp_servers, edp),
        ):
            if elements <= 0 or g < 2:
                continue
            sizes = uniform_buckets(elements * GRAD_WIRE_BYTES)
            durs = [_bucket_seconds(p, b, members, servers) for b in sizes]
            total, done, ready = sum(sizes), 0.0, []
            for b in sizes:
                done += b
                ready.append(max(not_before, window[0] + (window[1] - window[0]) * done / total))
            end = max(overlap_buckets(ready, durs, window[1]).end, window[1])
            sent += sum(durs)
            t = max(t, end)
            not_before = end
        update = optimizer_seconds(p, dense_gpu + experts_gpu)
        held = tl.peak_in_flight(s)  # chunks run forward and not yet backward, at the most
        stage_rows.append(
            {
                "ops": ops,
                "window_end": window[1],
                "sync_end": t,
                # After the backward the stream is busy to the end: the rest ran beside it.
                "hidden": max(0.0, sent - (t - window[1])),
                "update": update,
                "end": t + update,
                "state": state_bytes(dense_gpu, dp, zero) + state_bytes(experts_gpu, edp, zero),
                # Its fullest moment, from the schedule: the chunks (a stage's layers but for
                # interleaved 1F1B) it has run forward and not yet backward.
                "activations": activations.by_recompute(
                    m.seq_len,
                    microbatch_seqs,
                    m.d_model,
                    m.n_head,
                    tp,
                    max(len(chunks[c * pp + s]) for c in range(v)),
                    held,
                ),
                "in_flight": held / v,
            }
        )
    slowest = max(range(pp), key=lambda s: stage_rows[s]["end"])
    row = stage_rows[slowest]
    step = data + row["end"]
    # Checkpoint: FP32 master weights and Adam moments, one writer per distinct shard (the
    # GPUs of data-parallel rank 0, and the other expert ranks' for their experts).
    ckpt = 0.0
    if checkpoint:
        writers = [gpu(d, s, t) for d in range(ep) for s in range(pp) for t in range(tp)]
        counts: dict[int, int] = {}
        for g in writers:
            counts[g // per_server] = counts.get(g // per_server, 0) + 1
        ckpt = checkpoint_seconds(p, m.params * 3 * OPTIMIZER_STATE_BYTES, list(counts.values()))
        step += ckpt
    ops = row["ops"]
    mine = [parts[o.chunk * pp + slowest][o.kind] for o in ops]
    groups = {
        "data": data,
        "compute": sum(part["compute"] for part in mine),
        "update": row["update"],
        "tensor": sum(part["tensor"] for part in mine),
        "experts": sum(part["experts"] for part in mine),
        "allreduce": row["sync_end"] - row["window_end"],
        "allreduce_hidden": row["hidden"],
        "pipeline": math.fsum(tr.t1 - tr.t0 for tr in tl.transfers if slowest in (tr.src, tr.dst)),
        "checkpoint": ckpt,
    }
    groups["wait"] = max(0.0, step - sum(v for k, v in groups.items() if k not in BESIDE))
    return _result(
        m, p, gpus, tp, pp, ep, dp, M, step, groups, algorithm[0], stage_rows, recompute, zero,
        (schedule, v),
    )  # fmt: skip


def _bucket_seconds(p: HardwarePreset, nbytes: float, members: int, servers: int) -> float:
    return nccl_allreduce(p, nbytes, members, servers)[1]


# How the assumptions name the schedule the step was laid out with.
SCHEDULE_WORDS = {
    "1f1b": "Plan: {plan}; 1F1B over {m} microbatches of one sequence per data-parallel replica.",
    "gpipe": "Plan: {plan}; GPipe over {m} microbatches of one sequence per data-parallel replica.",
    "interleaved": "Plan: {plan}; interleaved 1F1B, {v} chunks of layers a stage, over {m} "
    "microbatches of one sequence per data-parallel replica.",
    "zb-h1": "Plan: {plan}; ZB-H1 over {m} microbatches of one sequence per data-parallel "
    "replica: each backward split in two, the weights' gradients put off to fill the gaps.",
}


def _check_plan(
    m: ModelShape, p: HardwarePreset, gpus: int, tp: int, pp: int, ep: int, mb_seqs: int
) -> None:
    if not isinstance(gpus, int) or gpus < 1:
        raise LensError(f"gpus must be a whole number, 1 or more, got {gpus!r}", "gpus")
    for name, v in (("tp", tp), ("pp", pp), ("ep", ep), ("microbatch_seqs", mb_seqs)):
        if not isinstance(v, int) or v < 1:
            raise LensError(f"{name} must be a whole number, 1 or more, got {v!r}", name)
    if tp > p.gpus_per_server or p.gpus_per_server % tp:
        raise LensError(
            f"tp ({tp}) must divide the {p.gpus_per_server} GPUs of a server: a tensor-"
            "parallel group stays on NVLink",
            "tp",
        )
    if m.n_kv_head % tp or m.n_head % tp:
        raise LensError(
            f"tp ({tp}) must divide the {m.label}'s key/value heads ({m.n_kv_head})", "tp"
        )
    if pp > m.n_layer:
        raise LensError(f"pp ({pp}) can be at most the {m.label}'s {m.n_layer} layers", "pp")
    if gpus % (tp * pp):
        raise LensError(f"tp x pp ({tp * pp}) must divide the GPUs ({gpus})", "gpus")
    dp = gpus // (tp * pp)
    if ep > 1 and not m.moe:
        raise LensError(f"ep ({ep}) needs experts; the {m.label} is dense", "ep")
    if dp % ep or (m.moe and m.experts % ep):
        raise LensError(f"ep ({ep}) must divide dp ({dp}) and the experts ({m.experts})", "ep")
    seqs = m.tokens_per_step // m.seq_len
    if seqs % (dp * mb_seqs):
        raise LensError(
            f"the batch of {seqs:,} sequences does not split evenly over dp {dp} in "
            f"microbatches of {mb_seqs}: use fewer GPUs or more tp x pp",
            "gpus",
        )


def _check_schedule(m: ModelShape, schedule: str, virtual: int, pp: int, M: int) -> int:
    """The chunks of layers a stage holds under `schedule` (1 but for interleaved 1F1B)."""
    if schedule not in LENS_SCHEDULES:
        raise LensError(
            f"unknown schedule {schedule!r} (known: {', '.join(LENS_SCHEDULES)})", "schedule"
        )
    if not isinstance(virtual, int) or virtual < 1:
        raise LensError(f"virtual must be a whole number, 1 or more, got {virtual!r}", "virtual")
    if schedule != "interleaved":
        if virtual != 1:
            raise LensError(
                f"virtual ({virtual}) chunks a stage need the interleaved schedule", "virtual"
            )
        return 1
    if virtual < 2 or pp < 2:
        raise LensError(
            "interleaved 1F1B needs at least 2 stages of at least 2 chunks each", "virtual"
        )
    if pp * virtual > m.n_layer:
        raise LensError(
            f"pp x virtual ({pp * virtual}) can be at most the {m.label}'s {m.n_layer} layers",
            "virtual",
        )
    if M % pp:
        raise LensError(
            f"interleaved 1F1B needs the microbatches ({M}) to be a multiple of pp ({pp})",
            "schedule",
        )
    return virtual


def _result(
    m: ModelShape,
    p: HardwarePreset,
    gpus: int,
    tp: int,
    pp: int,
    ep: int,
    dp: int,
    M: int,
    step: float,
    groups: dict[str, float],
    algorithm: str,
    stage_rows: list[dict],
    recompute: Recompute,
    zero: int,
    schedule: tuple[str, int] = ("1f1b", 1),
) -> LensResult:
    shares = {k: v / step for k, v in groups.items() if k not in BESIDE}
    compute = shares["compute"]
    comm = sum(shares[k] for k in COMMUNICATION)
    flops = 6.0 * m.active_params * m.tokens_per_step
    mfu = flops / (step * gpus * p.flops)
    # The fullest GPU: its training state and what its stage keeps for the backward.
    fullest = max(stage_rows, key=lambda r: r["state"] + r["activations"][recompute])
    memory = int(fullest["state"] + fullest["activations"][recompute])
    bound, why = explain(shares)
    name, v = schedule
    plan = {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "schedule": name, "virtual": v}
    layout = f"tp {tp} x pp {pp} x dp {dp}" + (f", ep {ep}" if ep > 1 else "")
    return LensResult(
        model=m.name,
        label=m.label,
        preset=p.name,
        gpu=p.gpu,
        gpus=gpus,
        plan=plan,
        params=m.params,
        active_params=m.active_params,
        seq_len=m.seq_len,
        tokens_per_step=m.tokens_per_step,
        microbatches=M,
        step_s=step,
        groups={k: groups[k] for k in GROUP_ORDER},
        shares=shares,
        compute_share=compute,
        communication_share=comm,
        mfu=mfu,
        tokens_per_s=m.tokens_per_step / step,
        allreduce_algorithm=algorithm,
        memory_per_gpu_bytes=memory,
        state_bytes_per_gpu=int(fullest["state"]),
        activation_bytes_per_gpu={k: int(v) for k, v in fullest["activations"].items()},
        recompute=recompute,
        zero=zero,
        fits=memory <= p.memory_bytes,
        bound=bound,
        why=why,
        assumptions=[
            SCHEDULE_WORDS[name].format(plan=layout, m=M, v=v),
            f"Global batch {m.tokens_per_step:,} tokens ({m.batch_source}).",
            "Work: 6 x active parameters x tokens; attention's sequence-squared term and "
            "activation recomputation are left out.",
            f"The same rules as the live step (timing.py), at {p.mfu:.0%} of the dense BF16 peak.",
            f"Memory: weights, gradients and AdamW state ({TRAINING_BYTES_PER_PARAM} bytes a "
            f"parameter, {ZERO_WORDS[zero]}), plus the activations a stage keeps for its "
            f"microbatches in flight (up to {fullest['in_flight']:g} at once), "
            f"{activations.WORDS[recompute]} "
            "(Korthikanti et al. 2022; "
            "sequence parallel beside tensor parallel; expert layers counted as dense).",
            "Expert tokens are taken as spread evenly over the experts.",
            *p.assumptions,
        ],
        sources=[m.source, *p.sources, activations.SOURCE],
    )


def explain(shares: dict[str, float]) -> tuple[str, str]:
    """What bounds the step, and why, in one sentence."""
    comm = sum(shares.get(k, 0.0) for k in COMMUNICATION)
    candidates = {
        "compute": shares.get("compute", 0.0),
        "communication": comm,
        "pipeline bubble": shares.get("wait", 0.0),
        "data": shares.get("data", 0.0),
        "update": shares.get("update", 0.0),
        "checkpoint": shares.get("checkpoint", 0.0),
    }
    bound = max(candidates, key=lambda k: candidates[k])
    if bound == "compute":
        why = (
            f"Compute-bound: forward and backward take {shares['compute']:.0%} of the step; "
            f"communication adds {comm:.0%}, waiting {shares.get('wait', 0.0):.0%}."
        )
    elif bound == "communication":
        worst = max(COMMUNICATION, key=lambda k: shares.get(k, 0.0))
        name = {
            "tensor": "tensor-parallel all-reduces",
            "experts": "expert all-to-alls",
            "allreduce": "the exposed gradient all-reduce",
        }[worst]
        why = (
            f"Communication-bound: {comm:.0%} of the step moves data, most of it "
            f"{name} ({shares[worst]:.0%}); compute is {shares.get('compute', 0.0):.0%}."
        )
    elif bound == "pipeline bubble":
        why = (
            f"Bubble-bound: GPUs wait {shares['wait']:.0%} of the step for the pipeline; "
            f"compute is {shares.get('compute', 0.0):.0%}."
        )
    else:
        why = f"{bound.capitalize()}-bound: it takes {candidates[bound]:.0%} of the step."
    return bound, why


# ---- a live step, split the same way --------------------------------------------------------


def step_groups(trace: StepTrace) -> dict[str, float]:
    """A live step's seconds by time-bar group, for its busiest lane: the groups that add to
    the lane, and beside them the hidden all-reduce and the pipeline sends."""
    best: dict[str, float] = {}
    best_busy = -1.0
    for lane in expand(trace):
        sums: dict[str, float] = dict.fromkeys(GROUP_ORDER, 0.0)
        for e in lane:
            group = str(KINDS[e.kind]["group"])
            sums[group] = sums.get(group, 0.0) + e.dur
        busy = sum(v for k, v in sums.items() if k not in BESIDE and k != "wait")
        if busy > best_busy:
            best, best_busy = sums, busy
    return best


def step_shares(trace: StepTrace) -> dict[str, float]:
    """Shares of the step of the groups that add to it, on the busiest lane."""
    groups = step_groups(trace)
    total = trace.step_s or 1.0
    return {k: v / total for k, v in groups.items() if k not in BESIDE}


def communication_share(shares: dict[str, float]) -> float:
    return math.fsum(shares.get(k, 0.0) for k in COMMUNICATION)


@dataclass
class StepSplit:
    """A live step split like a lens result: seconds and shares by group, and why."""

    step_s: float
    groups: dict[str, float]
    shares: dict[str, float]
    compute_share: float
    communication_share: float
    bound: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def split_step(trace: StepTrace) -> StepSplit:
    """The live step's time by group (its busiest lane) and what bounds it, in the lens's
    words, so the page can put the tiny model's step beside a real model's."""
    shares = step_shares(trace)
    bound, why = explain(shares)
    return StepSplit(
        step_s=trace.step_s,
        groups=step_groups(trace),
        shares=shares,
        compute_share=shares.get("compute", 0.0),
        communication_share=communication_share(shares),
        bound=bound,
        why=why,
    )
