// The memory wall behind each GPU (part of part 3, the GPU servers): a frame with capacity
// ticks at each quarter, filled with the GPU's memory account in bands (weights, gradients,
// optimizer state, activations). It shows the live account of the tiny model
// (store.state.memoryCase === null), or a case from the memory lab ({label, fraction, parts,
// fits}) which may overflow the wall into a hatched "doesn't fit" extension. Each kind of
// thing is one InstancedMesh, so draw calls do not grow with GPUs.

import * as THREE from 'three';
import {
  commit,
  disposeTree,
  hatchTexture,
  instanced,
  place,
  tag,
  textSprite,
  tint,
  wallTexture,
} from '../util.js';

const MIN_FILL = 0.03; // the tiny model's share of an 80 GB GPU would be invisible

function bandColour(name, palette, i) {
  const n = (name || '').toLowerCase();
  if (n.includes('optim')) return palette.memOptimizer;
  if (n.includes('grad')) return palette.memGrads;
  if (n.includes('activ') || n.includes('work')) return palette.memActivations;
  if (n.includes('weight') || n.includes('param')) return palette.memWeights;
  return [palette.memWeights, palette.memGrads, palette.memOptimizer, palette.memActivations][i % 4];
}

/** Bands [{colour, from, to}] (fractions of the wall) and the overflow above it. */
function memoryBands(run, gpuId, palette) {
  const mc = run.memoryCase;
  if (mc) {
    const total = Math.max(0, Number(mc.fraction) || 0);
    const parts = Array.isArray(mc.parts) ? mc.parts : [];
    const sum = parts.reduce((a, p) => a + Math.max(0, Number(p.fraction) || 0), 0);
    // Part fractions may be of usable memory (summing to `fraction`) or shares of the whole
    // (summing to 1); scale them so the bands always add up to the fill.
    const scale = sum > 0 ? total / sum : 0;
    let at = 0;
    const bands = parts.map((p, i) => {
      const h = Math.max(0, Number(p.fraction) || 0) * scale;
      const b = { colour: bandColour(p.name, palette, i), from: at, to: at + h };
      at += h;
      return b;
    });
    if (!bands.length && total > 0) bands.push({ colour: palette.memWeights, from: 0, to: total });
    return { bands, overflow: Math.max(0, total - 1), fits: mc.fits !== false && total <= 1 };
  }
  const m = run.step?.memory?.find?.((x) => x.gpu === gpuId) || run.step?.memory?.[gpuId];
  if (!m || !m.capacity) return { bands: [], overflow: 0, fits: true };
  const real = m.total / m.capacity;
  const shown = Math.max(real, MIN_FILL);
  const k = m.total > 0 ? shown / m.total : 0;
  let at = 0;
  const bands = [];
  for (const [name, bytes] of [
    ['weights', m.weights],
    ['grads', m.grads],
    ['optimizer', m.optimizer],
    ['activations', m.activations],
  ]) {
    const h = (bytes || 0) * k;
    bands.push({ colour: bandColour(name, palette, 0), from: at, to: at + h });
    at += h;
  }
  return { bands, overflow: 0, fits: true };
}

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  group.name = 'walls';
  const n = lay.gpus.length;
  const [ww, wh, wt] = lay.dims.wall;
  const wallTex = wallTexture('#ffffff');
  const wallFrame = instanced(
    new THREE.BoxGeometry(ww, wh, wt),
    new THREE.MeshBasicMaterial({
      color: palette.wallFrame,
      map: wallTex,
      transparent: true,
      opacity: 0.5,
      depthWrite: false,
    }),
    n,
    'gpus',
  );
  const bands = instanced(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshLambertMaterial(), n * 4 + 4, 'gpus');
  const hatchTex = hatchTexture('#ffffff', 14, 5);
  const overflow = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshBasicMaterial({ color: palette.overflow, map: hatchTex, transparent: true, opacity: 0.9, depthWrite: false }),
    n,
    'gpus',
  );
  for (let i = 0; i < n; i++) {
    const g = lay.gpus[i];
    place(wallFrame, i, g.wall.x, g.wall.y, g.wall.z);
  }
  wallFrame.count = n;
  commit(wallFrame);

  const noFit = textSprite("doesn't fit", { colour: palette.background, bg: palette.overflow, height: 0.7 });
  noFit.visible = false;

  group.add(wallFrame, bands, overflow, noFit);
  tag(group, 'gpus'); // a click on a wall opens the GPU servers' card
  scene.add(group);

  let lastMemKey = null;
  let overflowWalls = 0;

  function updateMemory(run) {
    const memKey = run.memoryCase ? JSON.stringify(run.memoryCase) : `live:${run.step?.seq ?? 'none'}`;
    if (memKey === lastMemKey) return;
    lastMemKey = memKey;
    let b = 0;
    let o = 0;
    let anyOverflow = false;
    for (let i = 0; i < n; i++) {
      const g = lay.gpus[i];
      const acc = memoryBands(run, g.id, palette);
      const base = g.wall.y - wh / 2;
      for (const band of acc.bands.slice(0, 4)) {
        const from = Math.min(1, band.from);
        const to = Math.min(1, band.to);
        if (to - from <= 1e-4) continue;
        place(bands, b, g.wall.x, base + ((from + to) / 2) * wh, g.wall.z, ww * 0.86, (to - from) * wh, wt * 1.6);
        tint(bands, b, band.colour);
        b += 1;
      }
      if (acc.overflow > 0) {
        const h = Math.min(acc.overflow, 3) * wh;
        place(overflow, o, g.wall.x, base + wh + h / 2, g.wall.z, ww * 0.86, h, wt * 1.6);
        o += 1;
        anyOverflow = true;
      }
    }
    bands.count = b;
    overflow.count = o;
    overflowWalls = o;
    commit(bands);
    commit(overflow);
    noFit.visible = anyOverflow;
    if (anyOverflow) {
      const g = lay.gpus[0];
      const top = g.wall.y - wh / 2 + wh * (1 + Math.min(run.memoryCase.fraction - 1, 3));
      noFit.position.set((lay.parts.gpus.min[0] + lay.parts.gpus.max[0]) / 2, top + 0.6, g.wall.z);
    }
  }

  return {
    object: group,
    update(frame) {
      updateMemory(frame.run);
      frame.debug.overflowWalls = overflowWalls;
      frame.debug.memoryBands = bands.count;
      return false;
    },
    dispose() {
      hatchTex.dispose();
      wallTex.dispose();
      disposeTree(group);
    },
  };
}
