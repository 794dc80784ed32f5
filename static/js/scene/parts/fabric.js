// Part 4, the network fabric: a leaf switch over each group of servers, spine switches
// joining every leaf, and the cables between them.
//
// Cables are instanced thin boxes stretched between their two ends (one draw call for all of
// them). A switch lights up while the all-reduce is sending hops through it; E (exploded)
// lifts the tiers apart so the wiring can be read.

import * as THREE from 'three';
import { commit, disposeTree, instanced, place, placeSegment, tag, tint } from '../util.js';

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  const [lw, lh, ld] = lay.dims.leaf;
  const [sw, sh, sd] = lay.dims.spine;
  const switches = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshLambertMaterial({ color: '#ffffff' }),
    lay.leaves.length + lay.spines.length,
    'fabric',
  );
  // Port lights along the front of each switch, unlit material so they read as LEDs.
  const leds = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshBasicMaterial({ color: '#ffffff' }),
    lay.leaves.length + lay.spines.length,
    'fabric',
  );
  const list = [
    ...lay.leaves.map((l) => ({ kind: 'leaf', id: l.id, x: l.x, y: l.y, z: l.z, w: lw, h: lh, d: ld })),
    ...lay.spines.map((s) => ({ kind: 'spine', id: s.id, x: s.x, y: s.y, z: s.z, w: sw, h: sh, d: sd })),
  ];
  list.forEach((s, i) => {
    place(switches, i, s.x, s.y, s.z, s.w, s.h, s.d);
    tint(switches, i, palette.switch);
    place(leds, i, s.x, s.y, s.z + s.d / 2 + 0.01, s.w * 0.8, 0.09, 0.02);
    tint(leds, i, palette.switchLit);
  });
  switches.count = leds.count = list.length;
  commit(switches);
  commit(leds);

  const cables = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshLambertMaterial({ color: palette.cable }),
    lay.cables.length,
    'fabric',
  );
  lay.cables.forEach((c, i) => placeSegment(cables, i, c.from, c.to, c.kind === 'spine' ? 0.07 : 0.05));
  cables.count = lay.cables.length;
  commit(cables);

  group.add(switches, leds, cables);
  tag(group, 'fabric');
  scene.add(group);

  // Which switches the ring actually crosses: they light while the all-reduce runs.
  const used = new Set();
  for (const r of ctx.topology.ring_links || []) for (const p of r.path || []) used.add(p);
  let lastKey = '';

  return {
    object: group,
    update(frame) {
      const on = frame.phase === 'allreduce';
      const key = `${on}|${frame.palette.theme}`;
      if (key === lastKey) return false;
      lastKey = key;
      list.forEach((s, i) => {
        const busy = on && used.has(`${s.kind}:${s.id}`);
        tint(leds, i, busy ? frame.palette.allreduce : frame.palette.switchLit);
      });
      commit(leds);
      return false;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
