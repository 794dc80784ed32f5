// GPU 1 up close, in the scene itself: pulled out in front of its server and drawn large.
// A board; the compute block in the middle with a strip of cores on top that lights in the
// colour of the work GPU 1 is doing at this moment of the live step (its lane of the trace);
// a memory wall either side, with a tick at each quarter of the memory and a fill to scale
// with GPU 1's live memory account; and a lid over it all that lifts to show the inside.
// Chapters mount it closed (what a GPU is made of) or open (what is stored where); with
// reduced motion the lid is simply open or shut. A chapter about the model sets its layers
// (setLayers): slabs stacked between the walls, each dropping in from above the lid, with
// hairlines over the top one where a real model stacks dozens more. The walls hold what the
// chapter sets (setFill: a share of the GPU's memory), else GPU 1's live account. Each piece says what it is and where (describe()) for the
// page's test hook.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { disposeTree, textSprite } from '../scene/util.js';
import { boxOf, cssColour, phaseOf, tray } from './parts3d.js';
import { stepInside } from './stepinside.js';

const CORES = 16;
const WALL_H = 2.2;
const LID_SHUT = WALL_H + 0.18;
const LID_S = 1.2; // the lid's lift, in seconds
const SLAB = { w: 2.1, h: 0.24, d: 1.3, gap: 0.1, floor: 0.72 }; // a layer, stacked from the compute block
const DROP = { from: 1.6, s: 0.5 }; // a slab falls this far, over this long
const HAIRLINES = 3;

/** Mount the close-up on the stage: mountGpu3d({ getStage, store, reduced, open }) ->
 * { update(), leave(), info() }, or null when there is no 3D stage. */
export function mountGpu3d({ getStage, store, reduced, open = false, layers = 0, stepping = false, trays = 0, prompt = null }) {
  const stage = getStage?.();
  const lay = stage?.layout?.();
  const g = lay?.gpus?.[0];
  if (!stage?.addOverlay || !g) return null;
  const root = new THREE.Group();
  root.name = 'gpu-close-up';
  const zFront = Math.max(...lay.gpus.map((x) => x.z)) + 3.4;
  root.position.set(g.x, 0, zFront);

  const mat = (colour, extra = {}) => new THREE.MeshLambertMaterial({ color: colour, ...extra });
  const board = new THREE.Mesh(new THREE.BoxGeometry(4.2, 0.16, 2.6), mat(0x1d2b45));
  board.position.y = 0.08;
  const compute = new THREE.Mesh(new THREE.BoxGeometry(1.5, 0.34, 1.5), mat(0x3b4a66));
  compute.position.y = 0.33;
  // The cores: one row of cells on the compute block, lit where work happens.
  const coreGeo = new THREE.BoxGeometry(0.07, 0.06, 1.2);
  const idle = new THREE.Color(0x263149);
  const coreMat = new THREE.MeshBasicMaterial({ color: idle });
  const strip = new THREE.InstancedMesh(coreGeo, coreMat, CORES);
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

  const lid = new THREE.Mesh(
    new THREE.BoxGeometry(4.3, 0.1, 2.7),
    mat(0xaab6d0, { transparent: true, opacity: 0.6, depthWrite: false }),
  );
  const hinge = new THREE.Group(); // the lid turns up about its back edge
  hinge.position.set(0, LID_SHUT, -1.35);
  lid.position.set(0, 0, 1.35);
  hinge.add(lid);

  const name = (words, x, y, z) => {
    const s = textSprite(words, { height: 0.36 });
    s.position.set(x, y, z);
    return s;
  };
  const names = [name(t('GPU {n}', { n: 1 }), 0, 0.35, 1.75), name(t('compute cores'), 0, 0.95, 1.0), name(t('memory'), -1.55, WALL_H + 0.65, 0.6), name(t('memory'), 1.55, WALL_H + 0.65, 0.6)];
  root.add(board, compute, strip, ...walls.map((w) => w.wall), hinge, ...names);

  // The layers: up to `layers` slabs, shown one by one (setLayers), each landing on the one
  // below; hairlines over the top one say the stack goes on.
  const slabMat = new THREE.MeshLambertMaterial({ color: 0x9d8fd6 }); // the weights' lavender
  const slabs = Array.from({ length: layers }, (_, i) => {
    const slab = new THREE.Mesh(new THREE.BoxGeometry(SLAB.w, SLAB.h, SLAB.d), slabMat);
    slab.userData.rest = SLAB.floor + i * (SLAB.h + SLAB.gap) + SLAB.h / 2;
    slab.userData.fall = 1; // 1 above the lid, 0 landed
    slab.visible = false;
    root.add(slab);
    return slab;
  });
  const hairTop = SLAB.floor + layers * (SLAB.h + SLAB.gap);
  const hairMat = new THREE.MeshBasicMaterial({ color: 0xc9d4e8 });
  const hairs = layers ? Array.from({ length: HAIRLINES }, (_, i) => {
    const hair = new THREE.Mesh(new THREE.BoxGeometry(SLAB.w * 0.9, 0.025, SLAB.d * 0.9), hairMat);
    hair.position.y = hairTop + i * 0.09;
    hair.visible = false;
    root.add(hair);
    return hair;
  }) : [];
  let shownLayers = 0;
  // A chapter about the step: every layer in place, and the step drawn through them.
  if (stepping) {
    shownLayers = layers;
    for (const slab of slabs) {
      slab.visible = true;
      slab.userData.fall = 0;
    }
  }
  const inside = stepping && layers
    ? stepInside({ parent: root, slabs, size: { w: SLAB.w, h: SLAB.h, d: SLAB.d }, colour: cssColour, at3: [0, 0.05, 2.75], trays })
    : null;

  // The lid: 0 shut, 1 open; moved towards `want` over LID_S unless motion is reduced.
  let lift = open && reduced() ? 1 : 0;
  let want = open ? 1 : 0;
  let raf = 0;
  let last = 0;
  function pose() {
    hinge.rotation.x = -0.95 * lift;
    hinge.position.y = LID_SHUT + 0.5 * lift;
    lid.material.opacity = 0.6 * (1 - 0.85 * lift); // it lifts off and fades
    for (const n of names.slice(1)) n.visible = lift > 0.5;
  }
  function placeSlabs() {
    for (const slab of slabs) slab.position.y = slab.userData.rest + DROP.from * slab.userData.fall ** 2;
    for (const hair of hairs) hair.visible = shownLayers === layers && slabs.every((s) => s.userData.fall === 0);
  }
  function animate(now) {
    const dt = last ? (now - last) / 1000 : 0;
    last = now;
    lift = reduced() ? want : want > lift ? Math.min(want, lift + dt / LID_S) : Math.max(want, lift - dt / LID_S);
    for (const slab of slabs) {
      if (slab.visible) slab.userData.fall = reduced() ? 0 : Math.max(0, slab.userData.fall - dt / DROP.s);
    }
    pose();
    placeSlabs();
    stage.requestRender();
    const moving = lift !== want || slabs.some((s) => s.visible && s.userData.fall > 0);
    raf = moving ? requestAnimationFrame(animate) : 0;
  }
  function play() {
    if (!raf) {
      last = 0;
      raf = requestAnimationFrame(animate);
    }
  }
  function setOpen(on) {
    want = on ? 1 : 0;
    play();
  }
  /** Show the first n layers; a newly shown one drops in from above. */
  function setLayers(n) {
    shownLayers = Math.max(0, Math.min(layers, n));
    slabs.forEach((slab, i) => {
      const on = i < shownLayers;
      if (on && !slab.visible) slab.userData.fall = reduced() ? 0 : 1;
      slab.visible = on;
    });
    placeSlabs();
    play();
  }

  // The prompt the live probe asks about ("Once upon a ___"), as a tray of text at the GPU's
  // side: the model's own words, in English on every page.
  const promptTray = prompt ? tray(1.9, [-3.3, 0.1, 0.6]) : null;
  let promptSaid = null;
  if (promptTray) root.add(promptTray.mesh);
  function showPrompt() {
    const text = promptTray ? prompt() : null;
    if (!text || text === promptSaid) return;
    promptSaid = text;
    promptTray.label(`${text} ___`, { y: 0.3, verbatim: true });
    stage.requestRender();
  }

  // The fill: the chapter's share, else GPU 1's memory in use over its capacity, to
  // scale (a thin sliver for the tiny live model, never quite nothing).
  let given = null;
  function fillMemory() {
    const m = store.state.step?.memory?.[0];
    const f = given !== null ? Math.min(1, given) : m?.capacity ? Math.min(1, m.total / m.capacity) : 0;
    for (const w of walls) {
      w.fill.scale.y = Math.max(0.03, f * WALL_H);
      w.fill.position.y = w.fill.scale.y / 2;
    }
    root.userData.memory = f;
    showPrompt();
  }

  // The strip: the colour of GPU 1's work at this moment of the step playing.
  let kind = null;
  const off = stage.onUpdate?.((frame) => {
    inside?.frame(frame);
    const k = frame?.lane?.(0)?.kind ?? null;
    if (k === kind) return;
    kind = k;
    const hit = phaseOf(k);
    coreMat.color.copy(hit ? cssColour(hit.colour, '#ffb000') : idle);
  });

  root.userData.describe = () => [
    { name: 'gpu', box: boxOf(board) },
    { name: 'compute', box: boxOf(compute) },
    { name: 'strip', box: boxOf(strip) },
    ...walls.map((w) => ({ name: 'wall', box: boxOf(w.wall) })),
    ...walls.flatMap((w) => w.ticks.map((tick) => ({ name: 'capacity', box: boxOf(tick) }))),
    { name: 'lid', box: boxOf(lid) },
    ...slabs.filter((s) => s.visible).map((s) => ({ name: 'slab', box: boxOf(s) })),
    ...hairs.filter((x) => x.visible).map((x) => ({ name: 'more', box: boxOf(x) })),
    ...(inside?.describe() ?? []),
    ...(promptTray ? [{ name: 'tray', box: boxOf(promptTray.mesh) }] : []),
  ];
  pose();
  fillMemory();
  stage.addOverlay(root);
  // The dive: the camera flies in to the GPU (out again with the next chapter's view).
  // Held while the chapter lasts, so a resize or a panel moving frames it again.
  const left = trays || prompt ? 4.3 : 2.6; // room for the trays beside it
  stage.holdView({ min: [g.x - left, 0, zFront - 1.6], max: [g.x + 2.6, WALL_H + 1.2, zFront + 3.0] }, { instant: reduced(), direction: [0.1, 0.42, 1], fill: 0.92 });
  placeSlabs();
  if (want !== lift) setOpen(want === 1);

  return {
    update: fillMemory,
    setOpen,
    setLayers,
    setFill(f) {
      given = Number.isFinite(f) ? f : null;
      fillMemory();
      stage.requestRender();
    },
    info: () => ({ open: lift, lit: kind, memory: root.userData.memory, layers: shownLayers, landed: slabs.filter((s) => s.visible && s.userData.fall === 0).length, step: inside?.info() ?? null, prompt: promptSaid }),
    leave() {
      cancelAnimationFrame(raf);
      off?.();
      inside?.dispose();
      stage.holdView(null, { instant: reduced() }); // and out again: a flight, not a cut
      stage.removeOverlay(root);
      disposeTree(root);
    },
  };
}
