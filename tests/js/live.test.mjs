// Live values in the tour's words (static/js/ui/live.js): a run with no checkpoint or probe
// yet gets the stop's "not yet" words, never "Step none yet"; a run with them gets the
// numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { NOT_YET, fillTemplate, liveValues } from '../../static/js/ui/live.js';
import { repoJson } from './fixture.mjs';

const scene = repoJson('scenes/training-run.json');
const stop = (part) => scene.tour.find((s) => s.part === part && s.ask);

function store(state) {
  return { state: { checkpoints: [], ...state }, tokensPerSecond: () => null };
}

const hello = { config: { gpus: 8, servers: 2, checkpoint_every: 5 }, n_params: 1234 };

test('a new run has no checkpoint and no probe yet, and says so', () => {
  const v = liveValues(store({ hello, step: { step: 2, loss: 4.1 }, status: { step: 2 } }));
  assert.deepEqual([...v[NOT_YET]].sort(), ['checkpoint_bytes', 'checkpoint_step', 'top_p', 'top_word']);
  const ck = stop('checkpoints');
  const caption = fillTemplate(ck.caption, v, ck.caption_not_yet);
  assert.match(caption, /No checkpoint yet/);
  assert.match(caption, /every 5 steps/);
  assert.doesNotMatch(caption, /none yet|–|\{/);
  assert.match(fillTemplate(ck.ask.answer, v, ck.ask.answer_not_yet), /^Step 0: nothing is saved yet/);
  const model = stop('model');
  assert.match(fillTemplate(model.caption, v, model.caption_not_yet), /not been asked.*1,234 weights/);
  assert.match(fillTemplate(model.ask.answer, v, model.ask.answer_not_yet), /^Not asked yet/);
});

test('once they exist the same stops quote the live numbers', () => {
  const probe = { top: [{ token: 'time', p: 0.42 }] };
  const v = liveValues(store({
    hello,
    step: { step: 12, loss: 3.2, probe },
    status: { step: 12 },
    checkpoints: [{ step: 5, bytes: 2048, ok: true }, { step: 10, bytes: 2048, ok: true }],
  }));
  assert.equal(v[NOT_YET].size, 0);
  const ck = stop('checkpoints');
  assert.equal(fillTemplate(ck.ask.answer, v, ck.ask.answer_not_yet), 'Step 10, the newest checkpoint that checks out.');
  const model = stop('model');
  assert.equal(fillTemplate(model.ask.answer, v, model.ask.answer_not_yet), '"time", at 42%.');
});

test('a text with no not-yet words shows a dash for what is missing', () => {
  const v = liveValues(store({ hello }));
  assert.equal(fillTemplate('Newest: {checkpoint_step}', v), 'Newest: none yet');
  assert.equal(fillTemplate('Nobody knows {nothing}', v), 'Nobody knows –');
});

test('a probe is forgotten when the page is on another run', async () => {
  const { rememberProbe } = await import('../../static/js/ui/live.js');
  const handlers = {};
  const fake = {
    state: {},
    on: (kind, fn) => (handlers[kind] = fn),
    set: (k, v) => (fake.state[k] = v),
  };
  rememberProbe(fake);
  const probe = { top: [{ word: 'time', p: 0.08 }] };
  handlers.hello({ run_id: 'a' });
  handlers.step({ step: 25, probe });
  assert.equal(fake.state.lastProbe, probe);
  assert.equal(fake.state.lastProbeStep, 25);
  handlers.hello({ run_id: 'a' }); // the same run again (a reconnect): kept
  assert.equal(fake.state.lastProbe, probe);
  handlers.hello({ run_id: 'b' }); // a story chapter's run: its own guesses, or none yet
  assert.equal(fake.state.lastProbe, null);
  assert.equal(fake.state.lastProbeStep, null);
});

test('a count takes the words for one or for many', () => {
  const t = '{gpus} simulated {gpus:GPU is|GPUs are} training. It has finished {step} {step:step|steps} so far.';
  assert.equal(fillTemplate(t, { gpus: 1, step: 1 }), '1 simulated GPU is training. It has finished 1 step so far.');
  assert.equal(fillTemplate(t, { gpus: 8, step: '1,024' }), '8 simulated GPUs are training. It has finished 1,024 steps so far.');
  assert.equal(fillTemplate(t, { gpus: 0, step: 2 }), '0 simulated GPUs are training. It has finished 2 steps so far.');
});
