// Where the model lives on the GPUs: small model slabs above each GPU, by parallelism scheme.
//
// store.state.placement (and store.state.placementPreview, see update()):
//   'data'            every GPU holds the whole stack (a full copy of the model)
//   'tensor_pipeline' a server's GPUs split the layers into stages (pipeline) and the GPUs of
//                     a stage each hold a thin slice of their layers (tensor)
//   'expert'          every GPU keeps the shared attention slab plus its own few experts
//   'finetune'        only a couple of GPUs are busy: a short run from a checkpoint
// When the live run itself has a plan (hello.plan more than data parallel), whichever layout
// is picked the slabs are the live plan's, from hello.roles: each GPU holds the layers of its
// stage (at their own height, so later stages sit higher) in the slice of its tensor rank,
// and the experts it keeps, so the picture and the run on screen agree.
// All slabs of all GPUs are one InstancedMesh.

import * as THREE from 'three';
import { isPlanned, planOf, rolesOf } from '../plan.js';
import { commit, disposeTree, instanced, place, tag, tint } from '../util.js';

const LAYERS = 4; // drawn layers; the page says real models stack dozens
const SLAB_H = 0.07;
const GAP = 0.05;
const EXPERTS_PER_GPU = 2;
const MAX_LAYERS = 8; // a live plan's layers drawn, at most (more share a slab)
const MAX_EXPERTS = 4; // a live plan's experts drawn per GPU, at most

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const n = lay.gpus.length;
  const per = Math.max(1, lay.grid.cols * lay.grid.rows);
  const [gw, gh, gd] = lay.dims.gpu;
  const group = new THREE.Group();
  const slabs = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshLambertMaterial({ color: '#ffffff' }),
    n * (MAX_LAYERS + MAX_EXPERTS + 1),
    'placement',
  );
  group.add(slabs);
  tag(group, 'placement');
  scene.add(group);
  let lastKey = '';
  // A data-parallel live run's memory walls tell its story, so by default the stacks show
  // only for the other layouts. While a lab compares layouts it sets
  // store.state.placementPreview = true, and data parallel's full copies show as well.
  const unsubs = [
    ctx.store.on('change:placement', () => ctx.requestRender()),
    ctx.store.on('change:placementPreview', () => ctx.requestRender()),
  ];

  // The live run's plan, when it has one.
  const plan = planOf(ctx.store.state.hello);
  const live = isPlanned(plan) ? rolesOf(ctx.store.state.hello) : null;

  function layoutLive(pal) {
    let k = 0;
    const layers = Math.max(1, plan.layers ?? plan.pp);
    const drawn = Math.min(layers, MAX_LAYERS);
    const byId = new Map(lay.gpus.map((g) => [g.id, g]));
    for (const r of live) {
      const g = byId.get(r.gpu);
      if (!g) continue;
      const base = g.y + gh / 2 + 0.22;
      const levels = new Set();
      for (let l = r.layers[0]; l < r.layers[1]; l++) levels.add(Math.floor((l * drawn) / layers));
      const w = (gw * 0.75) / Math.max(1, plan.tp);
      const x = g.x - gw * 0.375 + w * ((r.tp % plan.tp) + 0.5);
      let top = -1;
      for (const lv of levels) {
        place(slabs, k, x, base + lv * (SLAB_H + GAP), g.z, w * 0.94, SLAB_H, gd * 0.62);
        tint(slabs, k++, pal.memWeights);
        top = Math.max(top, lv);
      }
      const ne = r.experts[1] - r.experts[0];
      if (ne > 0) {
        const shown = Math.min(ne, MAX_EXPERTS);
        const ew = (gw * 0.7) / MAX_EXPERTS;
        for (let e = 0; e < shown; e++) {
          const ex = g.x - (ew * (shown - 1)) / 2 + e * ew;
          place(slabs, k, ex, base + (top + 1) * (SLAB_H + GAP) + 0.06, g.z, ew * 0.8, 0.14, gd * 0.35);
          tint(slabs, k++, pal.experts);
        }
      }
    }
    slabs.count = k;
    commit(slabs);
  }

  function layoutFor(mode, pal) {
    if (live) {
      layoutLive(pal);
      return;
    }
    let k = 0;
    const baseY = (g) => g.y + gh / 2 + 0.22;
    const slab = (g, layer, w, xOff, colour) => {
      place(slabs, k, g.x + xOff, baseY(g) + layer * (SLAB_H + GAP), g.z, w, SLAB_H, gd * 0.62);
      tint(slabs, k, colour);
      k += 1;
    };
    const whole = pal.memWeights;
    for (let i = 0; i < n; i++) {
      const g = lay.gpus[i];
      const local = i % per;
      if (mode === 'tensor_pipeline') {
        const stages = Math.min(LAYERS, per);
        const stage = Math.floor((local * stages) / per);
        const inStage = per / stages;
        const slot = local - Math.ceil(stage * inStage);
        const share = 1 / Math.max(1, Math.round(inStage));
        const lo = Math.floor((stage * LAYERS) / stages);
        const hi = Math.floor(((stage + 1) * LAYERS) / stages);
        for (let l = lo; l < hi; l++) {
          const w = gw * 0.75 * share;
          slab(g, l, w, -gw * 0.375 + w * (slot + 0.5), whole);
        }
      } else if (mode === 'expert') {
        slab(g, 0, gw * 0.75, 0, whole);
        for (let e = 0; e < EXPERTS_PER_GPU; e++) {
          const w = gw * 0.3;
          place(slabs, k, g.x - gw * 0.18 + e * gw * 0.36, baseY(g) + SLAB_H + GAP + 0.1, g.z, w, 0.18, gd * 0.4);
          tint(slabs, k, pal.experts);
          k += 1;
        }
      } else if (mode === 'finetune') {
        if (i < 2) for (let l = 0; l < LAYERS; l++) slab(g, l, gw * 0.75, 0, whole);
      } else {
        for (let l = 0; l < LAYERS; l++) slab(g, l, gw * 0.75, 0, whole);
      }
    }
    slabs.count = k;
    commit(slabs);
  }

  return {
    object: group,
    update(frame) {
      const mode = frame.run.placement || 'data';
      // A live plan's roles are on the GPUs already (plates and tags, roles.js): its stacks,
      // which would hide the GPUs' glow, show while "swap it" compares layouts.
      const show = live ? frame.run.placementPreview === true : mode !== 'data' || frame.run.placementPreview === true;
      const key = `${live ? 'live' : mode}|${show}|${frame.palette.theme}`;
      frame.debug.placementSlabs = show ? slabs.count : 0;
      frame.debug.placementLive = Boolean(live);
      if (key === lastKey) return false;
      lastKey = key;
      group.visible = show;
      if (show) layoutFor(mode, frame.palette);
      frame.debug.placementSlabs = show ? slabs.count : 0;
      return false;
    },
    dispose() {
      for (const u of unsubs) u();
      disposeTree(group);
    },
  };
}
