// GPU 1 up close, in the scene itself: pulled out in front of its server and drawn large
// (its board, compute block, memory walls and layers: body3d.js), the strip of cores lit in
// the colour of the work GPU 1 is doing at this moment of the live step (its lane of the
// trace), the walls filled to scale with GPU 1's live memory account, and a lid over it all
// that lifts to show the inside. Chapters mount it closed (what a GPU is made of) or open
// (what is stored where); with reduced motion the lid is simply open or shut. A chapter
// about the model sets its layers (setLayers): each slab drops in from above the lid, with
// hairlines over the top one once all have landed. The walls hold what the chapter sets
// (setFill: a share of the GPU's memory), else GPU 1's live account. Each piece says what it
// is and where (describe()) for the page's test hook.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { disposeTree, textSprite } from '../scene/util.js';
import { gpuBody, SLAB, WALL_H } from './body3d.js';
import { GUESS_AT, showGuess } from './guess3d.js';
import { OPEN_AT, openLayer } from './layer3d.js';
import { mountPair, PAIR_X } from './pair3d.js';
import { mountStack, STAGE_H } from './stack3d.js';
import { batchTrays, TRAY } from './batch3d.js';
import { boxOf, cssColour } from './parts3d.js';
import { stepInside } from './stepinside.js';
import { span } from './values.js';

const LID_SHUT = WALL_H + 0.18;
const LID_S = 1.2; // the lid's lift, in seconds
const DROP = { from: 1.6, s: 0.5 }; // a slab falls this far, over this long

/** Mount the close-up on the stage: mountGpu3d({ getStage, store, reduced, open }) ->
 * { update(), leave(), info() }, or null when there is no 3D stage. */
export function mountGpu3d({ getStage, store, reduced, open = false, layers = 0, stepping = false, trays = 0, prompt = null, batch = null, pair = null, blocked = 0, layer = null, split = null, stack = null, guess = null, caption = null }) {
  const stage = getStage?.();
  const lay = stage?.layout?.();
  const g = lay?.gpus?.[0];
  if (!stage?.addOverlay || !g) return null;
  const root = new THREE.Group();
  root.name = 'gpu-close-up';
  const zFront = Math.max(...lay.gpus.map((x) => x.z)) + 3.4;
  root.position.set(g.x, 0, zFront);

  const mat = (colour, extra = {}) => new THREE.MeshLambertMaterial({ color: colour, ...extra });
  const body = gpuBody({ layers });
  const { slabs, hairs } = body;

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
  root.add(body.group, hinge, ...names);

  // The layers: up to `layers` slabs, shown one by one (setLayers), each landing on the one
  // below; hairlines over the top one say the stack goes on.
  for (const slab of slabs) slab.userData.fall = 1; // 1 above the lid, 0 landed
  let shownLayers = 0;
  // A chapter about the step, about two GPUs or inside a layer: every layer in place.
  if (stepping || pair || layer || split || batch) {
    shownLayers = layers;
    for (const slab of slabs) {
      slab.visible = true;
      slab.userData.fall = 0;
    }
  }
  const inside = stepping && layers
    ? stepInside({ parent: root, slabs, size: { w: SLAB.w, h: SLAB.h, d: SLAB.d }, colour: cssColour, at3: [0, 0.05, 2.75], trays })
    : null;
  const twin = pair && layers ? mountPair({ root, layers: slabs, mode: pair, reduced, requestRender: () => stage.requestRender() }) : null;
  // Chapter 19 on: each GPU keeps its range of every layer's experts ({count, keep: [[lo,
  // hi) for GPU 1, ... for GPU 2]}), named over it, and the pair named under one bracket.
  if (split) {
    [body, ...(twin ? [twin.body] : [])].forEach((b, i) => {
      const keep = split.keep[i];
      if (!keep) return;
      b.setExperts({ count: split.count, keep });
      if (caption) return; // the caption says what it keeps
      const range = span(keep);
      const kept = name(t('GPU {gpu} keeps experts {range}', { gpu: i + 1, range }), i ? PAIR_X : 0, 0.05, 2.45); // under its name
      kept.material.depthTest = false;
      kept.renderOrder = 10;
      root.add(kept);
    });
    if (twin) root.add(name(t('Expert parallelism · the experts are split'), PAIR_X / 2, WALL_H + 1.3, 0));
  }
  // What the chapter says of this GPU, over it (chapter 29: its share of the team).
  const said = caption ? textSprite(caption, { height: 0.36, bg: 'rgba(8,13,24,0.85)' }) : null;
  if (said) {
    said.position.set(0, WALL_H + 1.2, 0);
    said.material.depthTest = false;
    said.renderOrder = 10;
    root.add(said);
  }
  // Chapters 21 to 23: the pipeline's stages stacked by height over GPU 1 (stack3d.js); no
  // lid, for a GPU stands on top.
  const stacked = stack ? mountStack({ root, roles: stack.roles, gpu1: body, memory: stack.memory, reduced, requestRender: () => stage.requestRender() }) : null;
  if (stacked) hinge.visible = false;
  // Chapter 6: the live probe's guesses as bars over the layers, the error bracketed.
  const guessed = guess ? showGuess({ parent: root, probe: guess }) : null;
  // Chapter 18: the bottom layer opened up over the GPU (layer3d.js).
  const opened = layer && slabs.length ? openLayer({ parent: root, slab: slabs[0], ...layer, reduced, requestRender: () => stage.requestRender() }) : null;
  // The layers a bigger model adds, dashed, on every GPU: they drop onto the top of the box
  // and stop there (and the name of the model they make, over GPU 1).
  const stopped = [body, ...(twin ? [twin.body] : [])].flatMap((b) => b.block(blocked, LID_SHUT + 0.12));
  for (const slab of stopped) slab.userData.fall = reduced() ? 0 : 1;
  const tooBig = textSprite(t("doesn't fit"), { height: 0.4, colour: '#ff8a8a', bg: 'rgba(8,13,24,0.9)' });
  tooBig.visible = false;
  tooBig.material.depthTest = false;
  tooBig.renderOrder = 10;
  root.add(tooBig);
  if (blocked) {
    const wanted = name(t('the model we want · {n} layers', { n: layers + blocked }), 0, LID_SHUT + 0.3 + blocked * (SLAB.h + SLAB.gap), 0);
    wanted.material.depthTest = false; // read over the overflowing walls
    wanted.renderOrder = 10;
    root.add(wanted);
  }

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
    for (const slab of [...slabs, ...stopped]) slab.position.y = slab.userData.rest + DROP.from * slab.userData.fall ** 2;
    for (const hair of hairs) hair.visible = shownLayers === layers && slabs.every((s) => s.userData.fall === 0);
  }
  function animate(now) {
    const dt = last ? (now - last) / 1000 : 0;
    last = now;
    lift = reduced() ? want : want > lift ? Math.min(want, lift + dt / LID_S) : Math.max(want, lift - dt / LID_S);
    for (const slab of [...slabs, ...stopped]) {
      if (slab.visible) slab.userData.fall = reduced() ? 0 : Math.max(0, slab.userData.fall - dt / DROP.s);
    }
    pose();
    placeSlabs();
    stage.requestRender();
    const moving = lift !== want || [...slabs, ...stopped].some((s) => s.visible && s.userData.fall > 0);
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

  // The batch as trays of text at the GPU's door (batch3d.js): the top one the prompt the
  // live probe asks about, the others the live step's texts; split, two under each GPU of
  // the pair, each GPU's own.
  const texts = () => store.state.step?.texts ?? [];
  const split2 = Boolean(batch?.split && twin);
  const batches = batch
    ? [
        batchTrays({ parent: root, side: split2 ? 0 : -1, count: split2 ? 2 : 4, texts, prompt: split2 ? null : prompt, answer: batch.answer, dim: batch.dim, reduced }),
        ...(split2 ? [batchTrays({ parent: root, x0: PAIR_X, side: 0, count: 2, texts, replica: 1, reduced })] : []),
      ]
    : [];

  // The fill: the chapter's share, else GPU 1's memory in use over its capacity, to
  // scale (a thin sliver for the tiny live model, never quite nothing).
  let given = null;
  function fillMemory() {
    const m = store.state.step?.memory?.[0];
    const f = given !== null ? Math.min(1, given) : m?.capacity ? Math.min(1, m.total / m.capacity) : 0;
    body.setFill(f);
    twin?.fill(store.state.step?.memory?.[1]);
    stacked?.update();
    guessed?.update();
    root.userData.memory = f;
    for (const b of batches) b.update();
  }

  // The strip: the colour of GPU 1's work at this moment of the step playing.
  let kind = null;
  const off = stage.onUpdate?.((frame) => {
    inside?.frame(frame);
    kind = body.light(frame?.lane?.(0)?.kind ?? null);
    twin?.frame(frame);
    opened?.frame();
    stacked?.frame(frame);
    for (const b of batches) b.frame(frame);
    if (batches.some((b) => b.moving())) stage.requestRender(); // the tokens' flight goes on
  });

  root.userData.describe = () => [
    ...body.describe(),
    { name: 'lid', box: boxOf(lid) },
    ...(inside?.describe() ?? []),
    ...batches.flatMap((b) => b.describe()),
    ...(twin?.describe() ?? []),
    ...(opened?.describe() ?? []),
    ...(stacked?.describe() ?? []),
    ...(guessed?.describe() ?? []),
    ...(tooBig.visible ? [{ name: 'doesnt-fit', box: boxOf(tooBig) }] : []),
    ...(said ? [{ name: 'caption', box: boxOf(said) }] : []),
  ];
  pose();
  fillMemory();
  stage.addOverlay(root);
  stage.highlight?.(null); // the close-up is the subject: no outline of a part behind it
  // The dive: the camera flies in to the GPU (out again with the next chapter's view).
  // Held while the chapter lasts, so a resize or a panel moving frames it again.
  const column = 2.35 + TRAY.w; // the batch's trays beside a GPU
  const reads = stepping ? 3.4 : 2.6; // room for the readout at its foot, as wide as its words
  const left = batch && !split2 ? column : trays ? 4.3 : reads; // room for the trays beside it
  const right = pair ? PAIR_X + 2.8 : reads; // room for GPU 2 beside it
  const front = split2 ? 3.9 : 3.0; // room for the trays in front
  const top = Math.max(pair || caption ? WALL_H + 1.6 : WALL_H + 1.2, blocked ? LID_SHUT + 0.8 + blocked * (SLAB.h + SLAB.gap) : 0, layer ? OPEN_AT + 2.0 : 0, guess ? GUESS_AT + 2.2 : 0);
  // Inside a layer, the view dives to the opened layer over the GPU's top.
  const rows = stack ? new Set(stack.roles.map((r) => r.stage)).size : 1;
  const wide = stack ? Math.max(...stack.roles.map((r) => stack.roles.filter((x) => x.stage === r.stage).length)) : 1;
  const box = stack
    ? { min: [g.x - 5.4, 0, zFront - 1.6], max: [g.x + (wide - 1) * PAIR_X + 2.6, (rows - 1) * STAGE_H + WALL_H + 1.2, zFront + 2.0] } // the stages' names to the left
    : layer
    ? { min: [g.x - 3.6, WALL_H * 0.5, zFront - 1.0], max: [g.x + 2.6, top, zFront + 1.4] } // the router's name to the left
    : { min: [g.x - left, 0, zFront - 1.6], max: [g.x + right, top, zFront + front] };
  stage.holdView(box, { instant: reduced(), direction: [0.1, 0.42, 1], fill: 0.92 });
  placeSlabs();
  if (want !== lift || stopped.length) setOpen(want === 1);

  return {
    update: fillMemory,
    setOpen,
    setLayers,
    replay: () => twin?.replay(),
    /** Name what every GPU's walls hold, in bands bottom first ([{share, colour}], a share
     * of the GPU's memory each, a colour or the page's colour variable; above the top of
     * the wall they are hatched), or null. */
    setBands(bands) {
      const top = body.setBands(bands);
      twin?.body.setBands(bands);
      // One sign for what spills over, beside the top of the overflow (between the GPUs).
      tooBig.visible = top > WALL_H;
      tooBig.position.set(pair ? PAIR_X / 2 : 2.6, top + 0.15, 0.3);
      stage.requestRender();
    },
    setFill(f) {
      given = Number.isFinite(f) ? f : null;
      fillMemory();
      stage.requestRender();
    },
    info: () => ({ open: lift, lit: kind, memory: root.userData.memory, layers: shownLayers, landed: slabs.filter((s) => s.visible && s.userData.fall === 0).length, step: inside?.info() ?? null, batch: batches.length ? batches.map((b) => b.info()) : null, pair: twin?.info() ?? null, blocked: stopped.filter((s) => s.userData.fall === 0).length, layer: opened?.info() ?? null, stack: stacked?.info() ?? null, guess: guessed?.info() ?? null }),
    leave() {
      cancelAnimationFrame(raf);
      off?.();
      inside?.dispose();
      twin?.dispose();
      opened?.dispose();
      stacked?.dispose();
      for (const b of batches) b.dispose();
      stage.holdView(null, { instant: reduced() }); // and out again: a flight, not a cut
      stage.removeOverlay(root);
      disposeTree(root);
    },
  };
}
