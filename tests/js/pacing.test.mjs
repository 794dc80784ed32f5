// Pacing of planned steps (static/js/scene/pacing.js) on real pipeline and expert steps of
// the engine: every run of every lane gets a readable moment (no GPU changes colour more
// than three times a second), simulated time is warped monotonically so every lane's order
// is kept, and the step keeps to its length on screen unless its runs alone need more.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MAX_S, MIN_MOVE_S, MIN_RUN_S, laneRuns, pace } from '../../static/js/scene/pacing.js';
import { TraceView } from '../../static/js/scene/trace.js';
import { fixture } from './fixture.mjs';

const { kinds, steps } = fixture('traces.json');
const PLANNED = ['dp2_tp2_pp2', 'gpipe_pp4_moe', '1f1b_pp4_16'];
const paced = Object.fromEntries(PLANNED.map((n) => {
  const view = new TraceView(steps[n].compact, { kinds });
  return [n, { view, p: pace(view) }];
}));
const wallS = (p, t0, t1) => (p.wallAt(t1) - p.wallAt(t0)) * p.total;

test('a run lasts long enough that no GPU changes colour more than three times a second', () => {
  // The design's rule: nothing flashes faster than three times a second.
  assert.ok(MIN_RUN_S >= 1 / 3);
  for (const [name, { p }] of Object.entries(paced)) {
    let runs = 0;
    p.runs.forEach((lane, g) => {
      for (const u of lane) {
        const s = wallS(p, u.t0, u.t1);
        assert.ok(s >= MIN_RUN_S * (1 - 1e-9), `${name} lane ${g}: a ${u.show} run of ${s} s`);
        runs += 1;
      }
    });
    assert.ok(runs >= 4 * p.runs.length, `${name}: ${runs} runs`);
  }
});

test('simulated time is warped monotonically: every event keeps its place among the others', () => {
  for (const [name, { view, p }] of Object.entries(paced)) {
    const edges = [...new Set(view.records.filter((r) => r.t1 > r.t0).flatMap((r) => [r.t0, r.t1]))].sort((a, b) => a - b);
    assert.equal(p.wallAt(edges[0]), 0, name);
    assert.equal(p.wallAt(edges[edges.length - 1]), 1, name);
    const span = edges[edges.length - 1] - edges[0];
    for (let i = 1; i < edges.length; i++) {
      const a = p.wallAt(edges[i - 1]);
      const b = p.wallAt(edges[i]);
      // Strictly later, unless the two are a rounding error apart (a wait of 1e-19 s).
      if (edges[i] - edges[i - 1] > 1e-12 * span) assert.ok(b > a, `${name}: edge ${i} at or before edge ${i - 1}`);
      else assert.ok(b >= a, `${name}: edge ${i} before edge ${i - 1}`);
    }
    // simAt undoes wallAt.
    for (const t of edges) assert.ok(Math.abs(p.simAt(p.wallAt(t)) - t) <= 1e-9 * span, `${name} ${t}`);
    for (let v = 0; v <= 1; v += 0.125) assert.ok(Math.abs(p.wallAt(p.simAt(v)) - v) < 1e-9, `${name} v=${v}`);
  }
});

test("each lane's runs are its real states in order, covering all of its work", () => {
  for (const [name, { view, p }] of Object.entries(paced)) {
    const tiny = 0.01 * view.stepS; // a hundredth of the step (the module's rule)
    p.runs.forEach((lane, g) => {
      for (let i = 1; i < lane.length; i++) {
        assert.ok(lane[i].t0 >= lane[i - 1].t1 - 1e-18, `${name} lane ${g}: runs ${i - 1} and ${i} overlap`);
        // Back-to-back runs of one kind would have been one.
        if (lane[i].show === lane[i - 1].show) assert.ok(lane[i].t0 - lane[i - 1].t1 > tiny, `${name} lane ${g} run ${i}`);
      }
      for (const r of view.laneRecords(g)) {
        if (r.overlaps || !(r.t1 > r.t0)) continue;
        const mid = (r.t0 + r.t1) / 2;
        if (!(mid > r.t0)) continue;
        assert.ok(lane.some((u) => u.t0 <= mid && mid < u.t1), `${name} lane ${g}: ${r.kind} at ${r.t0} in no run`);
      }
    });
  }
});

test('microbatches in a row on a stage are one run that names them all', () => {
  const { p } = paced.gpipe_pp4_moe;
  // GPipe: every stage runs the forwards of all 8 microbatches back to back.
  for (let s = 0; s < 4; s++) {
    const fw = p.runs[s].filter((u) => u.show === 'forward');
    assert.equal(fw.length, 1, `stage ${s}`);
    assert.deepEqual(fw[0].mbs, [0, 1, 2, 3, 4, 5, 6, 7]);
  }
});

test("the pipeline's bubbles stay: later stages wait first, and start one after another", () => {
  for (const name of ['gpipe_pp4_moe', '1f1b_pp4_16']) {
    const { p } = paced[name];
    const firstForward = [0, 1, 2, 3].map((s) => p.runs[s].find((u) => u.show === 'forward').t0);
    for (let s = 1; s < 4; s++) {
      assert.ok(firstForward[s] > firstForward[s - 1], `${name}: stage ${s} starts before stage ${s - 1}`);
      const before = p.runs[s].filter((u) => u.t1 <= firstForward[s]).map((u) => u.show);
      assert.ok(before.includes('wait'), `${name}: stage ${s} shows no wait before its first forward`);
    }
    // The first stage's first forward is not held back by a bubble.
    assert.ok(!p.runs[0].filter((u) => u.t1 <= firstForward[0]).some((u) => u.show === 'wait'), name);
  }
});

test('every all-to-all gets its moment, shrunk only when the step would run past MAX_S', () => {
  for (const [name, { view, p }] of Object.entries(paced)) {
    const a2a = view.records.filter((r) => r.a2a);
    for (const r of a2a) assert.ok(wallS(p, r.t0, r.t1) >= p.move * (1 - 1e-9), `${name}: an all-to-all of ${wallS(p, r.t0, r.t1)} s`);
    assert.ok(p.move <= MIN_MOVE_S);
    if (p.move < MIN_MOVE_S) assert.ok(p.total > MAX_S * 0.95, `${name}: moments shrank in a ${p.total} s step`);
  }
  // A step short enough keeps the full moments and stays within MAX_S.
  const short = paced.dp2_tp2_pp2.p;
  assert.equal(short.move, MIN_MOVE_S);
  assert.ok(short.total <= MAX_S && short.total >= 2, `${short.total}`);
});

test("a step is as long as its lanes' readable moments need, and no longer than MAX_S otherwise", () => {
  for (const [name, { view, p }] of Object.entries(paced)) {
    // A lane's runs come one after another, each at least its floor.
    const most = Math.max(...p.runs.map((lane) => lane.length));
    assert.ok(p.total >= most * MIN_RUN_S * (1 - 1e-9), `${name}: ${most} runs in ${p.total} s`);
    // Past MAX_S the all-to-alls' moments are what gives way, never the runs'.
    if (p.total > MAX_S && view.records.some((r) => r.a2a)) assert.ok(p.move < MIN_MOVE_S, name);
  }
});

test('blocks tile the wall time from 0 to 1 and name one of their kinds', () => {
  for (const [name, { p }] of Object.entries(paced)) {
    const b = p.blocks;
    assert.equal(b[0].v0, 0);
    assert.equal(b[b.length - 1].v1, 1);
    for (let i = 1; i < b.length; i++) {
      assert.equal(b[i].v0, b[i - 1].v1, `${name} block ${i}`);
      assert.equal(b[i].t0, b[i - 1].t1, `${name} block ${i}`);
    }
    for (const blk of b) {
      assert.ok(blk.kinds.has(blk.primary), `${name}: ${blk.primary} not in ${[...blk.kinds]}`);
      for (const s of blk.shows) assert.ok(blk.kinds.has(s));
    }
  }
});

test('runAt finds the run a lane is in, with progress through it', () => {
  const { p } = paced['1f1b_pp4_16'];
  p.runs.forEach((lane, g) => {
    for (const u of lane) {
      const mid = (u.t0 + u.t1) / 2;
      const at = p.runAt(g, mid);
      assert.equal(at.t0, u.t0);
      assert.equal(at.show, u.show);
      assert.ok(at.progress > 0 && at.progress < 1);
      assert.equal(p.runAt(g, u.t0).progress, 0);
    }
    assert.equal(p.runAt(g, lane[lane.length - 1].t1), null);
  });
});

// ---- the rules of a lane's runs, on small made-up lanes -----------------------------------

const view = (spans, step_s) => new TraceView({ gpus: 1, step_s, spans: spans.map(([kind, t0, dur, mb = null]) => ({ kind, t0, dur, lanes: [0], mb })) }, { kinds });
const shows = (runs) => runs.map((u) => [u.show, u.t0, u.t1, u.mbs]);

test('back-to-back microbatches of one kind merge; a long wait between them stays', () => {
  const v = view([['forward', 0, 1, 0], ['forward', 1, 1, 1], ['forward', 2, 1, 2], ['wait', 3, 4], ['backward', 7, 1, 0]], 8);
  assert.deepEqual(shows(laneRuns(v, 0)), [['forward', 0, 3, [0, 1, 2]], ['wait', 3, 7, []], ['backward', 7, 8, [0]]]);
});

test('a wait under a hundredth of the step belongs to the work before it', () => {
  const v = view([['forward', 0, 50, 0], ['wait', 50, 0.5], ['backward', 50.5, 49.5, 0]], 100);
  assert.deepEqual(shows(laneRuns(v, 0)), [['forward', 0, 50.5, [0]], ['backward', 50.5, 100, [0]]]);
  // At the very start there is no work before: it joins the work after.
  const w = view([['wait', 0, 0.5], ['forward', 0.5, 99.5, 0]], 100);
  assert.deepEqual(shows(laneRuns(w, 0)), [['forward', 0, 100, [0]]]);
});

test('a short wait between two forwards, shorter than half of each, is part of them', () => {
  // A stage a little faster than the next, between two microbatches.
  const v = view([['forward', 0, 10, 0], ['wait', 10, 4], ['forward', 14, 10, 1], ['wait', 24, 30]], 54);
  assert.deepEqual(shows(laneRuns(v, 0)), [['forward', 0, 24, [0, 1]], ['wait', 24, 54, []]]);
  // Longer than half the work around it: a real wait, shown.
  const w = view([['forward', 0, 10, 0], ['wait', 10, 6], ['forward', 16, 10, 1]], 26);
  assert.deepEqual(shows(laneRuns(w, 0)).map((r) => r[0]), ['forward', 'wait', 'forward']);
});

test("a join within a microbatch's pass is part of it; one outside it is a run of its own", () => {
  const trace = {
    gpus: 1,
    step_s: 10,
    spans: [{ kind: 'forward', t0: 0, dur: 2, lanes: [0], mb: 0 }, { kind: 'optimizer', t0: 6, dur: 4, lanes: [0] }],
    rings: [
      { kind: 'tp_allreduce', t0: 2, pass_s: [[1, 2]], ring: [0], links: ['nvlink'], chunk_bytes: [4], mb: 0 },
      { kind: 'tp_allreduce', t0: 4, pass_s: [[1, 2]], ring: [0], links: ['nvlink'], chunk_bytes: [4] },
    ],
  };
  const runs = laneRuns(new TraceView(trace, { kinds }), 0);
  assert.deepEqual(shows(runs), [['forward', 0, 4, [0]], ['tp_allreduce', 4, 6, []], ['optimizer', 6, 10, []]]);
});
