// The story's 64-GPU team (chapters 24 to 26) as one block in the scene: a row per pipeline
// stage, stacked by height as in chapters 21 to 23 (stage 1 at the bottom), a GPU per column,
// each a small closed box in front of the servers, from the run's roles. GPU 1 is lit and
// named; each row says its stage and layers. Chapter 24 ("Deeper") draws each stage two GPUs
// wide, under "Pipeline parallelism · 8 stages" and a check: "32 layers fit"; chapter 25
// ("Wider") every GPU, the columns headed by the experts each keeps (1–8 to 57–64); chapter
// 26 ("One step") colours every box with the work its GPU is doing at this moment of the
// live step (its lane of the trace: forward, backward, waiting, the update).

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { disposeTree, textSprite } from '../scene/util.js';
import { addCopies } from './copies3d.js';
import { boxOf, cssColour, phaseOf } from './parts3d.js';
import { span } from './values.js';

const CELL = { w: 1.1, h: 0.6, d: 0.9 }; // one GPU
const PITCH = { x: 1.35, y: 0.95, z: 1.3 }; // the next column, the next stage, the next copy
const IDLE = 0x5a6a8c;

/** The team's GPUs the block draws ([{gpu, stage, experts, layers}]): the first data-
 * parallel copy's, each stage `per` wide (all of them when per is 0), ordered by GPU. */
export function teamCells(roles, plan, per = 0) {
  const team = roles.filter((r) => r.dp < (plan?.ep ?? 1)).sort((a, b) => a.gpu - b.gpu);
  const col = new Map();
  return team.flatMap((r) => {
    const c = col.get(r.stage) ?? 0;
    col.set(r.stage, c + 1);
    return per && c >= per ? [] : [{ ...r, col: c }];
  });
}

/** Mount the block: mountTeam({stage, roles, plan, config, per, live, copies, reduced}) ->
 * { update(), info(), leave() }, or null with no 3D stage or no roles. `per`: GPUs drawn a
 * stage (0: all of them); `copies`: the block and its mirrors behind it (copies3d.js). */
export function mountTeam({ stage, roles, plan, config, per = 0, live = false, copies = 1, reduced = () => false }) {
  const lay = stage?.layout?.();
  const g = lay?.gpus?.[0];
  if (!stage?.addOverlay || !g || !roles?.length) return null;
  const deep = per > 0;
  const cells = teamCells(roles, plan, per);
  const root = new THREE.Group();
  root.name = 'team-block';
  // In front of the servers; copies (chapter 27) stand behind the block, so it comes forward.
  const zFront = Math.max(...lay.gpus.map((x) => x.z)) + 3.4 + (copies - 1) * PITCH.z;
  root.position.set(g.x, 0, zFront);

  const mesh = new THREE.InstancedMesh(new THREE.BoxGeometry(CELL.w, CELL.h, CELL.d), new THREE.MeshLambertMaterial({ color: 0xffffff }), cells.length);
  const centre = (c) => [c.col * PITCH.x, CELL.h / 2 + c.stage * PITCH.y, 0]; // in the block
  const at = new THREE.Matrix4();
  cells.forEach((c, i) => mesh.setMatrixAt(i, at.makeTranslation(...centre(c))));
  root.add(mesh);
  const colours = {
    idle: new THREE.Color(IDLE),
    gpu1: cssColour('--accent', '#56b4e9'),
    forward: cssColour('--forward', '#e69f00'),
    backward: cssColour('--backward', '#cc79a7'),
    wait: cssColour('--waiting', '#8a94a6').multiplyScalar(0.45), // dim: nothing to do
    update: cssColour('--update', '#d8c38f'),
  };
  const kinds = cells.map(() => null);
  const shown = new Set(); // every kind a box has taken since it was drawn
  function paint(i, k) {
    kinds[i] = k;
    shown.add(k);
    mesh.setColorAt(i, k === 'idle' && cells[i].gpu === 0 ? colours.gpu1 : colours[k] ?? colours.idle);
  }
  cells.forEach((_, i) => paint(i, 'idle'));
  mesh.instanceColor.needsUpdate = true;

  const sprites = [];
  const label = (words, x, y, z, opts = {}) => {
    const s = textSprite(words, { height: 0.34, bg: 'rgba(8,13,24,0.85)', ...opts });
    s.position.set(x, y, z);
    s.material.depthTest = false; // read over the block and whatever stands behind
    s.renderOrder = 10;
    root.add(s);
    sprites.push(s);
    return s;
  };
  const stages = [...new Set(cells.map((c) => c.stage))].sort((a, b) => a - b);
  const wide = Math.max(...stages.map((s) => cells.filter((c) => c.stage === s).length));
  for (const st of stages) {
    const l = cells.find((c) => c.stage === st).layers;
    const s = label(t(['Stage {stage} · layer {layers}', 'Stage {stage} · layers {layers}'], { stage: st + 1, layers: span(l) }, l[1] - l[0]), -CELL.w / 2 - 0.2, CELL.h / 2 + st * PITCH.y, 0.5, { height: 0.3 });
    s.center.set(1, 0.5);
  }
  const top = stages.length * PITCH.y + 0.35;
  const one = label(t('GPU {n}', { n: 1 }), 0, -0.25, CELL.d / 2 + 0.3, { height: 0.3 });
  one.userData.piece = 'gpu1-name';
  if (!deep) {
    for (const c of cells.filter((x) => x.stage === stages[0])) {
      if (c.experts?.[1] > c.experts?.[0]) label(span(c.experts), c.col * PITCH.x, top, 0, { height: 0.28 });
    }
  }
  const n = cells.length;
  const head = deep
    ? t('Pipeline parallelism · {pp} stages of {per} GPUs: {gpus} in all · {layers} layers fit', { pp: stages.length, per: wide, gpus: n, layers: config?.n_layer ?? 0 })
    : t('{gpus} GPUs · {pp} stages · experts split {ep} ways', { gpus: n, pp: stages.length, ep: plan?.ep ?? 1 });
  label(head, ((wide - 1) * PITCH.x) / 2, top + (deep ? 0.3 : 0.65), 0, { height: 0.36 });

  // Chapter 26: each box in the colour of its GPU's work at this moment of the step.
  const off = live
    ? stage.onUpdate?.((frame) => {
      let changed = false;
      cells.forEach((c, i) => {
        const kind = frame?.lane?.(c.gpu)?.kind ?? null;
        const k = kind === 'wait' ? 'wait' : phaseOf(kind)?.phase ?? 'idle';
        if (kinds[i] !== k) {
          paint(i, k in colours ? k : 'idle');
          changed = true;
        }
      });
      if (changed) mesh.instanceColor.needsUpdate = true;
    })
    : null;

  // Chapter 27: the block copied behind itself, in a ripple.
  const mirrors = copies > 1 ? addCopies({ root, cells, centre, cell: CELL, pitch: PITCH, copies, plan, reduced }) : null;
  const offRipple = mirrors
    ? stage.onUpdate?.(() => {
      if (mirrors.frame()) stage.requestRender(); // copies still arriving
    })
    : null;

  const half = [CELL.w / 2, CELL.h / 2, CELL.d / 2];
  root.userData.describe = () => [
    ...cells.map((c) => {
      const p = root.localToWorld(new THREE.Vector3(...centre(c)));
      return { name: 'team-gpu', box: { min: [p.x - half[0], p.y - half[1], p.z - half[2]], max: [p.x + half[0], p.y + half[1], p.z + half[2]] } };
    }),
    ...sprites.map((s) => ({ name: s.userData.piece ?? 'team-label', box: boxOf(s) })),
    ...(mirrors?.describe() ?? []),
  ];
  stage.addOverlay(root);
  stage.highlight?.(null);
  const shift = (b) => ({ min: [b.min[0] + g.x, b.min[1], b.min[2] + zFront], max: [b.max[0] + g.x, b.max[1], b.max[2] + zFront] });
  const box = mirrors
    ? shift(mirrors.box())
    : { min: [g.x - 4.2, 0, zFront - 1], max: [g.x + (wide - 1) * PITCH.x + 1.2, top + 1.0, zFront + 1.4] };
  stage.holdView(box, { instant: reduced(), direction: mirrors ? [0.75, 0.55, 1] : [0.1, 0.3, 1], fill: 0.92 });
  stage.requestRender();

  return {
    update: () => stage.requestRender(),
    info: () => ({ gpus: n, stages: stages.length, wide, kinds: [...new Set(kinds)].sort(), shown: [...shown].sort(), copies: mirrors?.info() ?? null }),
    leave() {
      off?.();
      offRipple?.();
      stage.holdView(null, { instant: reduced() });
      stage.removeOverlay(root);
      disposeTree(root);
    },
  };
}
