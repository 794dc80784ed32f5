// From the screen into the scene and back: which part is under the pointer, and where each
// part's numbered label belongs on screen for the current camera.

import * as THREE from 'three';

export function createPicker(canvas, camera) {
  const raycaster = new THREE.Raycaster();
  const ndc = new THREE.Vector2();
  const v = new THREE.Vector3();

  /** [{id, number, x, y, visible}] in CSS px of the page, one per part of the scene data. */
  function anchors(spec, layout) {
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    const rect = canvas.getBoundingClientRect();
    camera.updateMatrixWorld();
    return spec.parts.map((p) => {
      const a = layout.anchors[p.id];
      v.set(a[0], a[1], a[2]).project(camera);
      const visible = v.z < 1 && Math.abs(v.x) <= 1 && Math.abs(v.y) <= 1;
      return {
        id: p.id,
        number: p.number,
        x: rect.left + ((v.x + 1) / 2) * w,
        y: rect.top + ((1 - v.y) / 2) * h,
        visible,
      };
    });
  }

  /** The CSS px box (page coordinates) that a world box {min, max} covers on screen, from
   * its eight corners; null when it is wholly behind the camera. */
  function rect(b) {
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    const r = canvas.getBoundingClientRect();
    camera.updateMatrixWorld();
    let left = Infinity;
    let top = Infinity;
    let right = -Infinity;
    let bottom = -Infinity;
    for (let k = 0; k < 8; k++) {
      v.set(k & 1 ? b.max[0] : b.min[0], k & 2 ? b.max[1] : b.min[1], k & 4 ? b.max[2] : b.min[2]).project(camera);
      if (v.z >= 1) continue;
      const x = r.left + ((v.x + 1) / 2) * w;
      const y = r.top + ((1 - v.y) / 2) * h;
      left = Math.min(left, x);
      right = Math.max(right, x);
      top = Math.min(top, y);
      bottom = Math.max(bottom, y);
    }
    return Number.isFinite(left) ? { left, top, right, bottom } : null;
  }

  /** The part id of the nearest object under (clientX, clientY) among `objects`, or null.
   * The placement overlay sits on the GPUs but is not a part of its own. */
  function pick(clientX, clientY, objects) {
    const rect = canvas.getBoundingClientRect();
    ndc.set(((clientX - rect.left) / rect.width) * 2 - 1, -((clientY - rect.top) / rect.height) * 2 + 1);
    raycaster.setFromCamera(ndc, camera);
    for (const hit of raycaster.intersectObjects(objects, true)) {
      let o = hit.object;
      while (o && !o.userData.part) o = o.parent;
      if (o?.userData.part && o.userData.part !== 'placement') return o.userData.part;
    }
    return null;
  }

  return { anchors, pick, rect };
}
