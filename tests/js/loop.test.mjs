// The render loop (static/js/scene/loop.js) on a clock the test moves: it draws while
// something moves and stops when nothing does; on a CPU renderer (renderer.frameMs) it draws
// at most 30 frames a second however often the browser offers a frame, and a frame after a
// skipped one moves by the whole time since.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createLoop } from '../../static/js/scene/loop.js';

function rig(frameMs, { moveFor = Infinity } = {}) {
  let now = 0;
  globalThis.performance = { now: () => now };
  let tick = null;
  const renders = [];
  const renderer = {
    frameMs,
    info: { render: { calls: 3 } },
    setAnimationLoop: (fn) => {
      tick = fn;
    },
    render: () => renders.push(now),
  };
  const dts = [];
  const loop = createLoop({
    renderer,
    scene: {},
    camera: {},
    store: { state: {} },
    look: { signal: true },
    playback: { at: () => ({ active: false, phase: null }) },
    staging: null,
    animateCamera: (t, dt) => {
      dts.push(dt);
      return t < moveFor;
    },
    parts: () => [],
  });
  loop.start();
  // The browser offers a frame every 1000/60 ms.
  const run = (ms) => {
    for (const end = now + ms; now < end; ) {
      now += 1000 / 60;
      tick();
    }
  };
  return { loop, renders, dts, run };
}

test('a GPU renderer draws every frame the browser offers while the camera moves', () => {
  const { renders, run } = rig(0);
  run(1000);
  assert.ok(renders.length >= 59 && renders.length <= 61, String(renders.length));
});

test('a CPU renderer draws at most 30 frames a second, and each moves by the time since', () => {
  const { renders, dts, run } = rig(1000 / 30);
  run(1000);
  assert.ok(renders.length >= 29 && renders.length <= 31, String(renders.length));
  const gaps = renders.slice(1).map((t, i) => t - renders[i]);
  assert.ok(Math.min(...gaps) >= 1000 / 30 - 1e-6, `frames ${Math.min(...gaps)} ms apart`);
  // After the first frame every frame covers two of the browser's: no time is lost.
  for (const dt of dts.slice(1)) assert.ok(Math.abs(dt - 2 / 60) < 1e-9, String(dt));
});

test('when nothing moves, nothing is drawn', () => {
  const { loop, renders, run } = rig(1000 / 30, { moveFor: 500 });
  run(2000);
  const drawn = loop.frames;
  assert.ok(renders.every((t) => t <= 600), `drawn at ${renders.at(-1)} ms`);
  run(2000);
  assert.equal(loop.frames, drawn);
  loop.requestRender();
  run(100);
  assert.equal(loop.frames, drawn + 1);
});
