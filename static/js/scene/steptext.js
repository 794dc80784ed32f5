// What each kind of work in a step is, in one line a class can read, and how long slow motion
// dwells on it. The kinds are the trace's (hello.trace_kinds); a kind missing here is named
// by its own id and gets the default dwell.

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
    name: 'Waiting',
    caption: 'some GPUs sit idle until their input arrives',
    slowS: 3.0,
  },
};

/** {name, caption, slowS} for a kind, with fallbacks for kinds this table does not know. */
export function stepText(kind) {
  return STEP_TEXT[kind] ?? { name: String(kind ?? ''), caption: '', slowS: SLOW_DEFAULT_S };
}
