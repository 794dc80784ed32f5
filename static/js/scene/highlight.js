// The outline round one part of the scene: the part under the pointer, or the tour's stop.

import * as THREE from 'three';

export function createHighlight(scene) {
  let box = null;

  function clear() {
    if (!box) return;
    scene.remove(box);
    box.geometry.dispose();
    box.material.dispose();
    box = null;
  }

  return {
    /** Outline `bounds` ({min, max}) in `colour`, or nothing when bounds is empty. */
    show(bounds, colour) {
      clear();
      if (!bounds) return;
      const b3 = new THREE.Box3(new THREE.Vector3(...bounds.min), new THREE.Vector3(...bounds.max));
      b3.expandByScalar(0.35);
      box = new THREE.Box3Helper(b3, new THREE.Color(colour));
      box.material.transparent = true;
      box.material.opacity = 0.55;
      scene.add(box);
    },
    dispose: clear,
  };
}
