// Small three.js helpers the parts share: instanced meshes, procedural textures, tagging.
//
// Textures are drawn on a canvas at start-up (hatching, the X of a failed GPU); nothing is
// downloaded. Every repeated thing goes through `instanced` so one kind = one draw call.

import * as THREE from 'three';
import { tr } from '../i18n/lang.js';

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

/** Diagonal hatching on a transparent background: "waiting" and "doesn't fit" use it.
 * `ground` fills behind the stripes (e.g. a dark veil, so light stripes read on a light
 * surface); `cross` adds the other diagonal (a failed GPU's pattern). */
export function hatchTexture(colour = '#ffffff', spacing = 16, width = 5, { ground = null, cross = false } = {}) {
  const size = 64;
  const cv = document.createElement('canvas');
  cv.width = cv.height = size;
  const g = cv.getContext('2d');
  g.clearRect(0, 0, size, size);
  if (ground) {
    g.fillStyle = ground;
    g.fillRect(0, 0, size, size);
  }
  g.strokeStyle = colour;
  g.lineWidth = width;
  for (let k = -size; k <= size * 2; k += spacing) {
    g.beginPath();
    g.moveTo(k, 0);
    g.lineTo(k - size, size);
    if (cross) {
      g.moveTo(k - size, 0);
      g.lineTo(k, size);
    }
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

/** A text sprite drawn on a canvas (for the few world-space words, e.g. "doesn't fit").
 * `verbatim`: the model's own English (what it reads), never put into the page's language. */
export function textSprite(words, { colour = '#ffffff', bg = null, height = 0.6, weight = 700, verbatim = false } = {}) {
  const text = verbatim ? words : tr(words); // the scene's English words, in the page's language
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

const _a = new THREE.Vector3();
const _b = new THREE.Vector3();
const _up = new THREE.Vector3(0, 1, 0);
const _dq = new THREE.Quaternion();
const _d = new THREE.Vector3();

/** Stretch a unit-tall instanced box (or cylinder) from point a to point b. */
export function placeSegment(mesh, i, a, b, thickness) {
  _a.set(a[0], a[1], a[2]);
  _b.set(b[0], b[1], b[2]);
  _d.subVectors(_b, _a);
  const len = _d.length() || 1e-6;
  _dq.setFromUnitVectors(_up, _d.divideScalar(len));
  place(mesh, i, (a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2, thickness, len, thickness, _dq);
}

/** Orientation that turns +y towards the direction (dx, dy, dz): for arrowheads. */
export function aimY(dx, dy, dz, out = new THREE.Quaternion()) {
  _d.set(dx, dy, dz);
  const len = _d.length();
  if (len < 1e-9) return out.identity();
  return out.setFromUnitVectors(_up, _d.divideScalar(len));
}

/** A polyline's total length and the point at distance d along it (clamped to its ends). */
export function polyLength(points) {
  let len = 0;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1];
    const b = points[i];
    len += Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
  }
  return len;
}

export function pointAlong(points, d, out) {
  let left = Math.max(0, d);
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1];
    const b = points[i];
    const seg = Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
    if (left <= seg || i === points.length - 1) {
      const t = seg > 0 ? Math.min(1, left / seg) : 1;
      out[0] = a[0] + (b[0] - a[0]) * t;
      out[1] = a[1] + (b[1] - a[1]) * t;
      out[2] = a[2] + (b[2] - a[2]) * t;
      return out;
    }
    left -= seg;
  }
  if (points.length) {
    const p = points[points.length - 1];
    out[0] = p[0];
    out[1] = p[1];
    out[2] = p[2];
  }
  return out;
}

/** Points along a cubic Bezier from p0 to p3 with control points c1, c2 (n + 1 points). */
export function bezierPoints(p0, c1, c2, p3, n = 12) {
  const pts = [];
  for (let k = 0; k <= n; k++) {
    const t = k / n;
    const u = 1 - t;
    const w0 = u * u * u;
    const w1 = 3 * u * u * t;
    const w2 = 3 * u * t * t;
    const w3 = t * t * t;
    pts.push([0, 1, 2].map((j) => w0 * p0[j] + w1 * c1[j] + w2 * c2[j] + w3 * p3[j]));
  }
  return pts;
}

export function tag(obj, part) {
  obj.traverse((o) => (o.userData.part = part));
  return obj;
}

export const ease = (t) => (t < 0.5 ? 4 * t * t * t : 1 - Math.pow(-2 * t + 2, 3) / 2);

/**
 * Words for many instances at one draw call: every distinct string is drawn once into one
 * canvas texture (an atlas of equal cells), and each instance of an InstancedMesh of quads
 * picks its cell through a per-instance attribute. textAtlas(strings) -> {texture, cells
 * (string -> index), aspect (cell width / height), material(opts), setCell(mesh, i, string)}.
 * The atlas holds at most `max` strings; any others are simply not drawn.
 */
export function textAtlas(strings, { colour = '#ffffff', cellW = 256, cellH = 72, max = 256, weight = 700 } = {}) {
  const list = [...new Set(strings)].filter((s) => s).slice(0, max);
  const cols = Math.max(1, Math.min(list.length, Math.floor(2048 / cellW)));
  const rows = Math.max(1, Math.ceil(list.length / cols));
  const cv = document.createElement('canvas');
  cv.width = cols * cellW;
  cv.height = rows * cellH;
  const g = cv.getContext('2d');
  g.clearRect(0, 0, cv.width, cv.height);
  g.fillStyle = colour;
  g.textAlign = 'center';
  g.textBaseline = 'middle';
  const cells = new Map();
  list.forEach((s, k) => {
    cells.set(s, k);
    const x = (k % cols) * cellW;
    const y = Math.floor(k / cols) * cellH;
    let px = Math.round(cellH * 0.74);
    g.font = `${weight} ${px}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
    // Shrink a long string to fit its cell rather than spill into the next.
    while (px > 12 && g.measureText(s).width > cellW - 12) {
      px -= 2;
      g.font = `${weight} ${px}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
    }
    g.fillText(s, x + cellW / 2, y + cellH / 2 + cellH * 0.04);
  });
  const texture = new THREE.CanvasTexture(cv);
  texture.colorSpace = THREE.SRGBColorSpace;
  texture.anisotropy = 4;
  const size = new THREE.Vector2(1 / cols, 1 / rows);
  return {
    texture,
    cells,
    aspect: cellW / cellH,
    /** A material for an InstancedMesh whose geometry has an InstancedBufferAttribute
     * `cell` (vec2: the cell's lower-left corner in texture coordinates, see setCell). */
    material({ opacity = 1, depthTest = true } = {}) {
      const mat = new THREE.MeshBasicMaterial({ map: texture, transparent: true, opacity, depthWrite: false, depthTest });
      mat.onBeforeCompile = (shader) => {
        shader.uniforms.cellSize = { value: size };
        shader.vertexShader = shader.vertexShader
          .replace('#include <common>', '#include <common>\nattribute vec2 cell;\nuniform vec2 cellSize;')
          .replace('#include <uv_vertex>', '#include <uv_vertex>\n#ifdef USE_MAP\n\tvMapUv = cell + uv * cellSize;\n#endif');
      };
      mat.customProgramCacheKey = () => 'text-atlas';
      return mat;
    },
    /** Point instance i of `mesh` at the cell of `text` (false when the atlas lacks it). */
    setCell(mesh, i, text) {
      const k = cells.get(text);
      if (k === undefined) return false;
      const attr = mesh.geometry.getAttribute('cell');
      const c = k % cols;
      const r = Math.floor(k / cols);
      // Canvas rows run down, texture v runs up (flipY).
      attr.setXY(i, c * size.x, 1 - (r + 1) * size.y);
      attr.needsUpdate = true;
      return true;
    },
  };
}

/** A unit quad geometry with room for `capacity` per-instance atlas cells (see textAtlas). */
export function atlasQuad(capacity) {
  const geo = new THREE.PlaneGeometry(1, 1);
  geo.setAttribute('cell', new THREE.InstancedBufferAttribute(new Float32Array(Math.max(1, capacity) * 2), 2));
  return geo;
}

