// The "One GPU" story's index and values: the chapters in scenes/stories/one-gpu.json, the
// chapter modules under static/js/story/ (one chapter, one file), the run each chapter needs
// (runMatches in static/js/story/player.js), the numbers its words quote
// (static/js/story/values.js) and the live values the tour's captions quote
// (static/js/ui/live.js) against the names the scene declares.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';

import { PENDING, storyValues } from '../../static/js/story/values.js';
import { runMatches } from '../../static/js/story/player.js';
import { fillTemplate, liveValues } from '../../static/js/ui/live.js';
import { makeTranslator } from '../../static/js/i18n/translate.js';
import { fixture, repoJson } from './fixture.mjs';

const story = repoJson('scenes/stories/one-gpu.json');
const { scene } = fixture('layouts.json');
const MODULE = /^(\d\d)-[a-z0-9-]+$/;
const moduleFiles = readdirSync(new URL('../../static/js/story/', import.meta.url))
  .filter((f) => /^\d\d-.*\.js$/.test(f))
  .map((f) => f.replace(/\.js$/, ''));
const placeholders = (text) => [...String(text).matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
const storeOf = (state = {}) => ({ state: { checkpoints: [], ...state }, tokensPerSecond: () => null });
/** A hello for a story run, as the server would send it for that config. */
const helloFor = (run) => ({
  config: { gpus: run.gpus, servers: run.servers, n_layer: run.n_layer, experts: run.experts, top_k: run.top_k, tp: run.tp, pp: run.pp, ep: run.ep, microbatches: run.microbatches, schedule: run.schedule },
  plan: { dp: run.gpus / (run.tp * run.pp), tp: run.tp, pp: run.pp, ep: run.ep, microbatches: run.microbatches, schedule: run.schedule },
});

test("each chapter's module is a file named after a chapter that uses it, and no file is left over", () => {
  const used = new Map();
  story.chapters.forEach((ch, i) => {
    if (!ch.module) return;
    assert.match(ch.module, MODULE, ch.id);
    assert.ok(moduleFiles.includes(ch.module), `${ch.id}: no static/js/story/${ch.module}.js`);
    if (!used.has(ch.module)) used.set(ch.module, []);
    used.get(ch.module).push(i + 1);
  });
  for (const [mod, chapters] of used) {
    const n = Number(mod.slice(0, 2));
    assert.ok(chapters.includes(n), `${mod} is named after chapter ${n}, used in ${chapters}`);
  }
  assert.deepEqual([...used.keys()].sort(), [...moduleFiles].sort());
});

test('every chapter module loads without a page and has an enter(ctx)', async () => {
  for (const name of moduleFiles) {
    const mod = await import(`../../static/js/story/${name}.js`);
    assert.equal(typeof mod.enter, 'function', name);
  }
});

test('chapter ids are unique and every chapter names a run the story defines', () => {
  const ids = story.chapters.map((c) => c.id);
  assert.equal(new Set(ids).size, ids.length);
  for (const ch of story.chapters) assert.ok(Object.hasOwn(story.runs, ch.run), `${ch.id}: run ${ch.run}`);
  // The story starts on one GPU and ends on the biggest team.
  const gpus = (c) => story.runs[c.run].gpus;
  assert.equal(gpus(story.chapters[0]), 1);
  assert.equal(gpus(story.chapters[story.chapters.length - 1]), Math.max(...Object.values(story.runs).map((r) => r.gpus)));
});

test('a run matches the chapter that asked for it, and no other run of the story', () => {
  const runs = Object.entries(story.runs);
  for (const [key, run] of runs) {
    const hello = helloFor(run);
    assert.equal(runMatches(hello, run), true, key);
    for (const [other, want] of runs) {
      if (other !== key) assert.equal(runMatches(hello, want), false, `${key} passes for ${other}`);
    }
  }
  assert.equal(runMatches(null, story.runs.one), false);
  assert.equal(runMatches(helloFor(story.runs.one), null), false);
  // A pipeline's schedule counts; a plain run's does not.
  const pp = story.runs.pp4;
  assert.equal(runMatches(helloFor({ ...pp, schedule: pp.schedule === 'gpipe' ? '1f1b' : 'gpipe' }), pp), false);
  const one = story.runs.one;
  assert.equal(runMatches(helloFor({ ...one, schedule: 'gpipe' }), one), one.pp === 1);
});

test("every number a chapter quotes has a value, and before the run speaks it reads '…'", () => {
  const values = storyValues(storeOf(), { story: { figures: {} }, memo: {}, drift: null, runKey: null });
  for (const ch of story.chapters) {
    for (const name of placeholders(ch.text)) {
      assert.ok(Object.hasOwn(values, name), `${ch.id}: {${name}} has no value`);
    }
  }
  for (const name of ['layers', 'gpus', 'memory_per_gpu', 'bubble', 'gpu1_experts', 'sim_step']) assert.equal(values[name], PENDING, name);
  assert.ok(!fillTemplate(story.chapters[0].text, values).includes('{'));
});

test("the story's numbers come from the run: plan, roles, memory and the probe", () => {
  const run = story.runs.team64;
  const hello = {
    ...helloFor(run),
    roles: [
      { gpu: 0, dp: 0, stage: 0, tp: 0, ep: 0, layers: [0, run.n_layer / run.pp], experts: [0, run.experts / run.ep] },
      { gpu: 1, dp: 0, stage: 1, tp: 0, ep: 0, layers: [run.n_layer / run.pp, (2 * run.n_layer) / run.pp], experts: [0, run.experts / run.ep] },
    ],
    n_params: 1234567,
  };
  const step = {
    step: 7, tokens: 4096, sim_step_s: 0.0125,
    memory: [{ total: 2.5e9, capacity: 80e9, weights: 1e9, grads: 1e9, optimizer: 0.5e9 }],
    probe: { top: [{ token: 'time', p: 0.42 }, { token: 'a', p: 0.2 }] },
    plan_stats: { bubble_fraction: 0.25, traffic_bytes: { all_to_all: 3e6, p2p: 1e6 } },
  };
  const figures = { field: 512, layer_params: 875e6 };
  const v = storyValues(storeOf({ hello, step, status: { step: 7 } }), { story: { figures }, memo: {}, drift: null, runKey: 'team64' });
  const dp = run.gpus / (run.tp * run.pp);
  assert.equal(v.dp, String(dp));
  assert.equal(v.pp, String(run.pp));
  assert.equal(v.experts_per_gpu, String(run.experts / run.ep));
  assert.equal(v.ep_minus_1, String(run.ep - 1));
  assert.equal(v.gpu1_layers, `1–${run.n_layer / run.pp}`);
  assert.equal(v.gpu1_layers_words, run.n_layer / run.pp > 1 ? `layers 1–${run.n_layer / run.pp}` : 'layer 1');
  assert.equal(v.stage2_layers, run.n_layer / run.pp === 1 ? '2' : `${run.n_layer / run.pp + 1}–${(2 * run.n_layer) / run.pp}`);
  assert.equal(v.tokens_per_gpu, (4096 / dp).toLocaleString('en-US'));
  assert.equal(v.memory_per_gpu, '2.5 GB');
  assert.equal(v.memory_capacity, '80 GB');
  assert.equal(v.p_time, '42%');
  assert.equal(v.top_word, 'time');
  assert.equal(v.bubble, '25%');
  assert.equal(v.a2a_bytes, '3 MB'); // the all-to-all's traffic only
  assert.equal(v.scale_layer_params, '875 million');
  assert.equal(v.field_gpus, '512');
  assert.equal(v.mirror, String(512 / run.gpus)); // the field is this many copies of the team
  assert.equal(v.field_dp, String(dp * (512 / run.gpus)));
  assert.equal(v.run, 'team64');
  assert.equal(v.n_params, '1,234,567');
});

test('a chapter filled in English is put into German with its numbers the German way', () => {
  const words = repoJson('scenes/locales/de/story.json');
  const t = makeTranslator('de', words);
  const ch = story.chapters[0];
  const english = fillTemplate(ch.text, { field_gpus: '4,096' });
  const german = fillTemplate(words[ch.text], { field_gpus: '4.096' });
  assert.notEqual(german, english);
  assert.equal(t.text(english), german);
});

test('the live values are exactly the placeholders the scene declares, all words', () => {
  const values = liveValues(storeOf());
  assert.deepEqual(Object.keys(values).sort(), [...scene.placeholders].sort());
  for (const [k, v] of Object.entries(values)) assert.equal(typeof v, 'string', k);
  assert.equal(fillTemplate('step {step}, {nope}', { step: '3' }), 'step 3, –');
});

test('the live values read the step, the run and the time bar', () => {
  const hello = {
    config: { gpus: 8, servers: 2, checkpoint_every: 50 },
    topology: { gpus: new Array(8).fill({}), servers: [{}, {}], leaves: [{}], spines: [{}, {}] },
    n_params: 1e6, preset: { label: 'H100 cluster', gpu: 'H100 SXM' },
    trace_kinds: [{ kind: 'forward', group: 'compute' }, { kind: 'allreduce', group: 'allreduce' }],
  };
  const step = {
    step: 12, loss: 3.14159, tokens: 2048, sim_step_s: 0.004, wall_step_s: 0.5,
    trace: {
      gpus: 2, step_s: 0.004,
      spans: [{ kind: 'forward', t0: 0, dur: 0.001, lanes: null }],
      rings: [{ kind: 'allreduce', t0: 0.001, pass_s: [[0.0015, 2]], ring: [0, 1], links: ['nvlink', 'nvlink'], chunk_bytes: [10, 10] }],
    },
    ring: { passes: 14, bytes_per_gpu: 1.75e6 },
  };
  const checkpoints = [{ step: 10, bytes: 4e6, ok: true }, { step: 11, bytes: 5e6, ok: false }];
  const v = liveValues(storeOf({ hello, step, checkpoints }));
  assert.equal(v.loss, '3.142');
  assert.equal(v.gpus_per_server, '4');
  assert.equal(v.spines, '2');
  assert.equal(v.tokens_per_s, '512.0 k'); // 2,048 tokens in 4 ms of simulated time
  // What this computer manages: 2,048 tokens in the 0.5 s it took, with no step arriving live.
  assert.equal(v.tokens_per_s_here, '4,096');
  assert.equal(v.sim_compute, '1.00 ms');
  assert.equal(v.sim_allreduce, '3.00 ms'); // two passes of 1.5 ms: the lanes' sum
  assert.equal(v.ring_bytes, '1.8 MB');
  assert.equal(v.checkpoint_step, '10'); // the failed save is not the last good one
  assert.equal(v.checkpoints, '2');
  assert.equal(v.gpu_name, 'H100 SXM');
});
