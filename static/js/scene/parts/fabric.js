// Part 4, the network fabric: a leaf switch over each group of servers, spine switches
// joining every leaf, and the cables between them.
//
// Cables are instanced thin boxes stretched between their two ends (one draw call for all of
// them). A switch lights up while the all-reduce is sending hops through it; E (exploded)
// lifts the tiers apart so the wiring can be read.

import * as THREE from 'three';
import { commit, disposeTree, instanced, place, tag, tint } from '../util.js';

const _a = new THREE.Vector3();
const _b = new THREE.Vector3();
const _up = new THREE.Vector3(0, 1, 0);
const _q = new THREE.Quaternion();
const _d = new THREE.Vector3();

/** Stretch a unit-tall instanced box from point a to point b. */
export function placeSegment(mesh, i, a, b, thickness) {
  _a.set(a[0], a[1], a[2]);
  _b.set(b[0], b[1], b[2]);
  _d.subVectors(_b, _a);
  const len = _d.length() || 1e-6;
  _q.setFromUnitVectors(_up, _d.divideScalar(len));
  place(mesh, i, (a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2, thickness, len, thickness, _q);
}

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
