// One GPU's body as the close-up draws it (gpu3d.js draws GPU 1 with it, pair3d.js GPU 2): a
// board; the compute block with a strip of cores on top, lit in the colour of the work the
// GPU is doing; a memory wall either side, with a tick at each quarter and a fill to scale;
// and its layers, slabs stacked between the walls, with hairlines over the top one where a
// real model stacks dozens more. Everything is placed about the board's centre.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { textSprite } from '../scene/util.js';
import { boxOf, cssColour, phaseOf } from './parts3d.js';

const CORES = 16;
export const WALL_H = 2.2;
export const SLAB = { w: 2.1, h: 0.24, d: 1.3, gap: 0.1, floor: 0.72 }; // a layer, stacked from the compute block
export const BOARD = { w: 4.2, d: 2.6 };
const HAIRLINES = 3;
export const LAYER_TONE = 0x9d8fd6; // the weights' lavender

const mat = (colour, extra = {}) => new THREE.MeshLambertMaterial({ color: colour, ...extra });

/** Red diagonal stripes over the band's colour: what is drawn with them does not fit. */
function stripes(colour) {
  const cv = document.createElement('canvas');
  cv.width = 32;
  cv.height = 32;
  const g = cv.getContext('2d');
  g.fillStyle = `#${colour.getHexString()}`;
  g.fillRect(0, 0, 32, 32);
  g.strokeStyle = '#e85d5d';
  g.lineWidth = 6;
  for (let k = -32; k <= 64; k += 12) {
    g.beginPath();
    g.moveTo(k, 32);
    g.lineTo(k + 32, 0);
    g.stroke();
  }
  const tex = new THREE.CanvasTexture(cv);
  tex.wrapS = THREE.RepeatWrapping;
  tex.wrapT = THREE.RepeatWrapping;
  return tex;
}

/** A layer that does not fit: the slab's outline, dashed. */
function dashedSlab() {
  const box = new THREE.BoxGeometry(SLAB.w, SLAB.h, SLAB.d);
  const lines = new THREE.LineSegments(new THREE.EdgesGeometry(box), new THREE.LineDashedMaterial({ color: 0xd9d2ff, dashSize: 0.12, gapSize: 0.08 }));
  lines.computeLineDistances();
  box.dispose();
  return lines;
}

/** gpuBody({layers}) -> {group, board, compute, strip, walls, slabs, hairs, setFill(f), light(kind), describe()}
 * `layers` slabs, hidden until shown; each slab's userData.rest is its height in the stack. */
export function gpuBody({ layers = 0 } = {}) {
  const group = new THREE.Group();
  const board = new THREE.Mesh(new THREE.BoxGeometry(BOARD.w, 0.16, BOARD.d), mat(0x1d2b45));
  board.position.y = 0.08;
  const compute = new THREE.Mesh(new THREE.BoxGeometry(1.5, 0.34, 1.5), mat(0x3b4a66));
  compute.position.y = 0.33;
  // The cores: one row of cells on the compute block, lit where work happens.
  const idle = new THREE.Color(0x263149);
  const coreMat = new THREE.MeshBasicMaterial({ color: idle });
  const strip = new THREE.InstancedMesh(new THREE.BoxGeometry(0.07, 0.06, 1.2), coreMat, CORES);
  const m4 = new THREE.Matrix4();
  for (let i = 0; i < CORES; i++) strip.setMatrixAt(i, m4.makeTranslation(-0.6 + (1.2 * i) / (CORES - 1), 0.53, 0));
  strip.instanceMatrix.needsUpdate = true;

  // The memory walls: a dark back of the full height, a tick across it at each quarter, and
  // a fill in front of it to scale.
  const walls = [-1.55, 1.55].map((x) => {
    const wall = new THREE.Group();
    wall.position.set(x, 0.16, 0);
    const back = new THREE.Mesh(new THREE.BoxGeometry(0.66, WALL_H, 0.08), mat(0x4a5f8c));
    back.position.set(0, WALL_H / 2, -0.3);
    const ticks = [0.25, 0.5, 0.75, 1].map((q) => {
      const tick = new THREE.Mesh(new THREE.BoxGeometry(0.76, 0.04, 0.12), mat(0xc9d4e8));
      tick.position.set(0, q * WALL_H, -0.22);
      return tick;
    });
    const fill = new THREE.Mesh(new THREE.BoxGeometry(0.56, 1, 0.34), mat(0x5fa8ff));
    wall.add(back, fill, ...ticks);
    return { wall, fill, ticks };
  });

  // The layers: slabs sharing one material (re-toned together), bottom first.
  const slabMat = mat(LAYER_TONE);
  const slabs = Array.from({ length: layers }, (_, i) => {
    const slab = new THREE.Mesh(new THREE.BoxGeometry(SLAB.w, SLAB.h, SLAB.d), slabMat);
    slab.userData.rest = SLAB.floor + i * (SLAB.h + SLAB.gap) + SLAB.h / 2;
    slab.position.y = slab.userData.rest;
    slab.visible = false;
    return slab;
  });
  const hairTop = SLAB.floor + layers * (SLAB.h + SLAB.gap);
  const hairMat = new THREE.MeshBasicMaterial({ color: 0xc9d4e8 });
  const hairs = layers ? Array.from({ length: HAIRLINES }, (_, i) => {
    const hair = new THREE.Mesh(new THREE.BoxGeometry(SLAB.w * 0.9, 0.025, SLAB.d * 0.9), hairMat);
    hair.position.y = hairTop + i * 0.09;
    hair.visible = false;
    return hair;
  }) : [];
  group.add(board, compute, strip, ...walls.map((w) => w.wall), ...slabs, ...hairs);

  // What the walls hold, named in bands (setBands): each band solid up to the wall's top
  // and hatched above it, where it no longer fits.
  let bandMeshes = [];
  function setBands(bands) {
    for (const m of bandMeshes) {
      m.parent.remove(m);
      m.geometry.dispose();
      m.material.map?.dispose();
      m.material.dispose();
    }
    bandMeshes = [];
    for (const w of walls) w.fill.visible = !bands;
    let top = 0;
    for (const w of walls) {
      let y = 0;
      for (const band of bands ?? []) {
        const h = band.share * WALL_H;
        const fits = Math.max(0, Math.min(h, WALL_H - y));
        const over = h - fits;
        const colour = String(band.colour).startsWith('--') ? cssColour(band.colour, '#d8c38f') : new THREE.Color(band.colour);
        if (fits > 0) {
          const solid = new THREE.Mesh(new THREE.BoxGeometry(0.56, fits, 0.34), mat(colour));
          solid.position.y = y + fits / 2;
          w.wall.add(solid);
          bandMeshes.push(solid);
        }
        if (over > 0) {
          const tex = stripes(colour);
          tex.repeat.set(1, Math.max(1, over * 1.8)); // stripes about as far apart as the wall is wide
          const out = new THREE.Mesh(new THREE.BoxGeometry(0.56, over, 0.34), new THREE.MeshBasicMaterial({ map: tex }));
          out.position.y = y + fits + over / 2;
          out.userData.over = true;
          w.wall.add(out);
          bandMeshes.push(out);
        }
        y += h;
      }
      top = y;
    }
    return top;
  }

  // The layers a bigger model would add, dashed, stacked from `floor` (over the top of the
  // box), and a red line round the top of the box that stops them.
  const blocked = [];
  let ceiling = null;
  function block(n, floor) {
    if (!ceiling && n > 0) {
      const rim = new THREE.BoxGeometry(BOARD.w - 0.2, 0.01, BOARD.d - 0.3);
      ceiling = new THREE.LineSegments(new THREE.EdgesGeometry(rim), new THREE.LineBasicMaterial({ color: 0xff6b6b }));
      rim.dispose();
      ceiling.position.y = floor - 0.06;
      group.add(ceiling);
    }
    while (blocked.length < n) {
      const slab = dashedSlab();
      slab.userData.rest = floor + blocked.length * (SLAB.h + SLAB.gap) + SLAB.h / 2;
      slab.position.y = slab.userData.rest;
      blocked.push(slab);
      group.add(slab);
    }
    return blocked;
  }

  // Each layer's experts as a row of cells on its front: those this GPU keeps in the
  // experts' yellow, the rest dark and dashed, and a red cut where the row is split.
  let expertRows = [];
  let cut = null; // where one GPU's experts end
  function setExperts({ count, keep }) {
    const cv = document.createElement('canvas');
    cv.width = 32 * count;
    cv.height = 32;
    const g = cv.getContext('2d');
    const yellow = `#${cssColour('--experts', '#f0e442').getHexString()}`;
    for (let i = 0; i < count; i++) {
      const kept = i >= keep[0] && i < keep[1];
      g.fillStyle = kept ? yellow : '#1b2236';
      g.fillRect(32 * i + 3, 4, 26, 24);
      if (!kept) {
        g.setLineDash([5, 4]);
        g.strokeStyle = yellow;
        g.lineWidth = 2;
        g.strokeRect(32 * i + 4, 5, 24, 22);
      }
    }
    const tex = new THREE.CanvasTexture(cv);
    tex.colorSpace = THREE.SRGBColorSpace;
    const face = new THREE.MeshBasicMaterial({ map: tex });
    expertRows = slabs.map((slab) => {
      const row = new THREE.Mesh(new THREE.PlaneGeometry(SLAB.w * 0.96, SLAB.h * 0.86), face);
      row.position.set(0, slab.userData.rest, SLAB.d / 2 + 0.01);
      group.add(row);
      return row;
    });
    // The cut, down every row, where this GPU's experts end and the other's begin.
    const edge = keep[0] > 0 ? keep[0] : keep[1];
    const x = -SLAB.w * 0.48 + (SLAB.w * 0.96 * edge) / count;
    const y0 = slabs[0].userData.rest - SLAB.h;
    const y1 = slabs[slabs.length - 1].userData.rest + SLAB.h;
    cut = new THREE.Mesh(new THREE.BoxGeometry(0.05, y1 - y0, 0.05), new THREE.MeshBasicMaterial({ color: 0xff6b6b }));
    cut.position.set(x, (y0 + y1) / 2, SLAB.d / 2 + 0.04);
    group.add(cut);
  }

  // Waiting (a pipeline's idle stage): a hatched veil over the GPU, and the word.
  let veil = null;
  function setWaiting(on) {
    if (on && !veil) {
      const tex = stripes(new THREE.Color(0x0b1220));
      tex.repeat.set(6, 3);
      veil = new THREE.Mesh(new THREE.PlaneGeometry(BOARD.w, WALL_H + 0.3), new THREE.MeshBasicMaterial({ map: tex, transparent: true, opacity: 0.55, depthWrite: false }));
      veil.position.set(0, (WALL_H + 0.3) / 2, BOARD.d / 2 + 0.05);
      const word = textSprite(t('waiting'), { height: 0.34, colour: '#ffb4b4', bg: 'rgba(8,13,24,0.9)' });
      word.position.set(0, WALL_H * 0.55, 0.05);
      word.material.depthTest = false;
      word.renderOrder = 10;
      veil.add(word);
      group.add(veil);
    }
    if (veil) veil.visible = Boolean(on);
    return Boolean(on);
  }

  let lit = null;
  return {
    group,
    board,
    compute,
    strip,
    walls,
    slabs,
    hairs,
    slabMat,
    blocked,
    setBands,
    setExperts,
    setWaiting,
    block,
    /** Fill both walls to this share of the GPU's memory (a sliver at least). */
    setFill(f) {
      for (const w of walls) {
        w.fill.scale.y = Math.max(0.03, Math.min(1, f) * WALL_H);
        w.fill.position.y = w.fill.scale.y / 2;
      }
    },
    /** Light the cores in the colour of this trace kind's work (null: idle); the kind lit. */
    light(kind) {
      if (kind === lit) return lit;
      lit = kind;
      const hit = phaseOf(kind);
      coreMat.color.copy(hit ? cssColour(hit.colour, '#ffb000') : idle);
      return lit;
    },
    describe: (prefix = '') => [
      { name: `${prefix}gpu`, box: boxOf(board) },
      { name: `${prefix}compute`, box: boxOf(compute) },
      { name: `${prefix}strip`, box: boxOf(strip) },
      ...walls.map((w) => ({ name: `${prefix}wall`, box: boxOf(w.wall) })),
      ...walls.flatMap((w) => w.ticks.map((tick) => ({ name: `${prefix}capacity`, box: boxOf(tick) }))),
      ...slabs.filter((s) => s.visible).map((s) => ({ name: `${prefix}slab`, box: boxOf(s) })),
      ...hairs.filter((x) => x.visible).map((x) => ({ name: `${prefix}more`, box: boxOf(x) })),
      ...blocked.filter((x) => x.visible).map((x) => ({ name: `${prefix}blocked`, box: boxOf(x) })),
      ...bandMeshes.map((x) => ({ name: `${prefix}${x.userData.over ? 'overflow' : 'band'}`, box: boxOf(x) })),
      ...expertRows.map((x) => ({ name: `${prefix}experts`, box: boxOf(x) })),
      ...(cut ? [{ name: `${prefix}cut`, box: boxOf(cut) }] : []),
      ...(veil?.visible ? [{ name: `${prefix}waiting`, box: boxOf(veil) }] : []),
    ],
  };
}
