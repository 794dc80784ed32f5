// The floor under the scene: a wide plane with a faint grid, which gives depth without
// drawing the eye, and fog that fades its far edge into the background.

import * as THREE from 'three';

/** Lay a floor under `bounds` ({min, max} of the whole scene) and add it to the scene. */
export function buildFloor(scene, bounds, palette) {
  const b = bounds;
  // Wide enough that its edges stay out of every view.
  const span = Math.max(b.max[0] - b.min[0], b.max[2] - b.min[2]) * 3 + 40;
  const floor = new THREE.Group();
  const plane = new THREE.Mesh(
    new THREE.PlaneGeometry(span, span),
    new THREE.MeshLambertMaterial({ color: palette.floor }),
  );
  plane.rotation.x = -Math.PI / 2;
  const cells = Math.round(span / 2);
  const grid = new THREE.GridHelper(span, cells, palette.grid, palette.grid);
  grid.position.y = 0.005;
  grid.material.transparent = true;
  grid.material.opacity = 0.55;
  floor.add(plane, grid);
  floor.position.set((b.min[0] + b.max[0]) / 2, -0.01, (b.min[2] + b.max[2]) / 2);
  scene.add(floor);
  scene.fog = new THREE.Fog(palette.background, span * 0.35, span * 0.75);
  scene.fog.base = [span * 0.35, span * 0.75];
  return floor;
}

/** Keep the fog behind the scene however far back the camera stands (a tall scene on an
 * upright screen, or a safe area that leaves it little room): near and far move out with
 * the camera past the distance the floor was sized for. */
export function fitFog(fog, distance) {
  if (!fog?.base) return;
  const out = Math.max(0, distance - fog.base[0] * 0.8);
  fog.near = fog.base[0] + out;
  fog.far = fog.base[1] + out;
}

export function disposeFloor(scene, floor) {
  if (!floor) return;
  scene.remove(floor);
  floor.traverse((o) => {
    o.geometry?.dispose();
    o.material?.dispose();
  });
}
