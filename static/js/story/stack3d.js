// A pipeline's stages stacked by height in the close-up (gpu3d.js), for chapters 21 to 23:
// each stage a row of GPUs, stage 1 at the bottom with GPU 1 where it always was, stage 2
// over it, and so on, from the run's roles. The GPUs over GPU 1's row drop into place; each
// row is named with its stage and layers, and each GPU whose memory account fits its
// capacity gets a check mark. Every GPU plays its own lane of the live step's trace: its
// cores lit with its work, the band and ring through its layers (stepinside.js), and a
// hatched veil with "waiting" while it sits idle (the pipeline's bubble).

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { textSprite } from '../scene/util.js';
import { BOARD, gpuBody, SLAB, WALL_H } from './body3d.js';
import { PAIR_X } from './pair3d.js';
import { boxOf, cssColour } from './parts3d.js';
import { stepInside } from './stepinside.js';
import { span } from './values.js';

export const STAGE_H = WALL_H + 1.3; // one stage over the one below
const DROP_S = 0.7; // a new GPU's drop into its place

/** Where role r stands: [x, y] of its board's centre (GPU 1 at the origin). */
function placeOf(roles, r) {
  const row = roles.filter((x) => x.stage === r.stage);
  return [row.indexOf(r) * PAIR_X, r.stage * STAGE_H];
}

/**
 * mountStack({root, roles, gpu1, memory, reduced, requestRender}) -> {frame(f), update(), info(), describe(), dispose()}
 * @param gpu1 GPU 1's body (gpu3d.js draws it); roles the run's roles ({gpu, stage, layers})
 * @param memory() the live step's memory accounts, one per GPU
 */
export function mountStack({ root, roles, gpu1, memory, reduced, requestRender }) {
  const group = new THREE.Group();
  group.name = 'pipeline-stages';
  const per = roles[0].layers[1] - roles[0].layers[0]; // layers a stage holds
  const bodies = new Map([[roles[0].gpu, gpu1]]);
  const names = [];
  for (const r of roles) {
    if (bodies.has(r.gpu)) continue;
    const body = gpuBody({ layers: per });
    const [x, y] = placeOf(roles, r);
    body.group.position.set(x, y, 0);
    body.group.userData.rest = y;
    for (const slab of body.slabs) slab.visible = true;
    const name = textSprite(t('GPU {n}', { n: r.gpu + 1 }), { height: 0.36 });
    name.position.set(0, 0.35, BOARD.d / 2 + 0.45);
    body.group.add(name);
    group.add(body.group);
    bodies.set(r.gpu, body);
  }
  // Each stage's row named at its left, with the layers it holds.
  const stages = [...new Set(roles.map((r) => r.stage))].sort((a, b) => a - b);
  for (const st of stages) {
    const l = roles.find((r) => r.stage === st).layers;
    const label = textSprite(t(['Stage {stage} · layer {layers}', 'Stage {stage} · layers {layers}'], { stage: st + 1, layers: span(l) }, l[1] - l[0]), { height: 0.36, bg: 'rgba(8,13,24,0.85)' });
    label.center.set(1, 0.5);
    label.position.set(-BOARD.w / 2 - 0.25, st * STAGE_H + WALL_H * 0.55, 0.6);
    names.push(label);
  }
  group.add(...names);
  // A check mark over each GPU whose memory fits.
  const ticks = new Map();
  for (const r of roles) {
    const tick = textSprite('✓', { height: 0.6, verbatim: true, colour: '#3ddbb0' });
    const [x, y] = placeOf(roles, r);
    tick.position.set(x + BOARD.w / 2 - 0.2, y + WALL_H + 0.35, 0.3);
    tick.visible = false;
    group.add(tick);
    ticks.set(r.gpu, tick);
  }
  // The step through every GPU's layers: GPU 1's is gpu3d's own; the others' have no readout.
  const steps = roles.filter((r) => r.gpu !== roles[0].gpu).map((r) => stepInside({
    parent: bodies.get(r.gpu).group,
    slabs: bodies.get(r.gpu).slabs,
    size: { w: SLAB.w, h: SLAB.h, d: SLAB.d },
    colour: cssColour,
    at3: [0, 0.05, 2.75],
    lane: r.gpu,
    readout: false,
  }));
  root.add(group);

  // The GPUs over GPU 1's row drop into place.
  let raf = 0;
  let t0 = 0;
  const upper = [...bodies.values()].filter((b) => b !== gpu1);
  let landed = reduced() ? 1 : 0;
  function place(l) {
    for (const b of upper) b.group.position.y = b.group.userData.rest + 2.4 * (1 - l) ** 2;
  }
  function drop(now) {
    t0 ||= now;
    landed = Math.min(1, (now - t0) / 1000 / DROP_S);
    place(landed);
    requestRender();
    raf = landed < 1 ? requestAnimationFrame(drop) : 0;
  }
  place(landed);
  if (landed < 1) raf = requestAnimationFrame(drop);

  const waiting = new Set();
  return {
    /** A frame of the live step: each GPU's cores, its band and ring, and its waiting. */
    frame(f) {
      for (const s of steps) s.frame(f);
      for (const r of roles) {
        const kind = f?.lane?.(r.gpu)?.kind ?? null;
        const body = bodies.get(r.gpu);
        if (body !== gpu1) body.light(kind);
        if (body.setWaiting(kind === 'wait' || kind === 'allreduce_wait' ? f.active : false)) waiting.add(r.gpu);
        else waiting.delete(r.gpu);
      }
    },
    /** Walls filled and check marks from the live memory accounts. */
    update() {
      const m = memory() ?? [];
      for (const r of roles) {
        const a = m[r.gpu];
        if (bodies.get(r.gpu) !== gpu1 && a?.capacity) bodies.get(r.gpu).setFill(a.total / a.capacity);
        ticks.get(r.gpu).visible = Boolean(a && a.total <= a.capacity);
      }
    },
    info: () => ({ stages: stages.length, gpus: bodies.size, landed, fits: [...ticks.values()].filter((x) => x.visible).length, waiting: [...waiting] }),
    describe: () => [
      ...[...bodies].filter(([, b]) => b !== gpu1).flatMap(([g, b]) => b.describe(`gpu${g + 1}-`)),
      ...names.map((n) => ({ name: 'stage', box: boxOf(n) })),
      ...[...ticks.values()].filter((x) => x.visible).map((x) => ({ name: 'fits', box: boxOf(x) })),
      ...steps.flatMap((s) => s.describe()).filter((p) => p.name === 'band' || p.name === 'ring'),
    ],
    dispose() {
      cancelAnimationFrame(raf);
      for (const s of steps) s.dispose();
    },
  };
}
