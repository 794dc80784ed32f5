// Part 7, checkpoints: a stack of disks on a plinth, one per checkpoint kept on disk.
//
// The stack grows when checkpoint_saved arrives (the newest disk glows green, then settles).
// On a rollback the run reads back from it: while a failure is staged (frame.failure, see
// failure.js) the stack glows and the saved weights flow from it to every GPU, one packet
// per GPU along its own arc at one constant speed, the surviving GPUs first and the
// replacement as it joins. A rollback without a staged failure (say, after a restart) just
// glows once, slowly. Nothing flashes faster than once a second. With reduced motion the
// packets sit on their GPUs instead of flying.

import * as THREE from 'three';
import {
  bezierPoints,
  commit,
  disposeTree,
  instanced,
  place,
  placeSegment,
  pointAlong,
  polyLength,
  tag,
  tint,
} from '../util.js';

const GLOW_S = 1.6;
const PATH_PIECES = 10;
const FLY_HEIGHT = 4.2;

export function build(ctx) {
  const { scene, layout: lay, palette, store } = ctx;
  const C = lay.checkpoints;
  const [r, h] = C.disk;
  const group = new THREE.Group();
  const plinth = new THREE.Mesh(
    new THREE.BoxGeometry(r * 2.6, 0.3, r * 2.6),
    new THREE.MeshLambertMaterial({ color: palette.plinth }),
  );
  plinth.position.set(C.x, 0.15, C.z);
  const disks = instanced(
    new THREE.CylinderGeometry(r, r, h, 40),
    new THREE.MeshLambertMaterial({ color: '#ffffff' }),
    C.maxDisks,
    'checkpoints',
  );

  // Routes from the top of the stack over to every GPU.
  const gpus = lay.gpus;
  const n = gpus.length;
  const [, gh] = lay.dims.gpu;
  const top = [C.x, 0.3 + 3 * (h + 0.08) + 0.2, C.z];
  const routes = gpus.map((g) => {
    const pts = bezierPoints(top, [C.x - 1.5, FLY_HEIGHT, C.z], [g.x, FLY_HEIGHT + 0.6, g.z], [g.x, g.y + gh / 2 + 0.25, g.z], PATH_PIECES);
    return { points: pts, length: polyLength(pts) };
  });
  const longest = routes.reduce((a, q) => Math.max(a, q.length), 1e-3);
  const trail = instanced(
    new THREE.CylinderGeometry(1, 1, 1, 6, 1, true),
    new THREE.MeshBasicMaterial({ color: palette.saved, transparent: true, opacity: 0.5, depthWrite: false }),
    n * PATH_PIECES,
    'checkpoints',
  );
  const packets = instanced(
    new THREE.CylinderGeometry(0.3, 0.3, 0.12, 20),
    new THREE.MeshBasicMaterial({ color: '#ffffff' }),
    n,
    'checkpoints',
  );
  group.add(plinth, disks, trail, packets);
  tag(group, 'checkpoints');
  scene.add(group);

  let savedAt = -1e9;
  let restoredAt = -1e9;
  const unsub = store.on('event', (e) => {
    const now = performance.now() / 1000;
    if (e?.kind === 'checkpoint_saved') savedAt = now;
    if (e?.kind === 'restored') restoredAt = now;
  });
  const base = new THREE.Color();
  const glow = new THREE.Color();
  const lightGreen = new THREE.Color();
  const at = [0, 0, 0];
  let lastKey = '';
  let trailShown = null;

  /** Packets for the GPUs in `which` at progress p (0..1) along their routes. */
  function fly(which, p, reduced, into) {
    let k = into;
    for (const i of which) {
      const q = routes[i];
      // One speed for all: the longest route's packet takes the whole beat, the others
      // leave later so that all land together.
      const d = reduced ? q.length : q.length - (1 - p) * longest;
      if (d < 0) continue;
      pointAlong(q.points, Math.min(d, q.length), at);
      place(packets, k++, at[0], at[1], at[2]);
    }
    return k;
  }

  function showTrail(which) {
    let k = 0;
    for (const i of which) {
      const q = routes[i];
      for (let j = 1; j < q.points.length; j++) placeSegment(trail, k++, q.points[j - 1], q.points[j], 0.035);
    }
    trail.count = k;
    commit(trail);
  }

  return {
    object: group,
    update(frame) {
      const pal = frame.palette;
      const list = (frame.run.checkpoints || []).filter((c) => c.ok !== false);
      const count = Math.min(C.maxDisks, list.length);
      // Empty places up to the number the run keeps, so the stack's purpose reads before the
      // first save.
      const keep = Math.min(C.maxDisks, frame.run.hello?.config?.keep_checkpoints ?? 3);
      const shown = Math.max(count, keep);
      const now = frame.time;
      const sinceSave = now - savedAt;
      const sinceRestore = now - restoredAt;
      const staged = frame.failure;
      const saving = sinceSave < GLOW_S;
      const reloading = staged && (staged.reload !== null || staged.rejoin !== null);
      const restoring = !staged && sinceRestore < GLOW_S;
      const key = `${count}|${shown}|${pal.theme}|${frame.reduced}|${saving ? sinceSave.toFixed(2) : ''}|${restoring ? sinceRestore.toFixed(2) : ''}|${reloading ? `${staged.reload}|${staged.rejoin}` : ''}`;
      if (key === lastKey) {
        frame.debug.reloading = packets.count;
        return saving || restoring || Boolean(reloading);
      }
      lastKey = key;
      base.set(pal.saved).multiplyScalar(0.55);
      lightGreen.set(pal.saved).offsetHSL(0, 0, 0.18);
      for (let i = 0; i < shown; i++) {
        place(disks, i, C.x, 0.3 + h / 2 + i * (h + 0.08), C.z);
        if (i >= count) {
          tint(disks, i, pal.slotEmpty);
          continue;
        }
        let k = 0;
        if (restoring) k = Math.sin(Math.PI * (sinceRestore / GLOW_S));
        if (reloading) k = 1;
        if (saving && i === count - 1) k = Math.max(k, 1 - sinceSave / GLOW_S);
        glow.copy(base).lerp(lightGreen, frame.reduced ? (k > 0 ? 1 : 0) : k);
        disks.setColorAt(i, glow);
      }
      disks.count = shown;
      commit(disks);

      // The weights flowing back: to the surviving GPUs while the run reloads, then to the
      // replacement as it joins.
      let np = 0;
      const trailFor = [];
      if (reloading) {
        const survivors = [];
        let joiner = -1;
        gpus.forEach((g, i) => (g.id === staged.gpu ? (joiner = i) : survivors.push(i)));
        if (staged.reload !== null) {
          np = fly(survivors, staged.reload, frame.reduced, np);
          trailFor.push(...survivors);
        }
        if (staged.rejoin !== null && joiner >= 0) {
          np = fly([joiner], staged.rejoin, frame.reduced, np);
          trailFor.push(joiner);
        }
        for (let i = 0; i < np; i++) tint(packets, i, pal.saved);
      }
      packets.count = np;
      commit(packets);
      const trailKey = trailFor.join(',');
      if (trailKey !== trailShown) {
        trailShown = trailKey;
        if (trailFor.length) showTrail(trailFor);
        else trail.count = 0;
      }
      frame.debug.reloading = np;
      return saving || restoring || Boolean(reloading);
    },
    dispose() {
      unsub();
      disposeTree(group);
    },
  };
}
