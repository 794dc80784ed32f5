// The pipeline's bubble, textbook beside measured (static/js/ui/bubble.js): the textbook's
// (p - 1) / (m + p - 1), and what a step's trace says of its hand-offs and its work.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { handoffs, textbookBubble } from '../../static/js/ui/bubble.js';

test('the textbook bubble is (p - 1) / (m + p - 1)', () => {
  assert.equal(textbookBubble(4, 4), 3 / 7); // 42.9%
  assert.equal(textbookBubble(4, 16), 3 / 19); // 15.8%
  assert.equal(textbookBubble(8, 2), 7 / 9);
  assert.equal(textbookBubble(1, 8), 0); // no pipeline, no bubble
});

test('hand-offs: the mean transfer, and the first GPU forward work on the first microbatch', () => {
  const trace = {
    spans: [
      { kind: 'forward', t0: 0, dur: 2e-6, lanes: [0], mb: 0 },
      { kind: 'forward_attention', t0: 2e-6, dur: 1e-6, lanes: [0], mb: 0 },
      { kind: 'forward', t0: 3e-6, dur: 2e-6, lanes: [0], mb: 1 }, // another microbatch
      { kind: 'forward', t0: 9e-6, dur: 5e-6, lanes: [1], mb: 0 }, // another stage
      { kind: 'backward', t0: 20e-6, dur: 4e-6, lanes: [0], mb: 0 },
    ],
    p2p: [
      { kind: 'p2p', t0: 3e-6, dur: 6e-6, src: 0, dst: 1, bytes: 10, link: 'nvlink', mb: 0 },
      { kind: 'p2p', t0: 5e-6, dur: 4e-6, src: 0, dst: 1, bytes: 10, link: 'nvlink', mb: 1 },
    ],
  };
  const got = handoffs(trace);
  assert.ok(Math.abs(got.handoff - 5e-6) < 1e-15 && Math.abs(got.work - 3e-6) < 1e-15, got);
  assert.equal(handoffs({ spans: trace.spans, p2p: [] }), null); // one stage: no hand-off
  assert.equal(handoffs(null), null);
});
