// Part 5, the all-reduce ring: light-blue pulses hopping GPU to GPU in ring order.
//
// Each hop follows its real route from the layout: a short arc inside a server over NVLink,
// up to the leaf and down between servers on one leaf, and leaf -> spine -> leaf between
// leaves. The step's ring has 2 x (G - 1) passes; in every pass every GPU sends one chunk to
// its neighbour at the same time, so all hops run together, pass after pass. Pulses move at a
// constant speed along a hop; the number of passes drawn is capped so a pass is never shorter
// than a readable moment (the caption and HUD give the real count). With reduced motion the
// links simply light up while the all-reduce runs.

import * as THREE from 'three';
import { commit, disposeTree, instanced, place, tag } from '../util.js';

const MAX_DRAWN_PASSES = 6;
const TRACK_IDLE = 0.16;
const TRACK_LIT = 0.5;

function pointAt(path, d, out) {
  // d in [0, path.length]
  const pts = path.points;
  let left = d;
  for (let i = 1; i < pts.length; i++) {
    const a = pts[i - 1];
    const b = pts[i];
    const seg = Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
    if (left <= seg || i === pts.length - 1) {
      const t = seg > 0 ? Math.min(1, left / seg) : 1;
      out[0] = a[0] + (b[0] - a[0]) * t;
      out[1] = a[1] + (b[1] - a[1]) * t;
      out[2] = a[2] + (b[2] - a[2]) * t;
      return out;
    }
    left -= seg;
  }
  return out;
}

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  const paths = lay.ringPaths;

  // The track: every hop's route as faint lines (one draw call), brighter while in use.
  const verts = [];
  for (const p of paths) {
    for (let i = 1; i < p.points.length; i++) verts.push(...p.points[i - 1], ...p.points[i]);
  }
  const trackGeo = new THREE.BufferGeometry();
  trackGeo.setAttribute('position', new THREE.Float32BufferAttribute(verts, 3));
  const trackMat = new THREE.LineBasicMaterial({ color: palette.allreduce, transparent: true, opacity: TRACK_IDLE });
  const track = new THREE.LineSegments(trackGeo, trackMat);

  // The longest hop decides the pulse speed, so every pulse moves at the same constant speed.
  const longest = paths.reduce((a, p) => Math.max(a, p.length), 0.001);
  const pulses = instanced(
    new THREE.SphereGeometry(0.16, 12, 8),
    new THREE.MeshBasicMaterial({ color: palette.allreduce }),
    paths.length,
    'ring',
  );
  group.add(track, pulses);
  tag(group, 'ring');
  scene.add(group);
  const at = [0, 0, 0];
  const sending = new Uint8Array(paths.length);
  let passes = 2 * Math.max(1, paths.length - 1);
  let wasOn = false;

  return {
    object: group,
    update(frame) {
      // Pulses go where the lanes say a chunk is travelling: each GPU whose event now is a
      // ring send to the next GPU on a drawn route.
      let active = 0;
      if (frame.signal && frame.block?.kinds?.has('allreduce')) {
        for (let i = 0; i < paths.length; i++) {
          const ev = frame.lane(paths[i].src);
          sending[i] = ev && ev.kind === 'allreduce' && ev.peer === paths[i].dst ? 1 : 0;
          if (sending[i]) {
            active += 1;
            passes = ev.passes || passes;
          }
        }
      }
      if (!active) {
        if (wasOn || pulses.count) {
          pulses.count = 0;
          trackMat.opacity = TRACK_IDLE;
          wasOn = false;
        }
        frame.debug.pulses = 0;
        return false;
      }
      wasOn = true;
      trackMat.opacity = TRACK_LIT;
      frame.debug.ringLit = true;
      if (frame.reduced) {
        // Reduced motion: the lit track is the signal; no moving pulses.
        pulses.count = 0;
        frame.debug.pulses = 0;
        return false;
      }
      // The ring's passes all look alike; a few laps are drawn over the ring's share of the
      // step so each stays a readable moment (the caption and HUD give the real count).
      const drawn = Math.max(1, Math.min(passes, MAX_DRAWN_PASSES));
      const t = Math.min(0.9999, frame.phaseT) * drawn;
      const within = t - Math.floor(t); // progress through the current drawn pass
      let count = 0;
      for (let i = 0; i < paths.length; i++) {
        if (!sending[i]) continue;
        const p = paths[i];
        // Constant speed: a hop of length L finishes at L / longest of the pass. A hop that
        // arrives early waits at its GPU: a pass ends when its slowest hop lands, as in a
        // real ring, where the slowest link sets the pace.
        const d = Math.min(p.length, within * longest);
        pointAt(p, d, at);
        place(pulses, count++, at[0], at[1], at[2]);
      }
      pulses.count = count;
      commit(pulses);
      frame.debug.pulses = count;
      return true;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
