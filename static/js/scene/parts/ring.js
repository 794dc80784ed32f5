// Part 5, the all-reduce ring: a solid track along every hop, arrowheads that say which way
// the ring turns, and light-blue pulses with a trailing streak hopping GPU to GPU.
//
// Each hop follows its real route from the layout: a short arc inside a server over NVLink,
// up to the leaf and down between servers on one leaf, and leaf -> spine -> leaf between
// leaves. The track is drawn as thin tubes with real thickness (one InstancedMesh for all
// segments), dim at rest and bright while the all-reduce runs (brighter and thicker in the
// projector theme), so it reads on a washed-out projector. The step's ring has 2 x (G - 1)
// passes; in every pass every GPU sends one chunk to its neighbour at the same time, so all
// hops run together, pass after pass. Pulses move at a constant speed along a hop; the number
// of passes drawn is capped so a pass is never shorter than a readable moment (the caption and
// HUD give the real count). With reduced motion the track simply lights up while the
// all-reduce runs. While a failure is staged, the hops into and out of the dead GPU turn red:
// the ring is broken there.

import * as THREE from 'three';
import { aimY, commit, disposeTree, instanced, place, placeSegment, pointAlong, tag } from '../util.js';

const MAX_DRAWN_PASSES = 6;
const MAX_DRAWN_PASSES_SLOW = 10;
// Track tube radius in world units (a GPU package is 0.9 wide).
const TRACK_R = { default: 0.055, projector: 0.085 };
const PULSE_R = { default: 0.26, projector: 0.32 };
// How far the track's colour sits from the background at rest and while lit (0 = background).
const TRACK_REST = { default: 0.42, projector: 0.55 };
const TRACK_LIT = { default: 1.0, projector: 1.0 };
const TAIL = 1.1; // streak length behind a pulse

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const theme = palette.theme === 'projector' ? 'projector' : 'default';
  const group = new THREE.Group();
  const paths = lay.ringPaths;
  const radius = TRACK_R[theme];

  // The track: every hop's route as tubes, one instance per straight piece.
  const segs = []; // [{path index, a, b}]
  paths.forEach((p, pi) => {
    for (let i = 1; i < p.points.length; i++) segs.push({ pi, a: p.points[i - 1], b: p.points[i] });
  });
  const track = instanced(
    new THREE.CylinderGeometry(1, 1, 1, 10, 1, true),
    new THREE.MeshBasicMaterial({ color: '#ffffff' }),
    segs.length,
    'ring',
  );
  // A unit-radius cylinder scaled by the radius: the tube is 2 x radius thick.
  segs.forEach((s, i) => placeSegment(track, i, s.a, s.b, radius));
  track.count = segs.length;
  // Joints: a small ball where two pieces of a route meet, so bends stay solid.
  const joints = instanced(new THREE.SphereGeometry(1, 10, 6), new THREE.MeshBasicMaterial({ color: '#ffffff' }), segs.length, 'ring');
  let nj = 0;
  for (const p of paths) {
    for (let i = 1; i < p.points.length - 1; i++) {
      const q = p.points[i];
      place(joints, nj++, q[0], q[1], q[2], radius, radius, radius);
    }
  }
  joints.count = nj;

  // One arrowhead per hop, at its middle, pointing the way the chunks travel.
  const arrows = instanced(new THREE.ConeGeometry(1, 1, 12), new THREE.MeshBasicMaterial({ color: '#ffffff' }), paths.length, 'ring');
  const at = [0, 0, 0];
  const ahead = [0, 0, 0];
  const q = new THREE.Quaternion();
  const ar = radius * 3.2;
  paths.forEach((p, i) => {
    const mid = p.length * 0.5;
    pointAlong(p.points, mid, at);
    pointAlong(p.points, mid + 0.05, ahead);
    aimY(ahead[0] - at[0], ahead[1] - at[1], ahead[2] - at[2], q);
    place(arrows, i, at[0], at[1], at[2], ar, ar * 2.2, ar, q);
  });
  arrows.count = paths.length;

  // The longest hop decides the pulse speed, so every pulse moves at the same constant speed.
  const longest = paths.reduce((a, p) => Math.max(a, p.length), 0.001);
  const pr = PULSE_R[theme];
  const pulses = instanced(new THREE.SphereGeometry(pr, 16, 10), new THREE.MeshBasicMaterial({ color: palette.allreduce }), paths.length, 'ring');
  // The streak: a cone from the pulse back along where it came from, so the direction of
  // travel reads even in a still picture.
  const tails = instanced(
    new THREE.CylinderGeometry(0.12, 1, 1, 10, 1, true),
    new THREE.MeshBasicMaterial({ color: palette.allreduce, transparent: true, opacity: 0.55, depthWrite: false }),
    paths.length,
    'ring',
  );
  group.add(track, joints, arrows, tails, pulses);
  tag(group, 'ring');
  scene.add(group);

  const bg = new THREE.Color(palette.background);
  const blue = new THREE.Color(palette.allreduce);
  const broken = new THREE.Color(palette.failure);
  const c = new THREE.Color();
  const behind = [0, 0, 0];
  const sending = new Uint8Array(paths.length);
  let passes = 2 * Math.max(1, paths.length - 1);
  let lastKey = '';

  function colourTrack(level, deadGpu) {
    c.copy(bg).lerp(blue, level);
    for (let i = 0; i < segs.length; i++) {
      const p = paths[segs[i].pi];
      track.setColorAt(i, deadGpu !== null && (p.src === deadGpu || p.dst === deadGpu) ? broken : c);
    }
    let j = 0;
    for (const p of paths) {
      for (let i = 1; i < p.points.length - 1; i++) {
        joints.setColorAt(j++, deadGpu !== null && (p.src === deadGpu || p.dst === deadGpu) ? broken : c);
      }
    }
    for (let i = 0; i < paths.length; i++) {
      const p = paths[i];
      arrows.setColorAt(i, deadGpu !== null && (p.src === deadGpu || p.dst === deadGpu) ? broken : c);
    }
    commit(track);
    commit(joints);
    commit(arrows);
  }

  return {
    object: group,
    update(frame) {
      frame.debug.ringSegments = track.count;
      frame.debug.ringRadius = radius;
      frame.debug.ringArrows = arrows.count;
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
      const dead = frame.failure?.dead ? frame.failure.gpu : null;
      const key = `${active > 0}|${dead}`;
      if (key !== lastKey) {
        lastKey = key;
        colourTrack(active ? TRACK_LIT[theme] : TRACK_REST[theme], dead);
      }
      frame.debug.ringBroken = dead !== null;
      if (!active) {
        pulses.count = 0;
        tails.count = 0;
        frame.debug.pulses = 0;
        return false;
      }
      frame.debug.ringLit = true;
      if (frame.reduced) {
        // Reduced motion: the lit track is the signal; no moving pulses.
        pulses.count = 0;
        tails.count = 0;
        frame.debug.pulses = 0;
        return false;
      }
      // The ring's passes all look alike; a few laps are drawn over the ring's share of the
      // step so each stays a readable moment (the caption and HUD give the real count).
      const cap = frame.slow ? MAX_DRAWN_PASSES_SLOW : MAX_DRAWN_PASSES;
      const drawn = Math.max(1, Math.min(passes, cap));
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
        pointAlong(p.points, d, at);
        place(pulses, count, at[0], at[1], at[2]);
        const back = Math.max(0, d - TAIL);
        if (d - back > 0.05) {
          pointAlong(p.points, back, behind);
          // +y (the cone's narrow top) points back along the route: wide at the pulse.
          placeSegment(tails, count, at, behind, pr * 0.85);
        } else {
          place(tails, count, at[0], at[1], at[2], 0, 0, 0);
        }
        count += 1;
      }
      pulses.count = count;
      tails.count = count;
      commit(pulses);
      commit(tails);
      frame.debug.pulses = count;
      return true;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
