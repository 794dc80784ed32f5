// Pipeline hand-offs (part of part 3, the GPU servers): a microbatch's activations climbing
// from one stage to the next in the forward pass, and its corrections coming back down in the
// backward pass. They are violet, the pipeline's colour in the HUD's time bar; which way they
// go, and the amber or pink glow of the stages at either end, tell forward from backward.
// Each of the step's point-to-point transfers ("p2p" records: a
// send on one GPU, a receive on another, beside their compute) is a capsule travelling the
// real route between the two GPUs (an arc over the board inside a server, up through the
// leaf and spine switches between servers), with a streak behind it, setting off the moment
// the send starts and arriving when the receive ends, at an even pace on screen; a transfer
// far quicker than the work beside it still takes a readable moment (MOVE_S of the step's
// own clock) to cross, so it never blinks, even if it lands a moment after the receiving
// stage has started. One InstancedMesh for all
// capsules and one for all streaks, so draw calls do not grow with GPUs; both are hidden in
// a run that hands nothing off. Reduced motion: the capsule stands still halfway along.

import * as THREE from 'three';
import { route } from '../layout.js';
import { rolesOf } from '../plan.js';
import { aimY, commit, disposeTree, instanced, place, placeSegment, pointAlong, tag } from '../util.js';

const SIZE = { default: 0.13, projector: 0.17 }; // capsule radius
const TAIL = 0.9;
const MOVE_S = 0.36; // the least time a capsule takes to cross, on the step's clock

export function build(ctx) {
  const { scene, layout: lay, palette, store } = ctx;
  const theme = palette.theme === 'projector' ? 'projector' : 'default';
  const r = SIZE[theme];
  const cap = Math.max(16, lay.gpus.length * 4);
  const group = new THREE.Group();
  const pulses = instanced(new THREE.CapsuleGeometry(r, r * 1.8, 4, 12), new THREE.MeshBasicMaterial({ color: palette.pipeline }), cap, 'gpus');
  const tails = instanced(
    new THREE.CylinderGeometry(0.1, 1, 1, 10, 1, true),
    new THREE.MeshBasicMaterial({ color: palette.pipeline, transparent: true, opacity: 0.5, depthWrite: false }),
    cap,
    'gpus',
  );
  group.add(tails, pulses);
  tag(group, 'gpus');
  scene.add(group);
  pulses.visible = tails.visible = false;

  const routes = new Map();
  const routeFor = (p) => {
    const key = `${p.src}>${p.dst}`;
    if (!routes.has(key)) routes.set(key, route(lay, p.src, p.dst, p.link));
    return routes.get(key);
  };
  let stages = null;
  const stageOf = (g) => {
    stages ??= rolesOf(store.state.hello).map((x) => x.stage);
    return stages[g];
  };
  const unsub = store.on('hello', () => {
    stages = null;
  });
  const at = [0, 0, 0];
  const ahead = [0, 0, 0];
  const behind = [0, 0, 0];
  const q = new THREE.Quaternion();

  return {
    object: group,
    update(frame) {
      let n = 0;
      let climbing = 0;
      if (frame.active && frame.signal && frame.view?.planned && frame.wallOf) {
        const now = frame.wallS;
        for (const rec of frame.view.sorted) {
          if (rec.t0 > frame.simT) break;
          if (!rec.p2p || n >= cap) continue;
          // Under way: set off already, and not yet across.
          const a = frame.wallOf(rec.t0);
          const b = Math.max(frame.wallOf(rec.t1), a + MOVE_S);
          if (now >= b) continue;
          const p = rec.p2p;
          const path = routeFor(p);
          if (!path) continue;
          // Up the pipeline (a later stage) is the forward pass's activations.
          const sa = stageOf(p.src);
          const sb = stageOf(p.dst);
          const forward = sa !== undefined && sb !== undefined && sa !== sb ? sa < sb : p.src < p.dst;
          const u = frame.reduced ? 0.5 : Math.min(1, Math.max(0, (now - a) / (b - a)));
          const d = u * path.length;
          pointAlong(path.points, d, at);
          // Pointing the way it travels (at the very end, the way it came in).
          if (d + 0.05 <= path.length) {
            pointAlong(path.points, d + 0.05, ahead);
            aimY(ahead[0] - at[0], ahead[1] - at[1], ahead[2] - at[2], q);
          } else {
            pointAlong(path.points, Math.max(0, d - 0.05), behind);
            aimY(at[0] - behind[0], at[1] - behind[1], at[2] - behind[2], q);
          }
          place(pulses, n, at[0], at[1], at[2], 1, 1, 1, q);
          const back = Math.max(0, d - TAIL);
          if (!frame.reduced && d - back > 0.05) {
            pointAlong(path.points, back, behind);
            placeSegment(tails, n, at, behind, r * 0.9);
          } else {
            place(tails, n, at[0], at[1], at[2], 0, 0, 0);
          }
          if (forward) climbing += 1;
          n += 1;
        }
      }
      pulses.count = tails.count = n;
      pulses.visible = tails.visible = n > 0;
      if (n) {
        commit(pulses);
        commit(tails);
      }
      frame.debug.handoffs = n;
      frame.debug.handoffsUp = climbing;
      frame.debug.handoffsDown = n - climbing;
      return n > 0;
    },
    dispose() {
      unsub();
      disposeTree(group);
    },
  };
}
