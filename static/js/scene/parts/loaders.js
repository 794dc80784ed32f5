// Part 2, the data loaders: CPU workers, their prefetch queues, and the batch being dealt
// out to the GPUs.
//
// The queue slots fill from step.loader.queue_depth / queue_capacity: that many batches were
// ready when the GPUs asked. During the data block the batch at the head of the queue is
// dealt out: one slice per GPU, each a different part of the batch, each travelling along its
// own visible path at the same constant speed, so that they all land as the forward pass
// begins (the farthest GPU's slice leaves first). All slices are one InstancedMesh, all path
// pieces another. When the GPUs had to wait (loader.waited) the empty slots are hatched grey
// and the slices leave late, once the batch is ready. With reduced motion the slices simply
// sit on their GPUs during the data block. While a stalled-loader fault acts on the step
// (ui/faults.js) the queue is drawn run dry: every slot empty and hatched.

import * as THREE from 'three';
import { activeFaults } from '../../store.js';
import {
  bezierPoints,
  commit,
  disposeTree,
  hatchTexture,
  instanced,
  place,
  placeSegment,
  pointAlong,
  polyLength,
  tag,
  tint,
} from '../util.js';

const PATH_PIECES = 10;
const FLY_HEIGHT = 3.6; // above the memory walls, below the leaf switches
const TRAVEL_END = 0.94; // slices land just before the data block ends
const WAITED_START = 0.45; // a batch that was not ready leaves this late in the block

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
  lay.slots.forEach((s, i) => place(slots, i, s.x, s.y, s.z));
  slots.count = lay.slots.length;

  // The deal: from the head of the queue, up over the racks and down onto each GPU.
  const gpus = lay.gpus;
  const n = gpus.length;
  const headX = lay.slots.reduce((a, s) => Math.max(a, s.x), -Infinity);
  const midZ = lay.loaders.reduce((a, l) => a + l.z, 0) / Math.max(1, lay.loaders.length);
  const start = [headX + 0.45, 0.55, midZ];
  const [, gh] = lay.dims.gpu;
  const routes = gpus.map((g) => {
    const end = [g.x, g.y + gh / 2 + 0.2, g.z];
    const pts = bezierPoints(
      start,
      [start[0] + 2.2, FLY_HEIGHT, start[2]],
      [g.x, FLY_HEIGHT + 0.6, g.z],
      end,
      PATH_PIECES,
    );
    return { points: pts, length: polyLength(pts) };
  });
  const longest = routes.reduce((a, r) => Math.max(a, r.length), 1e-3);
  const trail = instanced(
    new THREE.CylinderGeometry(1, 1, 1, 6, 1, true),
    new THREE.MeshBasicMaterial({ color: '#ffffff', transparent: true, opacity: 0.55, depthWrite: false }),
    n * PATH_PIECES,
    'loaders',
  );
  let k = 0;
  for (const r of routes) {
    for (let i = 1; i < r.points.length; i++) placeSegment(trail, k++, r.points[i - 1], r.points[i], 0.03);
  }
  trail.count = 0;
  commit(trail);
  // A slice: a flat card of text, one per GPU.
  const slices = instanced(new THREE.BoxGeometry(0.5, 0.12, 0.62), new THREE.MeshBasicMaterial({ color: '#ffffff' }), n, 'loaders');

  group.add(cpus, chips, slots, waitMarks, trail, slices);
  tag(group, 'loaders');
  scene.add(group);

  const at = [0, 0, 0];
  const c = new THREE.Color();
  let lastKey = '';
  let lastMoving = 0;
  let shownTheme = '';

  return {
    object: group,
    update(frame) {
      const pal = frame.palette;
      const ld = frame.step?.loader;
      const perLoader = lay.slots.length / Math.max(1, lay.loaders.length);
      const cap = ld?.queue_capacity || lay.slots.length;
      const stalled = activeFaults(frame.run?.faults, frame.step?.step).some((f) => f.kind === 'data_stall');
      const depth = ld && !stalled ? Math.round((ld.queue_depth / Math.max(1, cap)) * lay.slots.length) : 0;
      const on = frame.phase === 'data' && frame.signal;
      const waited = Boolean(ld?.waited) || stalled;
      frame.debug.loaderStalled = stalled ? 1 : 0;
      const key = `${depth}|${waited}|${on}|${pal.theme}|${frame.reduced}|${on ? frame.phaseT.toFixed(3) : ''}`;
      if (key === lastKey) {
        frame.debug.slices = on ? slices.count : 0;
        frame.debug.slicesMoving = on ? lastMoving : 0;
        return on;
      }
      lastKey = key;
      if (shownTheme !== pal.theme) {
        shownTheme = pal.theme;
        c.set(pal.data).lerp(new THREE.Color(pal.background), 0.35);
        for (let i = 0; i < trail.instanceMatrix.count; i++) trail.setColorAt(i, c);
        for (let i = 0; i < n; i++) tint(slices, i, pal.data);
        commit(trail);
        commit(slices);
      }
      // Fill slots nearest the GPUs first, across the loaders in turn.
      let w = 0;
      lay.slots.forEach((s, i) => {
        const order = (perLoader - 1 - s.slot) * lay.loaders.length + s.loader;
        const full = order < depth;
        tint(slots, i, full ? pal.data : pal.slotEmpty);
        if (!full && waited) place(waitMarks, w++, s.x, s.y, s.z);
      });
      waitMarks.count = w;
      lay.loaders.forEach((l, i) => tint(chips, i, on ? pal.data : pal.chassis));

      let drawn = 0;
      let moving = 0;
      if (on) {
        const t = frame.phaseT;
        // The deal runs from t0 to TRAVEL_END of the block at one speed for every slice:
        // a slice on a route of length L leaves when the longest route's slice has L to go.
        const t0 = waited ? WAITED_START : 0.04;
        const span = TRAVEL_END - t0;
        for (let i = 0; i < n; i++) {
          const r = routes[i];
          let d;
          if (frame.reduced) d = r.length; // reduced motion: the slice is simply there
          else {
            const leave = t0 + span * (1 - r.length / longest);
            d = ((t - leave) / span) * longest;
          }
          if (d < 0) {
            // Still in the queue, stacked at its head (a batch not yet ready is not drawn).
            if (waited && t < t0) continue;
            place(slices, drawn++, start[0], start[1] + Math.min(i, 7) * 0.13, start[2]);
            continue;
          }
          pointAlong(r.points, Math.min(d, r.length), at);
          place(slices, drawn++, at[0], at[1], at[2]);
          if (d < r.length) moving += 1;
        }
      }
      slices.count = drawn;
      trail.count = on ? n * PATH_PIECES : 0;
      commit(slots);
      commit(waitMarks);
      commit(chips);
      commit(slices);
      lastMoving = moving;
      frame.debug.slices = drawn;
      frame.debug.slicesMoving = moving;
      return on;
    },
    dispose() {
      hatch.dispose();
      disposeTree(group);
    },
  };
}
