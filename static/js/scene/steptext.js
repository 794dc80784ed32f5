// What each kind of work in a step is, in one line a class can read, and how long slow motion
// dwells on it. The kinds are the trace's (hello.trace_kinds); a kind missing here is named
// by its own id and gets the default dwell. A planned step's blocks often hold several kinds
// at once (one stage computing, another waiting, a hand-off between them): the caption names
// the block's main one and `alsoText` lists the others.

import { t } from '../i18n/lang.js';

export const SLOW_DEFAULT_S = 3.0;

// Names and captions are read as they are drawn, in the page's language.
const entry = (name, caption, slowS) => ({ get name() { return name(); }, get caption() { return caption(); }, slowS });

export const STEP_TEXT = {
  data: entry(() => t('Data'), () => t('the loaders deal the batch out: each GPU gets its own slice'), 3.5),
  forward: entry(() => t('Forward'), () => t('every GPU guesses the next word for each example in its slice'), 3.0),
  backward: entry(() => t('Backward'), () => t('every GPU works out, from its own mistakes, how to nudge each weight'), 3.0),
  allreduce: entry(() => t('All-reduce'), () => t('the GPUs pass their nudges round the ring until every GPU holds the average'), 5.0),
  allreduce_hidden: entry(() => t('All-reduce, hidden under backward'), () => t('the nudges already worked out start round the ring in buckets while the backward pass goes on: this time costs nothing extra'), 4.0),
  allreduce_wait: entry(() => t('Waiting for the all-reduce'), () => t('the backward pass is done, but the last buckets are still on their way round the ring: the GPUs wait for them'), 3.5),
  optimizer: entry(() => t('Update'), () => t('every GPU applies the same averaged nudge, so all copies stay identical'), 3.0),
  checkpoint: entry(() => t('Checkpoint'), () => t('the weights are saved to disk: a failure now loses only the steps after this'), 3.0),
  wait: entry(() => t('Waiting for a turn'), () => t('hatched GPUs sit idle: their input has not arrived yet (in a pipeline, the bubble)'), 3.0),
  p2p: entry(() => t('Pipeline hand-off'), () => t("a stage hands its microbatch's activations up to the next stage, or its correction back down"), 3.5),
  tp_allreduce: entry(() => t('Tensor-parallel join'), () => t('the GPUs of a stage each hold a slice of every layer: they add their partial results together before going on'), 3.5),
  all_to_all: entry(() => t('Tokens to experts'), () => t("each token's numbers travel to the GPU holding the experts it was routed to, and back"), 4.0),
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
