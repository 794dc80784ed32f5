// Tensor-parallel joins (part of part 3, the GPU servers): the GPUs of one stage each hold a
// slice of every layer, and after each slice's sum they add their partial results together
// (a small all-reduce inside the server, "tp_allreduce" in the trace). Each join is drawn
// as a short bright bridge arcing between the group's GPUs, in the tensor-parallel colour,
// with a spark running along it each way: local and brief, unlike the data-parallel ring's
// long track through the fabric.
//
// A stage joins twice per layer, so at the simulated hardware's pace the joins come thick and
// fast. A bridge therefore stays lit across short gaps between joins (HOLD_S) and for at
// least MIN_ON_S once lit: it can never flash on and off more than about twice a second. One
// InstancedMesh for all bridges and one for all sparks (hidden when nothing joins), so draw
// calls do not grow with GPUs. Reduced motion: the bridges light, the sparks stay still.

import * as THREE from 'three';
import { bezierPoints, commit, disposeTree, instanced, place, placeSegment, pointAlong, polyLength, tag } from '../util.js';

const JOIN_KIND = 'tp_allreduce';
const HOLD_S = 0.3; // a gap shorter than this keeps the bridge lit
const MIN_ON_S = 0.25;
const SPARK_PERIOD_S = 0.7; // one crossing of the bridge, at an even pace
const BRIDGE_R = { default: 0.1, projector: 0.13 };
const SPARK_R = { default: 0.14, projector: 0.17 };
const ARC_PIECES = 8;

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const theme = palette.theme === 'projector' ? 'projector' : 'default';
  const n = lay.gpus.length;
  const group = new THREE.Group();
  const colour = palette.tensor;
  const bridges = instanced(new THREE.CylinderGeometry(1, 1, 1, 10, 1, true), new THREE.MeshBasicMaterial({ color: colour }), n * 2 * ARC_PIECES, 'gpus');
  // Sparks: the join's colour, lifted towards white so they read on the bridge.
  const spark = new THREE.Color(colour).lerp(new THREE.Color('#ffffff'), 0.7);
  const sparks = instanced(new THREE.SphereGeometry(SPARK_R[theme], 12, 8), new THREE.MeshBasicMaterial({ color: spark }), n * 2, 'gpus');
  group.add(bridges, sparks);
  tag(group, 'gpus');
  scene.add(group);
  bridges.visible = sparks.visible = false;

  // A low arc just over the two packages, lower than the arcs a hand-off or the ring takes
  // inside a server, so a join reads as a bridge between neighbours.
  const byId = new Map(lay.gpus.map((g) => [g.id, g]));
  const top = lay.dims.chassisH + lay.dims.gpu[1] + 0.1;
  const arcs = new Map(); // "a-b" -> {points, length}, either way round
  const routeFor = (a, b) => {
    const key = a < b ? `${a}-${b}` : `${b}-${a}`;
    if (!arcs.has(key)) {
      const p = byId.get(Math.min(a, b));
      const q = byId.get(Math.max(a, b));
      if (!p || !q) return null;
      const lift = 0.3 + 0.08 * Math.hypot(q.x - p.x, q.z - p.z);
      const p0 = [p.x, top, p.z];
      const p3 = [q.x, top, q.z];
      const c1 = [p.x + (q.x - p.x) * 0.25, top + lift, p.z + (q.z - p.z) * 0.25];
      const c2 = [p.x + (q.x - p.x) * 0.75, top + lift, p.z + (q.z - p.z) * 0.75];
      const points = bezierPoints(p0, c1, c2, p3, ARC_PIECES);
      arcs.set(key, { points, length: polyLength(points) });
    }
    return arcs.get(key);
  };
  // Per TP group (its GPUs, as a key): {ring, litSince, lastSeen} while lit.
  const lit = new Map();
  const at = [0, 0, 0];
  let lastKey = '';

  return {
    object: group,
    update(frame) {
      const now = frame.time;
      const seen = new Set();
      if (frame.active && frame.signal && frame.view && frame.block?.kinds?.has(JOIN_KIND)) {
        for (const rec of frame.view.recordsAt(frame.simT, new Set([JOIN_KIND]))) {
          const key = rec.ring.ring.join(',');
          seen.add(key);
          const had = lit.get(key);
          if (had) had.lastSeen = now;
          else lit.set(key, { ring: rec.ring.ring, litSince: now, lastSeen: now });
        }
      }
      for (const [key, g] of lit) {
        if (seen.has(key)) continue;
        const holding = now - g.lastSeen < HOLD_S || now - g.litSince < MIN_ON_S;
        if (!holding || !frame.signal) lit.delete(key);
      }
      let b = 0;
      let s = 0;
      const radius = BRIDGE_R[frame.palette.theme === 'projector' ? 'projector' : 'default'];
      for (const { ring } of lit.values()) {
        // Each neighbouring pair of the group once (a group of two is one bridge).
        const pairs = ring.length === 2 ? [[ring[0], ring[1]]] : ring.map((a, i) => [a, ring[(i + 1) % ring.length]]);
        for (const [a, c] of pairs) {
          const path = routeFor(a, c);
          if (!path || b + path.points.length > bridges.instanceMatrix.count) continue;
          for (let i = 1; i < path.points.length; i++) placeSegment(bridges, b++, path.points[i - 1], path.points[i], radius);
          if (!frame.reduced && s + 2 <= sparks.instanceMatrix.count) {
            // Sparks cross both ways at once: each GPU sends its partial sum to the other.
            const u = (now / SPARK_PERIOD_S) % 1;
            for (const f of [u, 1 - u]) {
              pointAlong(path.points, f * path.length, at);
              place(sparks, s++, at[0], at[1], at[2]);
            }
          }
        }
      }
      bridges.count = b;
      sparks.count = s;
      bridges.visible = b > 0;
      sparks.visible = s > 0;
      const key = `${b}|${s}|${[...lit.keys()].join(';')}`;
      if (s || key !== lastKey) {
        commit(bridges);
        commit(sparks);
      }
      lastKey = key;
      frame.debug.tpJoins = lit.size;
      return lit.size > 0;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
