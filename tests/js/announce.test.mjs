// The screen reader's sentence for a step (static/js/ui/announce.js): what it says, and that it
// says the latest step at most once every few seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { stepSentence } from '../../static/js/ui/announce.js';

test('one sentence a step, in number', () => {
  assert.equal(stepSentence({ step: 41, loss: 2.86 }, 32), 'Step 41: loss 2.860, all 32 GPUs agreed on the update.');
  assert.equal(stepSentence({ step: 1024, loss: 1 }, 1), 'Step 1,024: loss 1.000, 1 GPU updated its weights.');
  assert.equal(
    stepSentence({ step: 7, loss: 3.5 }, 8, 1),
    'Step 7: loss 3.500, 1 of 8 GPUs down; the run goes on from its last checkpoint.',
  );
});

test('the latest step, at most once every few seconds', async () => {
  const appended = [];
  globalThis.document = {
    createElement: () => ({ setAttribute() {}, textContent: '' }),
    body: { append: (el) => appended.push(el) },
  };
  const { mountAnnouncer } = await import('../../static/js/ui/announce.js');
  const handlers = {};
  const store = { state: { hello: { config: { gpus: 8 } } }, on: (k, fn) => (handlers[k] = fn) };
  let t = 0;
  const { region } = mountAnnouncer(store, { now: () => t, every: 50 });
  store.state.step = { step: 1, loss: 4 };
  handlers.step();
  assert.equal(region.textContent, 'Step 1: loss 4.000, all 8 GPUs agreed on the update.');
  t = 10;
  for (const n of [2, 3, 4]) {
    store.state.step = { step: n, loss: 4 - n / 10 };
    handlers.step();
  }
  assert.match(region.textContent, /^Step 1:/); // not yet: a few seconds between sentences
  await new Promise((r) => setTimeout(r, 80));
  assert.match(region.textContent, /^Step 4: loss 3\.600/); // then the latest, not each one
  delete globalThis.document;
});

test('the step in a paragraph: one GPU averages nothing, many average round the ring', async () => {
  const { stepWords } = await import('../../static/js/ui/describe.js');
  const probe = { top: [{ token: ' time', p: 0.42 }] };
  const one = stepWords({ hello: { config: { gpus: 1 } }, step: { step: 12, loss: 2.5, probe } });
  assert.match(one, /^Step 12: one GPU guessed .* nothing to average\. Loss now 2\.500\. .*" time" .*\(42%\)\.$/);
  assert.doesNotMatch(one, /1 GPUs/);
  const many = stepWords({
    hello: { topology: { gpus: Array(8).fill({}) } },
    step: { step: 1024, loss: 2.5, probe, ring: { passes: 14, bytes_per_gpu: 9360 } },
  });
  assert.match(many, /^Step 1,024: 8 GPUs each guessed .* in 14 passes, 9\.4 KB sent by each GPU\./);
});
