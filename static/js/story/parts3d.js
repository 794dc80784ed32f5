// The pieces GPU 1's close-up (gpu3d.js) and the step inside it (stepinside.js) share: which
// phase of a step a trace kind belongs to and the page's colour for it, a piece's box for the
// test hook, and the trays beside the GPU (the prompt, the microbatches).

import * as THREE from 'three';
import { textSprite } from '../scene/util.js';

export { phaseOf } from './phases.js';

/** A colour variable of the page as a three.js colour (the fallback where it is unset). */
export function cssColour(name, fallback) {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return new THREE.Color(v || fallback);
}

/** A piece's box in the world, for the page's test hook. */
export const boxOf = (obj) => {
  const b = new THREE.Box3().setFromObject(obj);
  return { min: b.min.toArray(), max: b.max.toArray() };
};

/** Put sprite `next` (or nothing) in `old`'s place in `group`, `old` disposed; returns next. */
export function resprite(group, old, next) {
  if (old) {
    group.remove(old);
    old.material.map?.dispose();
    old.material.dispose();
  }
  if (next) group.add(next);
  return next;
}

export const TRAY_IDLE = 0x3a4a6a;

/** A tray beside the GPU, w wide, at [x, y, z]; label(text, opts) writes on it (again; no
 * text: nothing), leaving whatever else stands on the tray. */
export function tray(w, at) {
  const mesh = new THREE.Mesh(new THREE.BoxGeometry(w, 0.12, 0.9), new THREE.MeshLambertMaterial({ color: TRAY_IDLE }));
  mesh.position.set(...at);
  let words = null;
  return {
    mesh,
    label(text, { height = 0.34, y = 0.27, verbatim = false } = {}) {
      words = resprite(mesh, words, text ? textSprite(text, { height, verbatim }) : null);
      words?.position.set(0, y, 0.2);
    },
    dispose() {
      for (const old of mesh.children) old.material.map?.dispose();
      mesh.geometry.dispose();
      mesh.material.dispose();
    },
  };
}
