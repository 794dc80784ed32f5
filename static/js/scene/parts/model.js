// Part 6, the model: its layers as a stack of slabs, with a loupe of 16 real weights.
//
// The slabs are the embedding, each transformer block and the output head. The forward pass
// climbs them in amber, the backward pass comes down in pink; at the update the 16 sampled
// weights (probe.weights, sent every few steps) re-tone: light for positive, dark for
// negative, scaled to the largest magnitude shown. The probe's top words ("Once upon a ___")
// are drawn by the page as an HTML panel beside the scene, not in 3D, so they stay sharp.

import * as THREE from 'three';
import { commit, disposeTree, instanced, place, tag, textSprite, tint } from '../util.js';

const NEG = new THREE.Color('#1f2740');
const MID = new THREE.Color('#6c7a9c');
const POS = new THREE.Color('#f2f5ff');

export function build(ctx) {
  const { scene, layout: lay, palette, store } = ctx;
  const M = lay.model;
  const nLayer = Math.max(1, store.state.hello?.config?.n_layer ?? 2);
  const names = ['embedding', ...Array.from({ length: nLayer }, (_, i) => `block ${i + 1}`), 'head'];
  const group = new THREE.Group();
  const slabW = 3.0;
  const slabD = 2.0;
  const slabH = 0.36;
  const gap = 0.62;
  const stackX = M.x - M.w / 2 + slabW / 2;
  const stackH = names.length * slabH + (names.length - 1) * gap;
  const y0 = M.y - stackH / 2 + slabH / 2;
  const slabs = instanced(
    new THREE.BoxGeometry(slabW, slabH, slabD),
    new THREE.MeshLambertMaterial({ color: '#ffffff', emissive: '#000000' }),
    names.length,
    'model',
  );
  const edges = instanced(
    new THREE.BoxGeometry(slabW * 0.9, 0.04, 0.04),
    new THREE.MeshBasicMaterial({ color: '#ffffff' }),
    names.length,
    'model',
  );
  names.forEach((_, i) => {
    place(slabs, i, stackX, y0 + i * (slabH + gap), M.z);
    tint(slabs, i, palette.modelSlab);
    place(edges, i, stackX, y0 + i * (slabH + gap) + slabH / 2, M.z + slabD / 2);
    tint(edges, i, palette.gpuIdle);
  });
  slabs.count = edges.count = names.length;
  commit(slabs);
  commit(edges);

  // The loupe: 16 weights as a 4 x 4 grid of cells, standing to the right of the stack.
  const cell = 0.66;
  const gridX = M.x + M.w / 2 - 2 * cell - 0.2;
  const gridY = M.y + 0.2;
  const board = new THREE.Mesh(
    new THREE.BoxGeometry(4 * cell + 0.4, 4 * cell + 0.4, 0.12),
    new THREE.MeshLambertMaterial({ color: palette.plinth }),
  );
  board.position.set(gridX, gridY, M.z);
  const cells = instanced(
    new THREE.BoxGeometry(cell * 0.86, cell * 0.86, 0.1),
    new THREE.MeshBasicMaterial({ color: '#ffffff' }),
    16,
    'model',
  );
  for (let i = 0; i < 16; i++) {
    const c = i % 4;
    const r = Math.floor(i / 4);
    place(cells, i, gridX - 1.5 * cell + c * cell, gridY + 1.5 * cell - r * cell, M.z + 0.1);
    cells.setColorAt(i, MID);
  }
  cells.count = 16;
  commit(cells);
  // The small print grows on a projector, where 0.42 units is a few pixels from the back row.
  const big = palette.theme === 'projector';
  const caption = textSprite('16 weights', { colour: palette.text, height: big ? 0.78 : 0.42, weight: big ? 700 : 600 });
  // In front of the layer stack, so the bigger words are never half hidden by a slab.
  caption.position.set(gridX + (big ? 0.3 : 0), gridY - 2 * cell - (big ? 0.75 : 0.55), M.z + (big ? 1.1 : 0.1));
  group.add(slabs, edges, board, cells, caption);
  tag(group, 'model');
  scene.add(group);

  let lastWeights = '';
  let lastKey = '';
  const c = new THREE.Color();
  const lit = new THREE.Color();

  return {
    object: group,
    update(frame) {
      const pal = frame.palette;
      const probe = frame.run.step?.probe || null;
      const w = probe?.weights;
      if (Array.isArray(w) && w.length) {
        const sig = w.map((v) => v.toFixed(4)).join(',');
        if (sig !== lastWeights) {
          lastWeights = sig;
          const maxAbs = w.reduce((a, v) => Math.max(a, Math.abs(v)), 1e-9);
          for (let i = 0; i < 16; i++) {
            const v = (w[i] ?? 0) / maxAbs;
            c.copy(MID).lerp(v >= 0 ? POS : NEG, Math.min(1, Math.abs(v)));
            cells.setColorAt(i, c);
          }
          commit(cells);
        }
      }
      const { phase, phaseT } = frame;
      const sweeping = phase === 'forward' || phase === 'backward';
      const key = `${phase}|${sweeping ? phaseT.toFixed(2) : ''}|${pal.theme}`;
      if (key === lastKey) return false;
      lastKey = key;
      const n = names.length;
      const colour = phase === 'forward' ? pal.forward : pal.backward;
      lit.set(colour);
      for (let i = 0; i < n; i++) {
        let k = 0;
        if (sweeping) {
          // The lit band climbs (forward) or descends (backward) one slab at a time.
          const pos = phase === 'forward' ? phaseT * n : (1 - phaseT) * n;
          k = frame.reduced ? 1 : Math.max(0, 1 - Math.abs(pos - (i + 0.5)) / 1.2);
        }
        c.set(pal.modelSlab).lerp(lit, k * 0.9);
        slabs.setColorAt(i, c);
        tint(edges, i, k > 0.3 ? colour : pal.gpuIdle);
      }
      commit(slabs);
      commit(edges);
      return sweeping;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
