// Part 7, checkpoints: a stack of disks on a plinth, one per checkpoint kept on disk.
//
// The stack grows when checkpoint_saved arrives (the newest disk glows green, then settles);
// on a rollback (restored) the whole stack glows once, slowly, to show the run reading back
// from it. Nothing flashes faster than once a second.

import * as THREE from 'three';
import { commit, disposeTree, instanced, place, tag, tint } from '../util.js';

const GLOW_S = 1.6;

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
  group.add(plinth, disks);
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
  let lastKey = '';

  return {
    object: group,
    update(frame) {
      const pal = frame.palette;
      const list = (frame.run.checkpoints || []).filter((c) => c.ok !== false);
      const n = Math.min(C.maxDisks, list.length);
      // Empty places up to the number the run keeps, so the stack's purpose reads before the
      // first save.
      const keep = Math.min(C.maxDisks, frame.run.hello?.config?.keep_checkpoints ?? 3);
      const shown = Math.max(n, keep);
      const now = frame.time;
      const sinceSave = now - savedAt;
      const sinceRestore = now - restoredAt;
      const saving = sinceSave < GLOW_S;
      const restoring = sinceRestore < GLOW_S;
      const key = `${n}|${shown}|${pal.theme}|${saving ? sinceSave.toFixed(2) : ''}|${restoring ? sinceRestore.toFixed(2) : ''}`;
      if (key === lastKey) return saving || restoring;
      lastKey = key;
      base.set(pal.saved).multiplyScalar(0.55);
      for (let i = 0; i < shown; i++) {
        place(disks, i, C.x, 0.3 + h / 2 + i * (h + 0.08), C.z);
        if (i >= n) {
          tint(disks, i, pal.slotEmpty);
          continue;
        }
        let k = 0;
        if (restoring) k = Math.sin(Math.PI * (sinceRestore / GLOW_S));
        if (saving && i === n - 1) k = Math.max(k, 1 - sinceSave / GLOW_S);
        glow.copy(base).lerp(new THREE.Color(pal.saved).offsetHSL(0, 0, 0.18), frame.reduced ? (k > 0 ? 1 : 0) : k);
        disks.setColorAt(i, glow);
      }
      disks.count = shown;
      commit(disks);
      return saving || restoring;
    },
    dispose() {
      unsub();
      disposeTree(group);
    },
  };
}
