// The pipeline's bubble, the textbook's and the measured one side by side, and why they
// differ. The textbook (GPipe, Huang et al. 2019; 1F1B has the same share) counts every
// stage's compute and nothing else: with p stages and m microbatches each stage waits
// (p - 1) of (m + p - 1) slots. A real hand-off between stages takes time on its link too;
// where a hand-off is long beside a stage's work on a microbatch (the tiny model here: a few
// microseconds of maths, a fixed latency per message), the measured bubble is larger.

const FORWARD = /^forward/;

/** The textbook's bubble for `pp` stages and `m` microbatches: (p - 1) / (m + p - 1). */
export function textbookBubble(pp, m) {
  return pp > 1 && m >= 1 ? (pp - 1) / (m + pp - 1) : 0;
}

/** What the step's trace says of its hand-offs: {handoff, work} in simulated seconds, the
 * mean pipeline transfer and the first GPU's forward work on its first microbatch (the
 * textbook's slot), or null where the trace has no hand-off. */
export function handoffs(trace) {
  const hops = trace?.p2p ?? [];
  if (!hops.length) return null;
  const onFirst = (s) => s.lanes == null || s.lanes.includes(0);
  const mb0 = (trace.spans ?? []).filter((s) => FORWARD.test(s.kind) && s.mb === 0 && onFirst(s));
  const work = mb0.reduce((a, s) => a + s.dur, 0);
  if (!(work > 0)) return null;
  return { handoff: hops.reduce((a, h) => a + h.dur, 0) / hops.length, work };
}
