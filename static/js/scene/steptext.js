// What each kind of work in a step is, in one line a class can read, and how long slow motion
// dwells on it. The kinds are the trace's (hello.trace_kinds); a kind missing here is named
// by its own id and gets the default dwell. A planned step's blocks often hold several kinds
// at once (one stage computing, another waiting, a hand-off between them): the caption names
// the block's main one and `alsoText` lists the others.

export const SLOW_DEFAULT_S = 3.0;

export const STEP_TEXT = {
  data: {
    name: 'Data',
    caption: 'the loaders deal the batch out: each GPU gets its own slice',
    slowS: 3.5,
  },
  forward: {
    name: 'Forward',
    caption: 'every GPU guesses the next word for each example in its slice',
    slowS: 3.0,
  },
  backward: {
    name: 'Backward',
    caption: 'every GPU works out, from its own mistakes, how to nudge each weight',
    slowS: 3.0,
  },
  allreduce: {
    name: 'All-reduce',
    caption: 'the GPUs pass their nudges round the ring until every GPU holds the average',
    slowS: 5.0,
  },
  allreduce_hidden: {
    name: 'All-reduce, hidden under backward',
    caption: 'the nudges already worked out start round the ring in buckets while the backward pass goes on: this time costs nothing extra',
    slowS: 4.0,
  },
  allreduce_wait: {
    name: 'Waiting for the all-reduce',
    caption: 'the backward pass is done, but the last buckets are still on their way round the ring: the GPUs wait for them',
    slowS: 3.5,
  },
  optimizer: {
    name: 'Update',
    caption: 'every GPU applies the same averaged nudge, so all copies stay identical',
    slowS: 3.0,
  },
  checkpoint: {
    name: 'Checkpoint',
    caption: 'the weights are saved to disk: a failure now loses only the steps after this',
    slowS: 3.0,
  },
  wait: {
    name: 'Waiting for a turn',
    caption: 'hatched GPUs sit idle: their input has not arrived yet (in a pipeline, the bubble)',
    slowS: 3.0,
  },
  p2p: {
    name: 'Pipeline hand-off',
    caption: "a stage hands its microbatch's activations up to the next stage, or its correction back down",
    slowS: 3.5,
  },
  tp_allreduce: {
    name: 'Tensor-parallel join',
    caption: 'the GPUs of a stage each hold a slice of every layer: they add their partial results together before going on',
    slowS: 3.5,
  },
  all_to_all: {
    name: 'Tokens to experts',
    caption: "each token's numbers travel to the GPU holding the experts it was routed to, and back",
    slowS: 4.0,
  },
};

/** {name, caption, slowS} for a kind, with fallbacks for kinds this table does not know. */
export function stepText(kind) {
  return STEP_TEXT[kind] ?? { name: String(kind ?? ''), caption: '', slowS: SLOW_DEFAULT_S };
}

// The kinds worth naming beside a block's main one, in the order they are listed.
const ALSO = ['p2p', 'tp_allreduce', 'all_to_all', 'allreduce_hidden', 'allreduce_wait', 'wait', 'forward', 'backward', 'allreduce'];

/** The names of what else goes on in a block ("Pipeline hand-off · Waiting for a turn"), or
 * '' when nothing else does. */
export function alsoText(kinds, primary) {
  if (!kinds) return '';
  return ALSO.filter((k) => k !== primary && kinds.has(k)).map((k) => stepText(k).name).join(' · ');
}
