// Part 2, the data loaders: CPU workers and their prefetch queues.
//
// The queue slots fill from step.loader.queue_depth / queue_capacity: that many batches were
// ready when the GPUs asked. During the data phase a batch leaves the queue for the GPUs. When
// the GPUs had to wait (loader.waited) the empty slots are hatched grey, "waiting".

import * as THREE from 'three';
import { commit, disposeTree, hatchTexture, instanced, place, tag, tint } from '../util.js';

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  const cpus = instanced(
    new THREE.BoxGeometry(1.6, 1.1, 1.1),
    new THREE.MeshLambertMaterial({ color: palette.loader }),
    lay.loaders.length,
    'loaders',
  );
  // The CPU's chip on top, unlit so it reads as active when the loader works.
  const chips = instanced(
    new THREE.BoxGeometry(0.7, 0.05, 0.6),
    new THREE.MeshBasicMaterial({ color: '#ffffff' }),
    lay.loaders.length,
    'loaders',
  );
  lay.loaders.forEach((l, i) => {
    place(cpus, i, l.x, l.y, l.z);
    place(chips, i, l.x, l.y + 0.58, l.z);
    tint(chips, i, palette.chassis);
  });
  cpus.count = chips.count = lay.loaders.length;
  commit(cpus);
  commit(chips);

  const slots = instanced(
    new THREE.BoxGeometry(0.42, 0.42, 0.7),
    new THREE.MeshLambertMaterial({ color: '#ffffff' }),
    lay.slots.length,
    'loaders',
  );
  const hatch = hatchTexture('#ffffff', 12, 4);
  const waitMarks = instanced(
    new THREE.BoxGeometry(0.44, 0.44, 0.72),
    new THREE.MeshBasicMaterial({ color: palette.waiting, map: hatch, transparent: true, depthWrite: false }),
    lay.slots.length,
    'loaders',
  );
  // A batch in flight from the queue to the GPU servers.
  const batch = instanced(
    new THREE.BoxGeometry(0.5, 0.5, 0.8),
    new THREE.MeshBasicMaterial({ color: palette.data }),
    lay.loaders.length,
    'loaders',
  );
  lay.slots.forEach((s, i) => place(slots, i, s.x, s.y, s.z));
  slots.count = lay.slots.length;
  group.add(cpus, chips, slots, waitMarks, batch);
  tag(group, 'loaders');
  scene.add(group);

  const firstGpu = lay.gpus[0] || { x: 0, y: 0.6, z: 0 };
  let lastKey = '';

  return {
    object: group,
    update(frame) {
      const pal = frame.palette;
      const ld = frame.step?.loader;
      const perLoader = lay.slots.length / Math.max(1, lay.loaders.length);
      const cap = ld?.queue_capacity || lay.slots.length;
      const depth = ld ? Math.round((ld.queue_depth / Math.max(1, cap)) * lay.slots.length) : 0;
      const on = frame.phase === 'data' && frame.signal;
      const key = `${depth}|${ld?.waited}|${on}|${pal.theme}|${on ? frame.phaseT.toFixed(2) : ''}`;
      if (key === lastKey) return on;
      lastKey = key;
      // Fill slots nearest the GPUs first, across the loaders in turn.
      let w = 0;
      lay.slots.forEach((s, i) => {
        const order = (perLoader - 1 - s.slot) * lay.loaders.length + s.loader;
        const full = order < depth;
        tint(slots, i, full ? pal.data : pal.slotEmpty);
        if (!full && ld?.waited) place(waitMarks, w++, s.x, s.y, s.z);
      });
      waitMarks.count = w;
      lay.loaders.forEach((l, i) => tint(chips, i, on ? pal.data : pal.chassis));
      let b = 0;
      if (on && !frame.reduced) {
        const t = frame.phaseT;
        const last = lay.slots[lay.slots.length - 1];
        const x = last.x + (firstGpu.x - 1 - last.x) * t;
        place(batch, b++, x, 0.5 + Math.sin(Math.PI * t) * 1.2, last.z + (firstGpu.z - last.z) * t);
      }
      batch.count = b;
      commit(slots);
      commit(waitMarks);
      commit(chips);
      commit(batch);
      return on;
    },
    dispose() {
      hatch.dispose();
      disposeTree(group);
    },
  };
}
