// Tokens crossing to their experts (part of part 3, the GPU servers). In a mixture-of-experts
// layer a router picks experts for every token, and with expert parallelism those experts
// live on other GPUs of the group: the tokens' numbers travel there and the results come back
// (an all-to-all, "all_to_all" in the trace, once on the way up and again on the way down).
// The trace gives it as rounds of pairwise exchange; in round k the GPU at position i sends
// to position i + k. Each sending pair is drawn as a short train of small cubes, in the
// experts' colour, travelling the real route to the peer over the round's time on screen.
// One InstancedMesh for every token (hidden when none travel), so draw calls do not grow with
// GPUs. Reduced motion: the tokens stand halfway, appearing and going with each round.

import * as THREE from 'three';
import { route } from '../layout.js';
import { commit, disposeTree, instanced, place, pointAlong, tag } from '../util.js';

const A2A_KIND = 'all_to_all';
const TRAIN = 3; // cubes per sending pair
const GAP = 0.28; // world units between the cubes of a train
const SIZE = { default: 0.17, projector: 0.22 };

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const theme = palette.theme === 'projector' ? 'projector' : 'default';
  const cap = Math.max(8, lay.gpus.length * TRAIN * 2);
  const group = new THREE.Group();
  const s = SIZE[theme];
  const tokens = instanced(new THREE.BoxGeometry(s, s, s), new THREE.MeshBasicMaterial({ color: palette.experts }), cap, 'gpus');
  group.add(tokens);
  tag(group, 'gpus');
  scene.add(group);
  tokens.visible = false;
  const routes = new Map();
  const routeFor = (a, b, link) => {
    const key = `${a}>${b}`;
    if (!routes.has(key)) routes.set(key, route(lay, a, b, link));
    return routes.get(key);
  };
  const at = [0, 0, 0];
  const spin = new THREE.Quaternion().setFromEuler(new THREE.Euler(0.6, 0.8, 0));

  return {
    object: group,
    update(frame) {
      let n = 0;
      let pairs = 0;
      if (frame.active && frame.signal && frame.view && frame.block?.kinds?.has(A2A_KIND)) {
        for (const rec of frame.view.recordsAt(frame.simT, new Set([A2A_KIND]))) {
          for (const g of rec.a2a.gpus) {
            const e = frame.view.eventOf(rec, g, frame.simT);
            if (!e || !(e.bytes > 0) || e.peer === g) continue;
            const path = routeFor(g, e.peer, e.link);
            if (!path) continue;
            pairs += 1;
            const u = frame.reduced ? 0.5 : frame.progressOf(e.t0, e.t0 + e.dur);
            const lead = u * (path.length + GAP * (TRAIN - 1));
            for (let k = 0; k < TRAIN && n < cap; k++) {
              const d = lead - k * GAP;
              if (d < 0 || d > path.length) continue;
              pointAlong(path.points, d, at);
              place(tokens, n++, at[0], at[1], at[2], 1, 1, 1, spin);
            }
          }
        }
      }
      tokens.count = n;
      tokens.visible = n > 0;
      if (n) commit(tokens);
      frame.debug.tokens = n;
      frame.debug.tokenPairs = pairs;
      return n > 0;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
