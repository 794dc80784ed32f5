// The step timeline (static/js/scene/timeline.js) driven with made-up clocks: blocks of work
// in order and in proportion, every lane's own event at each moment, no block skipped on slow
// frames, no backlog when steps come fast, no colour flashing faster than three times a
// second, slow motion and holds; and real pipeline steps of the engine played readably.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Timeline } from '../../static/js/scene/timeline.js';
import { stepText } from '../../static/js/scene/steptext.js';
import { fixture } from './fixture.mjs';

const { kinds, steps } = fixture('traces.json');

/** A data-parallel step as the server sends it: shared spans and one ring. */
function dpTrace(gpus = 4, { checkpoint = false } = {}) {
  const spans = [];
  let t = 0;
  for (const [kind, dur] of [['data', 0.001], ['forward', 0.01], ['backward', 0.02]]) {
    spans.push({ kind, t0: t, dur, lanes: null, wall_s: 0 });
    t += dur;
  }
  const passes = 2 * (gpus - 1);
  const ring = {
    kind: 'allreduce', t0: t, pass_s: [[0.06 / passes, passes]], ring: [...Array(gpus).keys()],
    links: Array(gpus).fill('nvlink'), chunk_bytes: Array(gpus).fill(100), wall_s: 0,
  };
  t += 0.06;
  for (const [kind, dur] of [['optimizer', 0.0005], ...(checkpoint ? [['checkpoint', 0.002]] : [])]) {
    spans.push({ kind, t0: t, dur, lanes: null, wall_s: 0 });
    t += dur;
  }
  return { gpus, step_s: t, spans, rings: [ring] };
}

const TRACES = {
  plain: dpTrace(),
  saved: dpTrace(4, { checkpoint: true }),
  // Two GPUs not in lockstep, as in a pipeline: GPU 0 computes while GPU 1 waits, then the other way.
  staggered: {
    gpus: 2, step_s: 0.02, rings: [],
    spans: [
      { kind: 'forward', t0: 0, dur: 0.01, lanes: [0] }, { kind: 'wait', t0: 0, dur: 0.01, lanes: [1] },
      { kind: 'wait', t0: 0.01, dur: 0.01, lanes: [0] }, { kind: 'forward', t0: 0.01, dur: 0.01, lanes: [1] },
    ],
  },
};

function timeline() {
  const tl = new Timeline();
  tl.setKinds(kinds);
  return tl;
}
const step = (n, events = [], trace = TRACES.plain) => ({ step: n, trace, events });

/** The phases in the order they come on, with when, from frames every `dt` ms. */
function phases(tl, from, to, dt) {
  const seen = [];
  for (let t = from; t <= to; t += dt) {
    const s = tl.at(t);
    if (s.phase && seen[seen.length - 1]?.phase !== s.phase) seen.push({ phase: s.phase, t });
  }
  return seen;
}

test('phases play in order and in proportion within about two seconds at lesson pace', () => {
  const tl = timeline();
  tl.onStep(step(1), 0, 'lesson');
  const seen = phases(tl, 0, 3000, 10);
  // No checkpoint phase: this step saved nothing.
  assert.deepEqual(seen.map((s) => s.phase), ['data', 'forward', 'backward', 'allreduce', 'optimizer']);
  const share = Object.fromEntries(tl.blocks.map((b) => [b.primary, b.w1 - b.w0]));
  assert.ok(Math.min(...Object.values(share)) >= 0.05, JSON.stringify(share)); // every phase visible
  // In proportion to the simulated time: the all-reduce (60 ms) > backward (20) > forward (10).
  assert.ok(share.allreduce > share.backward && share.backward > share.forward, JSON.stringify(share));
  assert.ok(tl.duration >= 1.5 && tl.duration <= 2.6, `${tl.duration}`);
  // The shares make up the whole step, in order, without gaps.
  assert.equal(tl.blocks[0].w0, 0);
  assert.ok(Math.abs(tl.blocks[tl.blocks.length - 1].w1 - 1) < 1e-12);
  for (let i = 1; i < tl.blocks.length; i++) assert.equal(tl.blocks[i].w0, tl.blocks[i - 1].w1);
  assert.equal(tl.playing, false);
});

test('a step fits the time until the next one, but never shrinks into a flash', () => {
  const duration = (speed) => {
    const tl = timeline();
    tl.onStep(step(1), 0, speed);
    // Once its time is up the step has played out.
    for (let t = 0; t <= tl.duration * 1000 + 50; t += 16) tl.at(t);
    assert.equal(tl.playing, false, `${speed}`);
    return tl.duration;
  };
  // One step a second: it plays out before the next one comes, using most of the second.
  assert.ok(duration(1) <= 1 && duration(1) >= 0.8, `${duration(1)}`);
  // Faster than the floor: steps 1/4 s or 1/10 s apart all play for the same floor, long
  // enough that each colour comes on less than three times a second.
  assert.equal(duration(4), duration(10));
  assert.ok(duration(4) > 1 / 3 && duration(4) > 1 / 4, `${duration(4)}`);
  // Steps far apart do not drag: a couple of seconds, not the five between them.
  assert.ok(duration(0.2) <= 3, `${duration(0.2)}`);
  assert.ok(duration('lesson') >= 1.5 && duration('lesson') <= 2.6);
});

test('slow frames never skip a phase', () => {
  const tl = timeline();
  tl.onStep(step(1, [{ kind: 'checkpoint_saved', detail: {} }], TRACES.saved), 0, 4);
  const seen = [];
  for (let t = 0; t < 20000 && seen.length < 12; t += 1500) { // a frame every 1.5 s
    const s = tl.at(t);
    if (!s.phase) break;
    seen.push(s.phase);
  }
  assert.deepEqual(seen, ['data', 'forward', 'backward', 'allreduce', 'optimizer', 'checkpoint']);
});

test('slow frames with steps coming all the while still show every phase of a step', () => {
  // A busy laptop or software WebGL draws two frames a second while a step comes every
  // second: a new step must not replace one before its last phase has been on screen.
  const tl = timeline();
  const seen = new Set();
  let n = 0;
  for (let t = 0; t < 30000; t += 500) {
    if (t % 1000 === 0) tl.onStep(step(++n), t, 1);
    const s = tl.at(t);
    if (s.phase) seen.add(s.phase);
  }
  assert.deepEqual([...seen].sort(), ['allreduce', 'backward', 'data', 'forward', 'optimizer']);
});

test('a failed step shows no all-reduce', () => {
  const tl = timeline();
  tl.onStep(step(1, [{ kind: 'gpu_failed', detail: { gpu: 2 } }]), 0, 'lesson');
  const names = tl.blocks.map((b) => b.primary);
  assert.ok(!names.includes('allreduce'));
  assert.deepEqual(names.slice(0, 3), ['data', 'forward', 'backward']);
});

test('fast steps keep only the newest and never flash', () => {
  const tl = timeline();
  // 20 steps a second for 5 seconds, drawn at 60 frames a second.
  let next = 0;
  let n = 0;
  const shown = [];
  const changes = {};
  let last = null;
  for (let t = 0; t <= 5000; t += 1000 / 60) {
    while (next <= t) {
      tl.onStep(step(++n), next, 'max');
      next += 50;
    }
    const s = tl.at(t);
    if (tl.msg && shown[shown.length - 1] !== tl.msg.step) shown.push(tl.msg.step);
    if (s.phase !== last) {
      if (s.phase) (changes[s.phase] ??= []).push(t);
      last = s.phase;
    }
  }
  assert.ok(n >= 100);
  // Steps start in order, skipping the ones that came while one played...
  assert.deepEqual(shown, [...shown].sort((a, b) => a - b));
  assert.ok(shown.length < n / 5, `${shown.length} of ${n}`);
  // ... and the newest is never far behind: no backlog builds up.
  assert.ok(shown[shown.length - 1] >= n - 25);
  // No colour comes on more than three times in any one second.
  for (const [phase, times] of Object.entries(changes)) {
    for (let i = 0; i + 3 < times.length; i++) assert.ok(times[i + 3] - times[i] >= 1000, `${phase}: ${times.slice(i, i + 4)}`);
  }
});

test('every lane plays its own events', () => {
  const tl = timeline();
  tl.onStep(step(1, [], TRACES.staggered), 0, 'lesson');
  const seen = [];
  for (let t = 0; t <= 3000; t += 25) {
    const s = tl.at(t);
    if (!s.active) continue;
    const now = `${s.lane(0)?.kind ?? null}/${s.lane(1)?.kind ?? null}`;
    if (seen[seen.length - 1] !== now) seen.push(now);
  }
  assert.deepEqual(seen, ['forward/wait', 'wait/forward']);
});

test('ring lanes name their pass, peer and chunk', () => {
  const tl = timeline();
  tl.onStep(step(1), 0, 'lesson');
  const found = [];
  for (let t = 0; t <= 3000; t += 5) {
    const s = tl.at(t);
    if (s.phase !== 'allreduce') continue;
    const e = s.lane(2);
    if (!found.length || found[found.length - 1].index !== e.index) found.push(e);
  }
  // 4 GPUs: 2(G-1) = 6 passes, each GPU sending to the next, G-1 = 3 of each phase.
  assert.deepEqual(found.map((e) => e.index), [1, 2, 3, 4, 5, 6]);
  assert.ok(found.every((e) => e.peer === 3 && e.src === 1 && e.passes === 6));
  assert.deepEqual(found.map((e) => e.phase), [...Array(3).fill('reduce_scatter'), ...Array(3).fill('all_gather')]);
  // Reduce-scatter pass k sends chunk (i - k) mod G; all-gather forwards (i + 1 - k) mod G.
  assert.deepEqual(found.map((e) => e.chunk), [2, 1, 0, 3, 2, 1]);
});

test('slow motion dwells on every block and new steps wait', () => {
  const tl = timeline();
  tl.onStep(step(1), 0, 4);
  tl.slowMotion(true, 100); // running: the next step plays slowly
  const seen = [];
  let n = 1;
  for (let t = 0; t <= 40000; t += 50) {
    if (t % 250 === 0) tl.onStep(step(++n), t, 4); // 4 steps a second keep coming
    const s = tl.at(t);
    if (s.slow && (!seen.length || seen[seen.length - 1].phase !== s.phase)) seen.push({ phase: s.phase, t, step: tl.msg.step });
    if (!tl.slowActive && !tl.slowWanted && seen.length) break;
  }
  assert.deepEqual(seen.map((s) => s.phase), ['data', 'forward', 'backward', 'allreduce', 'optimizer']);
  assert.equal(new Set(seen.map((s) => s.step)).size, 1); // steps arriving meanwhile did not cut it short
  // Each block dwells as long as steptext.js says.
  for (let i = 1; i < seen.length; i++) {
    const dwell = seen[i].t - seen[i - 1].t;
    const want = stepText(seen[i - 1].phase).slowS * 1000;
    assert.ok(Math.abs(dwell - want) <= 60, `${seen[i - 1].phase}: ${dwell} ms, not ${want}`);
  }
  assert.equal(tl.slowEnded, true);
});

test('a hold stands the animation still, then the newest step plays', () => {
  const tl = timeline();
  tl.onStep(step(1), 0, 'lesson');
  tl.at(100);
  tl.hold(200, 3000);
  const during = [];
  for (let t = 200; t < 3200; t += 100) {
    if (t === 1000) tl.onStep(step(2), t, 'lesson');
    if (t === 2000) tl.onStep(step(3), t, 'lesson');
    during.push(tl.at(t).phase);
  }
  assert.deepEqual([...new Set(during)], [null]);
  assert.equal(tl.at(3300).phase, 'data');
  assert.equal(tl.msg.step, 3);
});

for (const name of ['gpipe_pp4_moe', '1f1b_pp4_16']) {
  test(`${name}: a deep pipeline plays every run of every lane, in order, readably`, () => {
    const trace = steps[name].compact;
    const tl = timeline();
    tl.onStep({ step: 1, trace, events: [] }, 0, 'lesson');
    assert.ok(tl.paced, 'a planned step is paced');
    const lanes = Array.from({ length: trace.gpus }, () => []);
    for (let t = 0; t < 60000; t += 1000 / 60) {
      const s = tl.at(t);
      if (!s.active) {
        if (t > 100) break;
        continue;
      }
      assert.equal(s.planned, true);
      for (let g = 0; g < trace.gpus; g++) {
        const show = s.lane(g)?.show ?? null;
        const seq = lanes[g];
        if (!seq.length || seq[seq.length - 1].show !== show) seq.push({ show, t });
      }
    }
    // At its own pace: the step takes as long as pacing.js says.
    assert.ok(Math.abs(tl.duration - tl.paced.total) < 1e-9 || tl.duration > tl.paced.total);
    lanes.forEach((seq, g) => {
      const shown = seq.map((x) => x.show).filter((x) => x !== null);
      const runs = tl.paced.runs[g].map((u) => u.show);
      // Runs of the same kind in a row show as one stretch of that colour.
      const merged = runs.filter((k, i) => k !== runs[i - 1]);
      assert.deepEqual(shown, merged, `lane ${g}`);
      // No GPU changes what it shows more than three times in any one second.
      const times = seq.map((x) => x.t);
      for (let i = 0; i + 3 < times.length; i++) assert.ok(times[i + 3] - times[i] >= 1000, `lane ${g}`);
    });
  });
}
