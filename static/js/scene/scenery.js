// What stands in the scene: the lights, the floor and the parts (the seven numbered ones plus
// what is drawn on and between the GPUs: memory walls, the plan's roles, pipeline hand-offs,
// tensor-parallel joins, tokens on their way to experts, and the placement overlay), each
// part built by its own module from its spec. A new layout, palette or plan rebuilds them all.

import * as THREE from 'three';
import { buildFloor, disposeFloor } from './floor.js';
import * as checkpoints from './parts/checkpoints.js';
import * as datalake from './parts/datalake.js';
import * as fabric from './parts/fabric.js';
import * as gpus from './parts/gpus.js';
import * as handoffs from './parts/handoffs.js';
import * as joins from './parts/joins.js';
import * as loaders from './parts/loaders.js';
import * as model from './parts/model.js';
import * as placement from './parts/placement.js';
import * as ring from './parts/ring.js';
import * as roles from './parts/roles.js';
import * as tokens from './parts/tokens.js';
import * as walls from './parts/walls.js';

const PART_MODULES = {
  datalake, loaders, gpus, roles, walls, fabric, ring, handoffs, joins, tokens, model, checkpoints, placement,
};

export function createScenery(scene, { spec, store, requestRender }) {
  // One key light and a soft ambient: flat, calm shading; activity shows as emissive glow.
  const key = new THREE.DirectionalLight(0xffffff, 2.4);
  key.position.set(-20, 40, 30);
  scene.add(new THREE.HemisphereLight(0xd6e0ff, 0x1a2233, 1.9), key);

  let built = {};
  let floor = null;
  const parts = () => Object.values(built);

  function clear() {
    for (const p of parts()) p.dispose();
    built = {};
  }

  return {
    /** Build (or rebuild) everything for this layout, palette and cluster topology. */
    build({ layout, palette, topology }) {
      clear();
      scene.background = new THREE.Color(palette.background);
      disposeFloor(scene, floor);
      floor = buildFloor(scene, layout.all, palette);
      const ctx = { scene, layout, palette, topology, store, spec, requestRender };
      for (const [id, mod] of Object.entries(PART_MODULES)) {
        const partSpec = spec.parts.find((p) => p.id === id) || { id };
        built[id] = mod.build(ctx, partSpec);
      }
    },
    /** The built parts, each with update(frame, dt) and dispose(). */
    parts,
    /** The parts' root objects, for picking. */
    objects: () => parts().map((p) => p.object).filter(Boolean),
    /** Objects that could each cost a draw call: the ceiling on draw calls, whatever is lit. */
    drawables() {
      let n = 0;
      scene.traverse((o) => {
        if (o.isMesh || o.isLine || o.isSprite || o.isPoints) n += 1;
      });
      return n;
    },
    dispose() {
      clear();
      disposeFloor(scene, floor);
      floor = null;
    },
  };
}
