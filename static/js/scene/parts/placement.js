// Where the model lives on the GPUs: small model slabs above each GPU, by parallelism scheme.
//
// store.state.placement (and store.state.placementPreview, see update()):
//   'data'            every GPU holds the whole stack (a full copy of the model)
//   'tensor_pipeline' a server's GPUs split the layers into stages (pipeline) and the GPUs of
//                     a stage each hold a thin slice of their layers (tensor)
//   'expert'          every GPU keeps the shared attention slab plus its own few experts
//   'finetune'        only a couple of GPUs are busy: a short run from a checkpoint
// All slabs of all GPUs are one InstancedMesh.

import * as THREE from 'three';
import { commit, disposeTree, instanced, place, tag, tint } from '../util.js';

const LAYERS = 4; // drawn layers; the page says real models stack dozens
const SLAB_H = 0.07;
const GAP = 0.05;
const EXPERTS_PER_GPU = 2;

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const n = lay.gpus.length;
  const per = Math.max(1, lay.grid.cols * lay.grid.rows);
  const [gw, gh, gd] = lay.dims.gpu;
  const group = new THREE.Group();
  const slabs = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshLambertMaterial({ color: '#ffffff' }),
    n * (LAYERS + EXPERTS_PER_GPU + 1),
    'placement',
  );
  group.add(slabs);
  tag(group, 'placement');
  scene.add(group);
  let lastKey = '';
  // The live run is data parallel and its memory walls tell that story, so by default the
  // stacks show only for the other layouts. While a lab compares layouts it sets
  // store.state.placementPreview = true, and data parallel's full copies show as well.
  const unsubs = [
    ctx.store.on('change:placement', () => ctx.requestRender()),
    ctx.store.on('change:placementPreview', () => ctx.requestRender()),
  ];

  function layoutFor(mode, pal) {
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
          tint(slabs, k, pal.expert);
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
      const show = mode !== 'data' || frame.run.placementPreview === true;
      const key = `${mode}|${show}|${frame.palette.theme}`;
      frame.debug.placementSlabs = show ? slabs.count : 0;
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
