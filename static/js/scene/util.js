// Small three.js helpers the parts share: instanced meshes, procedural textures, tagging.
//
// Textures are drawn on a canvas at start-up (hatching, the X of a failed GPU); nothing is
// downloaded. Every repeated thing goes through `instanced` so one kind = one draw call.

import * as THREE from 'three';

const _m = new THREE.Matrix4();
const _q = new THREE.Quaternion();
const _p = new THREE.Vector3();
const _s = new THREE.Vector3();
const _c = new THREE.Color();

/** An InstancedMesh with room for `capacity` instances, tagged with the part it belongs to. */
export function instanced(geometry, material, capacity, part) {
  const mesh = new THREE.InstancedMesh(geometry, material, Math.max(1, capacity));
  mesh.count = 0;
  mesh.userData.part = part;
  mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
  mesh.frustumCulled = false; // instances spread far beyond the base geometry's bounds
  return mesh;
}

/** Place instance i at (x, y, z) with scale (sx, sy, sz) and an optional rotation. */
export function place(mesh, i, x, y, z, sx = 1, sy = 1, sz = 1, quat = null) {
  _p.set(x, y, z);
  _s.set(sx, sy, sz);
  _m.compose(_p, quat || _q.identity(), _s);
  mesh.setMatrixAt(i, _m);
}

export function tint(mesh, i, colour) {
  mesh.setColorAt(i, _c.set(colour));
}

export function tintRGB(mesh, i, color) {
  mesh.setColorAt(i, color);
}

export function commit(mesh) {
  mesh.instanceMatrix.needsUpdate = true;
  if (mesh.instanceColor) mesh.instanceColor.needsUpdate = true;
}

/** Diagonal hatching on a transparent background: "waiting" and "doesn't fit" use it. */
export function hatchTexture(colour = '#ffffff', spacing = 16, width = 5) {
  const size = 64;
  const cv = document.createElement('canvas');
  cv.width = cv.height = size;
  const g = cv.getContext('2d');
  g.clearRect(0, 0, size, size);
  g.strokeStyle = colour;
  g.lineWidth = width;
  for (let k = -size; k <= size * 2; k += spacing) {
    g.beginPath();
    g.moveTo(k, 0);
    g.lineTo(k - size, size);
    g.stroke();
  }
  const tex = new THREE.CanvasTexture(cv);
  tex.wrapS = tex.wrapT = THREE.RepeatWrapping;
  tex.colorSpace = THREE.SRGBColorSpace;
  return tex;
}

/** A memory wall's face: a thin frame with capacity ticks at each quarter, as on a gauge. */
export function wallTexture(colour = '#ffffff') {
  const cv = document.createElement('canvas');
  cv.width = 64;
  cv.height = 256;
  const g = cv.getContext('2d');
  g.fillStyle = 'rgba(255,255,255,0.18)';
  g.fillRect(0, 0, 64, 256);
  g.strokeStyle = colour;
  g.lineWidth = 5;
  g.strokeRect(2.5, 2.5, 59, 251);
  g.lineWidth = 4;
  for (const q of [0.25, 0.5, 0.75]) {
    const y = Math.round(256 * q);
    g.beginPath();
    g.moveTo(0, y);
    g.lineTo(q === 0.5 ? 30 : 18, y);
    g.stroke();
  }
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  return tex;
}

/** A text sprite drawn on a canvas (for the few world-space words, e.g. "doesn't fit"). */
export function textSprite(text, { colour = '#ffffff', bg = null, height = 0.6, weight = 700 } = {}) {
  const font = `${weight} 56px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
  const cv = document.createElement('canvas');
  const g = cv.getContext('2d');
  g.font = font;
  const w = Math.ceil(g.measureText(text).width) + 32;
  cv.width = w;
  cv.height = 80;
  g.font = font;
  if (bg) {
    g.fillStyle = bg;
    g.fillRect(0, 0, cv.width, cv.height);
  }
  g.fillStyle = colour;
  g.textBaseline = 'middle';
  g.fillText(text, 16, 42);
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  const mat = new THREE.SpriteMaterial({ map: tex, transparent: true, depthWrite: false });
  const sprite = new THREE.Sprite(mat);
  sprite.scale.set((height * cv.width) / cv.height, height, 1);
  return sprite;
}

/** Dispose every geometry, material and texture under an object. */
export function disposeTree(root) {
  root.traverse((o) => {
    o.geometry?.dispose?.();
    const mats = Array.isArray(o.material) ? o.material : o.material ? [o.material] : [];
    for (const m of mats) {
      m.map?.dispose?.();
      m.alphaMap?.dispose?.();
      m.dispose?.();
    }
  });
  root.removeFromParent();
}

export function tag(obj, part) {
  obj.traverse((o) => (o.userData.part = part));
  return obj;
}

export const ease = (t) => (t < 0.5 ? 4 * t * t * t : 1 - Math.pow(-2 * t + 2, 3) / 2);
