// The scale field's plan (static/js/scene/field/plan.js: servers, racks, pods and fat-tree
// tiers from N GPUs) and the run's plan as the scene reads it (static/js/scene/plan.js: which
// GPU is which copy, stage, tensor rank and expert rank), against the rules they state and
// against app/engine/plan.py.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MAX_GPUS, MIN_GPUS, PRESETS, RADIX, fieldPlan, parseGpus, tiersFor } from '../../static/js/scene/field/plan.js';
import { isPlanned, planKey, planOf, roleOf, roleTag, rolesOf } from '../../static/js/scene/plan.js';
import { fixture } from './fixture.mjs';

// ---- the scale field -------------------------------------------------------------------

test('a fat tree of 128-port switches: one leaf to 64 GPUs, two tiers to k²/2, three to k³/4', () => {
  // Al-Fares et al. 2008: a leaf gives half its ports to the GPUs; two tiers join k²/2 hosts,
  // three join k³/4.
  const k = RADIX;
  assert.equal(k, 128);
  assert.equal(tiersFor(k / 2), 1);
  assert.equal(tiersFor(k / 2 + 1), 2);
  assert.equal(tiersFor((k * k) / 2), 2);
  assert.equal(tiersFor((k * k) / 2 + 1), 3);
  assert.equal(tiersFor((k * k * k) / 4), 3);
  // Other radices follow the same rule.
  assert.equal(tiersFor(32, 64), 1);
  assert.equal(tiersFor(2048, 64), 2);
  assert.equal(tiersFor(2049, 64), 3);
});

test('every preset has ports enough at every tier, and no more switches than it needs', () => {
  for (const n of [MIN_GPUS, 64, 65, 512, 4096, 8192, 8193, 16384, 131072]) {
    const p = fieldPlan(n);
    const down = p.radix / 2;
    assert.equal(p.gpus, n);
    assert.equal(p.servers, Math.ceil(n / 8));
    assert.equal(p.racks, Math.ceil(p.servers / p.serversPerRack));
    assert.equal(p.gpusPerRack, 32);
    // Leaves: one port down per GPU, and one leaf fewer would not do.
    assert.ok(p.leaves * down >= n && (p.leaves - 1) * down < n, `${n}: ${p.leaves} leaves`);
    if (p.tiers === 2) {
      // Every leaf uplink lands on a spine port; one spine fewer would not have enough.
      assert.ok(p.spines * p.radix >= p.leaves * down && (p.spines - 1) * p.radix < p.leaves * down, `${n}`);
      assert.equal(p.pods, 1);
      assert.equal(p.cores, 0);
    }
    if (p.tiers === 3) {
      assert.equal(p.pods, Math.ceil(n / ((p.radix * p.radix) / 4)));
      assert.equal(p.spines, p.leaves); // k/2 spines for the k/2 leaves of a pod
      assert.ok(p.cores * p.radix >= p.spines * down);
    }
    assert.equal(p.live + p.mirrored, p.gpus);
  }
});

test('131,072 GPUs: 32 pods of 4,096, 2,048 leaves and spines, 1,024 core switches', () => {
  // A full k = 128 fat tree has (k/2)² = 4,096 cores for k³/4 = 524,288 GPUs; a quarter of
  // that tree needs a quarter of its cores.
  const p = fieldPlan(131072);
  assert.deepEqual(
    [p.tiers, p.pods, p.leaves, p.spines, p.cores, p.racks, p.racksPerPod],
    [3, 32, 2048, 2048, 1024, 4096, 128],
  );
  assert.equal(p.twoTierMax, 8192);
  assert.equal(p.threeTierMax, 524288);
  assert.deepEqual([...PRESETS], [512, 4096, 16384, 131072]);
  assert.ok(PRESETS.every((n) => n >= MIN_GPUS && n <= MAX_GPUS));
});

test('the field clamps to its range and always holds the live run', () => {
  assert.equal(fieldPlan(3).gpus, MIN_GPUS);
  assert.equal(fieldPlan(10 ** 7).gpus, MAX_GPUS);
  const p = fieldPlan(8, { live: 16 });
  assert.equal(p.gpus, 16);
  assert.equal(p.live, 16);
  assert.equal(p.mirrored, 0);
  const q = fieldPlan(512, { perServer: 4, live: 8 });
  assert.deepEqual([q.servers, q.gpusPerRack, q.live, q.mirrored], [128, 16, 8, 504]);
});

test('a requested GPU count is read as people write it, or refused', () => {
  const cases = [
    ['16384', 16384], ['16,384', 16384], [' 131k ', 131000], ['2.5k', 2500], ['4_096', 4096],
    ['8', 8], ['131072', 131072],
    ['7', null], ['131073', null], ['1e4', null], ['-64', null], ['lots', null], ['', null],
    [null, null], [undefined, null],
  ];
  for (const [text, want] of cases) assert.equal(parseGpus(text), want, `${text}`);
});

// ---- the run's plan --------------------------------------------------------------------

const { plans } = fixture('plans.json');
const helloOf = (c, extra = {}) => ({
  plan: c.plan,
  config: { gpus: c.gpus, n_layer: 4, experts: 8, ...extra },
  topology: { gpus: Array.from({ length: c.gpus }, (_, id) => ({ id })) },
});

test('without roles in the hello, each GPU\'s copy, stage, tensor and expert rank are the engine\'s', () => {
  for (const c of plans) {
    const hello = helloOf(c);
    const roles = rolesOf(hello);
    assert.equal(roles.length, c.gpus);
    roles.forEach((r, g) => {
      assert.deepEqual([r.dp, r.stage, r.tp, r.ep], c.coords[g], `${JSON.stringify(c.plan)} GPU ${g}`);
      // A stage holds n_layer / pp layers; an expert rank holds experts / ep experts.
      const per = 4 / c.plan.pp;
      assert.deepEqual(r.layers, [r.stage * per, (r.stage + 1) * per]);
      const pe = 8 / c.plan.ep;
      assert.deepEqual(r.experts, [r.ep * pe, (r.ep + 1) * pe]);
    });
    // The GPUs of a tensor-parallel group share a copy and a stage; a pipeline runs its stages in order.
    for (const group of c.tp_groups) {
      assert.equal(new Set(group.map((g) => `${roles[g].dp}/${roles[g].stage}`)).size, 1);
      assert.deepEqual(group.map((g) => roles[g].tp), [...group.keys()]);
    }
    for (const pipe of c.pipelines) assert.deepEqual(pipe.map((g) => roles[g].stage), [...pipe.keys()]);
  }
});

test("the hello's own roles win over the worked-out ones", () => {
  const c = plans.find((p) => p.plan.pp === 4);
  const hello = { ...helloOf(c), roles: [{ gpu: 0, dp: 0, stage: 0, tp: 0, ep: 0, layers: [0, 3], experts: [2, 5] }] };
  const r0 = roleOf(hello, 0);
  assert.deepEqual(r0.layers, [0, 3]);
  assert.deepEqual(r0.experts, [2, 5]);
  assert.deepEqual(roleOf(hello, 1).layers, [1, 2]); // GPU 1 is not listed: worked out
});

test('a plan with data-parallel defaults, and whether the scene shows roles', () => {
  assert.deepEqual(planOf(null), { dp: 1, tp: 1, pp: 1, ep: 1, microbatches: 1, schedule: '1f1b', experts: 0, top_k: 0, layers: null });
  const dp = planOf({ config: { gpus: 8 }, topology: { gpus: new Array(8).fill({}) } });
  assert.equal(dp.dp, 8);
  assert.equal(isPlanned(dp), false);
  const tp = planOf({ config: { gpus: 8, tp: 2, pp: 2 } });
  assert.equal(tp.dp, 2); // gpus / (tp * pp)
  assert.equal(isPlanned(tp), true);
  assert.equal(isPlanned({ ...dp, ep: 2 }), true);
});

test('role tags count from 1 and name only what the plan splits', () => {
  const plan = { pp: 2, ep: 2 };
  assert.equal(roleTag({ stage: 1, experts: [2, 4] }, plan), 'S2 E3–4');
  assert.equal(roleTag({ stage: 0, experts: [0, 1] }, plan), 'S1 E1');
  assert.equal(roleTag({ stage: 0, experts: [0, 0] }, plan), 'S1');
  assert.equal(roleTag({ stage: 3, experts: [0, 8] }, { pp: 1, ep: 1 }), '');
});

test('the plan key changes exactly when the plan or the roles do', () => {
  const [a, b] = plans;
  const ka = planKey(helloOf(a));
  assert.equal(planKey(helloOf(a)), ka);
  assert.notEqual(planKey(helloOf(b)), ka);
  assert.notEqual(planKey({ ...helloOf(a), plan: { ...a.plan, microbatches: 4 } }), ka);
  const roles = rolesOf(helloOf(a));
  const withRoles = planKey({ ...helloOf(a), roles });
  assert.notEqual(withRoles, ka);
  roles[1] = { ...roles[1], stage: 9 };
  assert.notEqual(planKey({ ...helloOf(a), roles }), withRoles);
});
