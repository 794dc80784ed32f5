// The memory wall behind each GPU (part of part 3, the GPU servers): a frame with capacity
// ticks at each quarter, filled with the GPU's memory account in bands (weights, gradients,
// optimizer state, activations). It shows the live account of the tiny model
// (store.state.memoryCase === null), or a case from the memory lab:
//   {label, fraction, parts, fits, gpus?}
// `fraction` is one GPU's share as a fraction of its usable memory; `gpus` (when given) is how
// many GPUs share the model, and only that many walls of the scene hold it (all of them when
// the scene has fewer).
//
// A case that does not fit grows a hatched tower above the wall. A 405B model needs ninety
// walls, which no frame holds, so the tower is drawn on a log scale: a bright tick at each
// x10 (labelled), and a label on the servers' front edge says the true number ("needs 15.6x
// this GPU's memory"). Every kind of thing is one InstancedMesh and the words are a handful
// of sprites for the whole cluster, so draw calls do not grow with GPUs.

import * as THREE from 'three';
import { commit, disposeTree, hatchTexture, instanced, place, tag, tint, wallTexture } from '../util.js';
import { t } from '../../i18n/lang.js';

const MIN_FILL = 0.03; // the tiny model's share of an 80 GB GPU would be invisible
// Tower height above the wall, in wall heights, per x10 of memory needed.
const WALLS_PER_DECADE = 0.4;
const MAX_DECADES = 3; // x1000 and beyond are drawn as tall as x1000; the label says more
const MIN_TOWER = 0.08; // "just doesn't fit" must still show
const LABEL_PX = { default: 24, projector: 28 }; // the label's first line on screen, CSS px

function bandColour(name, palette, i) {
  const n = (name || '').toLowerCase();
  if (n.includes('optim')) return palette.memOptimizer;
  if (n.includes('grad')) return palette.memGrads;
  if (n.includes('activ') || n.includes('work')) return palette.memActivations;
  if (n.includes('weight') || n.includes('param')) return palette.memWeights;
  return [palette.memWeights, palette.memGrads, palette.memOptimizer, palette.memActivations][i % 4];
}

/** The tower above a full wall for a case needing `fraction` walls, in wall heights. */
export function towerWalls(fraction) {
  if (!(fraction > 1)) return 0;
  const decades = Math.min(MAX_DECADES, Math.log10(fraction));
  return Math.max(MIN_TOWER, decades * WALLS_PER_DECADE);
}

/** Bands [{colour, from, to}] (fractions of the wall) and what overflows above it. */
function memoryBands(run, gpuIndex, gpuId, palette) {
  const mc = run.memoryCase;
  if (mc) {
    const used = Number.isFinite(mc.gpus) && mc.gpus > 0 ? mc.gpus : Infinity;
    if (gpuIndex >= used) return { bands: [], fraction: null, overflow: 0 };
    const total = Math.max(0, Number(mc.fraction) || 0);
    const parts = Array.isArray(mc.parts) ? mc.parts : [];
    const sum = parts.reduce((a, p) => a + Math.max(0, Number(p.fraction) || 0), 0);
    // Part fractions may be of usable memory (summing to `fraction`) or shares of the whole
    // (summing to 1); scale them so the bands always add up to the fill.
    const scale = sum > 0 ? total / sum : 0;
    let at = 0;
    const bands = parts.map((p, i) => {
      const h = Math.max(0, Number(p.fraction) || 0) * scale;
      const b = { colour: bandColour(p.name, palette, i), from: at, to: at + h };
      at += h;
      return b;
    });
    if (!bands.length && total > 0) bands.push({ colour: palette.memWeights, from: 0, to: total });
    return { bands, fraction: total, overflow: total > 1 ? total : 0 };
  }
  const m = run.step?.memory?.find?.((x) => x.gpu === gpuId) || run.step?.memory?.[gpuId];
  if (!m || !m.capacity) return { bands: [], fraction: 0, overflow: 0 };
  const real = m.total / m.capacity;
  const shown = Math.max(real, MIN_FILL);
  const k = m.total > 0 ? shown / m.total : 0;
  let at = 0;
  const bands = [];
  for (const [name, bytes] of [
    ['weights', m.weights],
    ['grads', m.grads],
    ['optimizer', m.optimizer],
    ['activations', m.activations],
  ]) {
    const h = (bytes || 0) * k;
    bands.push({ colour: bandColour(name, palette, 0), from: at, to: at + h });
    at += h;
  }
  return { bands, fraction: real, overflow: 0 };
}

function sig3(x) {
  return x >= 100 ? Math.round(x) : Number(x.toPrecision(3));
}

/** What the label over the walls says for a lab case, or null for none. */
function labelFor(mc) {
  if (!mc) return null;
  const f = Number(mc.fraction) || 0;
  // Drawn on a canvas: made in the page's language.
  if (f > 1) return { title: t("Doesn't fit"), line: t("needs {x}× this GPU's memory", { x: sig3(f) }), bad: true };
  if (Number.isFinite(mc.gpus) && mc.gpus > 1) {
    return { title: t('Fits on {n} GPUs', { n: mc.gpus }), line: t('each holds 1/{n}: {p}% full', { n: mc.gpus, p: Math.round(f * 100) }), bad: false };
  }
  return { title: t('Fits on one GPU'), line: t('{p}% full', { p: Math.round(f * 100) }), bad: false };
}

/**
 * A label that keeps the same size on screen however far the camera stands: two lines on a
 * canvas, redrawn only when the words change, scaled before each render from the camera's
 * projection so it reads at LABEL_PX whatever the zoom.
 */
function screenLabel(palette, fitBox) {
  const mat = new THREE.SpriteMaterial({ transparent: true, depthWrite: false, depthTest: false, sizeAttenuation: false });
  const sprite = new THREE.Sprite(mat);
  sprite.center.set(0.5, 0); // it stands on its anchor
  sprite.renderOrder = 10;
  sprite.visible = false;
  sprite.raycast = shownOnly(sprite);
  let aspect = 1;
  let key = '';
  const px = LABEL_PX[palette.theme] ?? LABEL_PX.default;
  const big = 64;
  const small = 46;
  const screen = { w: 0, h: 0 }; // its size on screen, CSS px, at the last render

  function set(label) {
    const k = label ? `${label.title}|${label.line}|${label.bad}` : '';
    sprite.visible = !!label;
    if (!label || k === key) return;
    key = k;
    // A texture cannot change size once it is on the GPU: new words, new canvas and texture.
    const cv = document.createElement('canvas');
    const font = (size, weight) => `${weight} ${size}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
    const g = cv.getContext('2d');
    g.font = font(big, 750);
    const w1 = g.measureText(label.title).width;
    g.font = font(small, 600);
    const w2 = g.measureText(label.line).width;
    cv.width = Math.ceil(Math.max(w1, w2) + 48);
    cv.height = big + small + 56;
    const fg = label.bad ? palette.background : palette.text;
    g.fillStyle = label.bad ? palette.overflow : palette.background;
    g.globalAlpha = label.bad ? 1 : 0.88;
    g.fillRect(0, 0, cv.width, cv.height);
    g.globalAlpha = 1;
    if (!label.bad) {
      g.strokeStyle = palette.text;
      g.lineWidth = 4;
      g.strokeRect(2, 2, cv.width - 4, cv.height - 4);
    }
    g.fillStyle = fg;
    g.textBaseline = 'top';
    g.textAlign = 'center';
    g.font = font(big, 750);
    g.fillText(label.title, cv.width / 2, 20);
    g.font = font(small, 600);
    g.fillText(label.line, cv.width / 2, 24 + big);
    const tex = new THREE.CanvasTexture(cv);
    tex.colorSpace = THREE.SRGBColorSpace;
    mat.map?.dispose();
    mat.map = tex;
    mat.needsUpdate = true;
    aspect = cv.width / cv.height;
  }

  // The first line's type is this share of the canvas height.
  const typeShare = big / (big + small + 56);
  const corner = new THREE.Vector3();
  /** How wide the box it labels is on screen now, in CSS px. */
  function boxWidth(camera, w) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const x of [fitBox.min[0], fitBox.max[0]])
      for (const y of [fitBox.min[1], fitBox.max[1]])
        for (const z of [fitBox.min[2], fitBox.max[2]]) {
          corner.set(x, y, z).project(camera);
          lo = Math.min(lo, corner.x);
          hi = Math.max(hi, corner.x);
        }
    return ((hi - lo) / 2) * w;
  }
  sprite.onBeforeRender = (renderer, scene, camera) => {
    const h = renderer.domElement.clientHeight || 1;
    // Without size attenuation a sprite of scale s spans s * P[1][1] / 2 of the view's height.
    const p11 = camera.projectionMatrix.elements[5] || 1;
    let tall = px / typeShare;
    // No wider than the servers it stands on (a small window, a large theme), down to 70%.
    const room = boxWidth(camera, renderer.domElement.clientWidth || 1) * 0.95;
    if (tall * aspect > room) tall *= Math.max(0.7, room / (tall * aspect));
    const s = (2 * tall) / (h * p11);
    sprite.scale.set(s * aspect, s, 1);
    sprite.updateMatrixWorld(true);
    screen.w = tall * aspect;
    screen.h = tall;
  };
  return { sprite, set, screen, text: () => (sprite.visible ? key.split('|').slice(0, 2).join(' ') : ''), dispose: () => mat.map?.dispose() };
}

/** A small world-space word beside the towers ("×10"). */
function tickLabel(text, palette) {
  const cv = document.createElement('canvas');
  const g = cv.getContext('2d');
  const font = '700 44px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  g.font = font;
  cv.width = Math.ceil(g.measureText(text).width) + 16;
  cv.height = 56;
  g.font = font;
  g.fillStyle = palette.text;
  g.textBaseline = 'middle';
  g.fillText(text, 8, 30);
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  const sprite = new THREE.Sprite(new THREE.SpriteMaterial({ map: tex, transparent: true, depthWrite: false }));
  const height = 0.42;
  sprite.scale.set((height * cv.width) / cv.height, height, 1);
  sprite.center.set(0, 0.5);
  sprite.visible = false;
  sprite.raycast = shownOnly(sprite);
  return sprite;
}

/** Picking ignores `visible`; a hidden word must not catch clicks (a screen-sized label
 * without its per-render scale would cover the whole window). */
function shownOnly(sprite) {
  return (raycaster, hits) => {
    if (sprite.visible) THREE.Sprite.prototype.raycast.call(sprite, raycaster, hits);
  };
}

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  group.name = 'walls';
  const n = lay.gpus.length;
  const [ww, wh, wt] = lay.dims.wall;
  const wallTex = wallTexture('#ffffff');
  const wallFrame = instanced(
    new THREE.BoxGeometry(ww, wh, wt),
    new THREE.MeshBasicMaterial({
      color: palette.wallFrame,
      map: wallTex,
      transparent: true,
      opacity: 0.5,
      depthWrite: false,
    }),
    n,
    'gpus',
  );
  const bands = instanced(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshLambertMaterial(), n * 4 + 4, 'gpus');
  const hatchTex = hatchTexture('#ffffff', 14, 5);
  const overflow = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshBasicMaterial({ color: palette.overflow, map: hatchTex, transparent: true, opacity: 0.9, depthWrite: false }),
    n,
    'gpus',
  );
  // One bright bar across every tower at each x10.
  const ticks = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshBasicMaterial({ color: palette.text }),
    n * MAX_DECADES,
    'gpus',
  );
  for (let i = 0; i < n; i++) {
    const g = lay.gpus[i];
    place(wallFrame, i, g.wall.x, g.wall.y, g.wall.z);
  }
  wallFrame.count = n;
  commit(wallFrame);

  const label = screenLabel(palette, lay.parts.gpus);
  const tickWords = Array.from({ length: MAX_DECADES }, (_, d) => tickLabel(`×${10 ** (d + 1)}`, palette));

  group.add(wallFrame, bands, overflow, ticks, label.sprite, ...tickWords);
  tag(group, 'gpus'); // a click on a wall opens the GPU servers' card
  scene.add(group);

  let lastMemKey = null;
  let overflowWalls = 0;
  let towerMax = 0;
  let fills = [];
  // What the walls look like on screen, for observers: the camera and canvas of the last
  // render, and the world boxes drawn for the current case.
  let lastCamera = null;
  let lastCanvas = null;
  const drawnBoxes = [];
  wallFrame.onBeforeRender = (renderer, _scene, camera) => {
    lastCamera = camera;
    lastCanvas = renderer.domElement;
  };

  function updateMemory(run) {
    const memKey = run.memoryCase ? JSON.stringify(run.memoryCase) : `live:${run.step?.seq ?? 'none'}`;
    if (memKey === lastMemKey) return;
    lastMemKey = memKey;
    let b = 0;
    let o = 0;
    let t = 0;
    towerMax = 0;
    fills = [];
    drawnBoxes.length = 0;
    let maxX = -Infinity;
    let wallZ = lay.gpus[0]?.wall.z ?? 0;
    for (let i = 0; i < n; i++) {
      const g = lay.gpus[i];
      const acc = memoryBands(run, i, g.id, palette);
      fills.push(acc.fraction);
      const base = g.wall.y - wh / 2;
      drawnBoxes.push([g.wall.x - ww / 2, base, g.wall.z - wt, g.wall.x + ww / 2, base + wh, g.wall.z + wt]);
      for (const band of acc.bands.slice(0, 4)) {
        const from = Math.min(1, band.from);
        const to = Math.min(1, band.to);
        if (to - from <= 1e-4) continue;
        place(bands, b, g.wall.x, base + ((from + to) / 2) * wh, g.wall.z, ww * 0.86, (to - from) * wh, wt * 1.6);
        tint(bands, b, band.colour);
        b += 1;
      }
      if (acc.overflow > 1) {
        const tw = towerWalls(acc.overflow);
        const h = tw * wh;
        place(overflow, o, g.wall.x, base + wh + h / 2, g.wall.z, ww * 0.86, h, wt * 1.6);
        drawnBoxes.push([g.wall.x - ww / 2, base + wh, g.wall.z - wt, g.wall.x + ww / 2, base + wh + h, g.wall.z + wt]);
        o += 1;
        towerMax = Math.max(towerMax, tw);
        for (let d = 1; d <= MAX_DECADES && 10 ** d <= acc.overflow; d++) {
          // A thin line across the tower's face, not a plate: seen from above, depth shows.
          place(ticks, t, g.wall.x, base + wh + d * WALLS_PER_DECADE * wh, g.wall.z + wt * 0.5, ww * 0.94, 0.035, wt * 1.2);
          t += 1;
        }
        if (g.wall.x > maxX) {
          maxX = g.wall.x;
          wallZ = g.wall.z;
        }
      }
    }
    bands.count = b;
    overflow.count = o;
    ticks.count = t;
    overflowWalls = o;
    commit(bands);
    commit(overflow);
    commit(ticks);

    const wallTop = (lay.gpus[0]?.wall.y ?? wh / 2) + wh / 2;
    // The words for each x10 stand beside the rightmost tower.
    tickWords.forEach((s, d) => {
      s.visible = o > 0 && 10 ** (d + 1) <= (Number(run.memoryCase?.fraction) || 0) && d < MAX_DECADES;
      if (s.visible) s.position.set(maxX + ww * 0.62, wallTop + (d + 1) * WALLS_PER_DECADE * wh, wallZ);
    });

    const words = labelFor(run.memoryCase);
    label.set(words);
    if (words) {
      // Standing on the front edge of the servers, in the middle: inside the GPU servers'
      // own box, which the numbered labels keep clear of, and under the towers, so it never
      // runs into the top bar or the colour key however tall they grow.
      const box = lay.parts.gpus;
      label.sprite.position.set((box.min[0] + box.max[0]) / 2, box.min[1] + 0.05, box.max[2]);
    }
  }

  /** Where the walls, towers and label are on screen now (CSS px of the page), or null. */
  function measure() {
    if (!lastCamera || !lastCanvas) return null;
    const rect = lastCanvas.getBoundingClientRect();
    const w = lastCanvas.clientWidth;
    const h = lastCanvas.clientHeight;
    const v = new THREE.Vector3();
    const toPage = (x, y, z) => {
      v.set(x, y, z).project(lastCamera);
      return { x: rect.left + ((v.x + 1) / 2) * w, y: rect.top + ((1 - v.y) / 2) * h, behind: v.z > 1 };
    };
    let box = null;
    const grow = (p) => {
      box = box
        ? { left: Math.min(box.left, p.x), top: Math.min(box.top, p.y), right: Math.max(box.right, p.x), bottom: Math.max(box.bottom, p.y) }
        : { left: p.x, top: p.y, right: p.x, bottom: p.y };
    };
    lastCamera.updateMatrixWorld();
    for (const [x0, y0, z0, x1, y1, z1] of drawnBoxes) {
      for (const x of [x0, x1]) for (const y of [y0, y1]) for (const z of [z0, z1]) grow(toPage(x, y, z));
    }
    let labelBox = null;
    if (label.sprite.visible) {
      const p = label.sprite.position;
      const c = toPage(p.x, p.y, p.z);
      // The sprite stands on its anchor: centred across, growing upwards.
      labelBox = { left: c.x - label.screen.w / 2, right: c.x + label.screen.w / 2, top: c.y - label.screen.h, bottom: c.y, x: c.x, y: c.y - label.screen.h / 2 };
      grow({ x: labelBox.left, y: labelBox.top });
      grow({ x: labelBox.right, y: labelBox.bottom });
    }
    for (const s of tickWords) {
      if (!s.visible) continue;
      const c = toPage(s.position.x, s.position.y, s.position.z);
      grow(c);
    }
    return { box, label: labelBox, text: label.text(), towers: overflowWalls, towerWalls: towerMax, fills: [...fills] };
  }

  return {
    object: group,
    update(frame) {
      updateMemory(frame.run);
      frame.debug.overflowWalls = overflowWalls;
      frame.debug.memoryBands = bands.count;
      // The tallest tower in wall heights (log scale): bigger models draw taller.
      frame.debug.overflowScale = towerMax;
      // Each wall's fill as a fraction of its GPU (null: this wall holds nothing of the case).
      frame.debug.wallFills = fills;
      frame.debug.wallsOnScreen = measure;
      return false;
    },
    dispose() {
      hatchTex.dispose();
      wallTex.dispose();
      label.dispose();
      disposeTree(group);
    },
  };
}
