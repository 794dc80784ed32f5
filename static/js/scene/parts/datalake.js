// Part 1, the data lake: a shallow pool of stored text shards.
//
// During the data phase a few shards lift out and travel to the loaders (data colour), the
// picture of text being read from storage. With reduced motion they light up in place.

import * as THREE from 'three';
import { commit, disposeTree, instanced, place, tag, tint } from '../util.js';

const MOVERS = 6;

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  const L = lay.lake;
  const pool = new THREE.Mesh(
    new THREE.CylinderGeometry(L.r, L.r + 0.15, 0.5, 48),
    new THREE.MeshLambertMaterial({ color: palette.lake }),
  );
  pool.position.set(L.x, 0.25, L.z);
  const rim = new THREE.Mesh(
    new THREE.TorusGeometry(L.r + 0.05, 0.08, 8, 64),
    new THREE.MeshLambertMaterial({ color: palette.lakeRim }),
  );
  rim.rotation.x = Math.PI / 2;
  rim.position.set(L.x, 0.5, L.z);
  const shards = instanced(
    new THREE.BoxGeometry(0.55, 0.22, 0.7),
    new THREE.MeshLambertMaterial({ color: '#ffffff' }),
    lay.shards.length + MOVERS,
    'datalake',
  );
  lay.shards.forEach((s, i) => {
    place(shards, i, s.x, s.y, s.z);
    tint(shards, i, palette.lakeRim);
  });
  shards.count = lay.shards.length;
  commit(shards);
  group.add(pool, rim, shards);
  tag(group, 'datalake');
  scene.add(group);

  const target = lay.loaders[0] || { x: L.x + 6, y: 0.6, z: L.z };
  let idle = true;

  return {
    object: group,
    update(frame) {
      const pal = frame.palette;
      const on = frame.phase === 'data' && frame.signal;
      if (!on && idle) return false;
      const base = lay.shards.length;
      for (let i = 0; i < base; i++) tint(shards, i, on && i % 3 === frame.step?.step % 3 ? pal.data : pal.lakeRim);
      if (!on) {
        shards.count = base;
        idle = true;
        commit(shards);
        return false;
      }
      idle = false;
      let n = base;
      if (!frame.reduced) {
        for (let k = 0; k < MOVERS; k++) {
          const t = Math.min(1, Math.max(0, frame.phaseT * 1.4 - k * 0.07));
          if (t <= 0 || t >= 1) continue;
          const src = lay.shards[(k * 5) % base];
          const dst = lay.loaders[k % lay.loaders.length] || target;
          const x = src.x + (dst.x - 0.8 - src.x) * t;
          const z = src.z + (dst.z - src.z) * t;
          const y = src.y + Math.sin(Math.PI * t) * 1.4;
          place(shards, n, x, y, z, 0.7, 0.7, 0.7);
          tint(shards, n, pal.data);
          n += 1;
        }
      }
      shards.count = n;
      commit(shards);
      return true;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
