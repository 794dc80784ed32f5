"""What a transformer layer keeps for its backward pass, in bytes: the activations.

The forward pass keeps the tensors the backward pass will need (each layer's inputs, the
attention's queries, keys, values and scores, the MLP's hidden layer, the dropout masks).
Korthikanti et al. (2022), "Reducing Activation Recomputation in Large Transformer Models",
Table 2, counts them for one layer with 16-bit activations, for a sequence of `s` tokens, a
microbatch of `b` sequences, a hidden size `h` and `a` attention heads, split `t` ways by
tensor parallelism:

    no recomputation, tensor parallel          s b h (10 + 24/t + 5 a s / (h t))
    ... with sequence parallelism              s b h (34/t + 5 a s / (h t))
    selective recomputation (the attention's   s b h (10 + 24/t), or s b h 34/t with
      scores, softmax and dropout redone)        sequence parallelism
    full recomputation (only the layer's       2 s b h
      input kept; the forward is redone)

The `5 a s / h` term is the attention's scores and what softmax and dropout make of them:
it grows with the sequence, and selective recomputation (or a fused attention kernel that
never stores them) removes it. Full recomputation keeps only each layer's input and pays a
second forward pass in the backward.

A pipeline stage keeps this for every microbatch it has started and not yet finished: with
1F1B, stage `i` of `p` holds `p - i` of them (Korthikanti et al., section 4.2.3), so the
first stage holds a whole model's worth of layers. How many a stage holds under its schedule
is read from the schedule's timeline (`pipeline.Timeline.peak_in_flight`).
"""

from __future__ import annotations

from typing import Literal

Recompute = Literal["none", "selective", "full"]
RECOMPUTE: tuple[Recompute, ...] = ("none", "selective", "full")
WORDS: dict[str, str] = {
    "none": "nothing recomputed",
    "selective": "the attention's scores recomputed",
    "full": "each layer's forward recomputed",
}
SOURCE = (
    "Korthikanti et al. (2022), Reducing Activation Recomputation in Large Transformer "
    "Models, Table 2: activation memory per layer"
)


def layer_bytes(
    seq: int,
    batch: int,
    hidden: int,
    heads: int,
    tp: int = 1,
    *,
    sequence_parallel: bool | None = None,
    recompute: Recompute = "selective",
) -> float:
    """Bytes one layer keeps for one microbatch, on each of its `tp` GPUs. Sequence
    parallelism is taken to go with tensor parallelism unless said otherwise."""
    if min(seq, batch, hidden, heads, tp) < 1:
        raise ValueError("sequence, batch, hidden size, heads and tp must be at least 1")
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute is one of {RECOMPUTE}, not {recompute!r}")
    sp = tp > 1 if sequence_parallel is None else sequence_parallel
    sbh = float(seq) * batch * hidden
    if recompute == "full":
        return 2.0 * sbh
    kept = 34.0 / tp if sp else 10.0 + 24.0 / tp
    scores = 5.0 * heads * seq / (hidden * tp)
    return sbh * (kept if recompute == "selective" else kept + scores)


def by_recompute(
    seq: int, batch: int, hidden: int, heads: int, tp: int, layers: int, microbatches: int
) -> dict[str, float]:
    """Bytes on a GPU holding `layers` layers for `microbatches` microbatches at once, for
    each way of recomputing."""
    return {
        mode: layers * microbatches * layer_bytes(seq, batch, hidden, heads, tp, recompute=mode)
        for mode in RECOMPUTE
    }
