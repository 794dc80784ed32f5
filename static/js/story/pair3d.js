// GPU 2 beside GPU 1 in the close-up (gpu3d.js), for the chapters about data parallelism.
// 'copy': a socket is traced beside GPU 1, GPU 2 drops into it empty, and each of GPU 1's
// layers is copied across in turn (the copy lifts, slides over into the same slot and stays
// tied back by a thread) until an equals sign settles between the two. 'apart': what if
// each copy learned alone? A dashed frame round the pair, GPU 2's layers in another shade,
// and a not-equal sign. 'together': the equals sign, and at the live step's all-reduce
// (GPU 1's lane of the trace) a bead of gradients leaves each layer of both GPUs, the two
// meet in the gap, merge into one and go back to both. With reduced motion the copy is
// simply done and the beads sit merged in the gap while the all-reduce lasts. 'twin': the
// two GPUs side by side, equal, for what the chapter adds to both. 'travel': as 'twin', and at
// each exchange of tokens with the experts (the all-to-all) a bead of each GPU's numbers
// crosses to the other GPU and comes back.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { textSprite } from '../scene/util.js';
import { BOARD, gpuBody, SLAB, WALL_H } from './body3d.js';
import { boxOf, cssColour, phaseOf, resprite } from './parts3d.js';

export const PAIR_X = 5.6; // GPU 2's centre, from GPU 1's
const GAP = PAIR_X / 2; // the middle of the gap between them
// The copy's clock, in seconds: the socket traced, GPU 2 landing in it, then each layer.
const COPY = { socket: 0.6, land: 0.6, start: 1.4, layer: 0.9 };
const OTHER_TONE = 0x58b8a8; // GPU 2's layers when they learn alone
const BURST_MS = 1100; // a burst of beads on screen: out, merged, back

const ease = (x) => (x <= 0 ? 0 : x >= 1 ? 1 : x * x * (3 - 2 * x));

function dashed(geometry, colour) {
  const lines = new THREE.LineSegments(new THREE.EdgesGeometry(geometry), new THREE.LineDashedMaterial({ color: colour, dashSize: 0.18, gapSize: 0.12 }));
  lines.computeLineDistances();
  geometry.dispose();
  return lines;
}

/**
 * mountPair({root, layers, mode, reduced, requestRender}) -> {frame(f), fill(memory), replay(), info(), describe(), dispose()}
 * @param root the close-up's group (GPU 1 at its origin); layers GPU 1's slabs, all landed
 * @param mode 'copy' | 'apart' | 'together' | 'twin' | 'travel'
 */
export function mountPair({ root, layers, mode, reduced, requestRender }) {
  const group = new THREE.Group();
  group.name = 'gpu-pair';
  const n = layers.length;
  const body = gpuBody({ layers: n });
  body.group.position.x = PAIR_X;
  const name = textSprite(t('GPU {n}', { n: 2 }), { height: 0.36 });
  name.position.set(PAIR_X, 0.35, 1.75);
  group.add(body.group, name);

  // The socket GPU 2 arrives in: its board's outline, traced on the floor.
  const socket = dashed(new THREE.BoxGeometry(BOARD.w + 0.2, 0.02, BOARD.d + 0.2), 0x9fb2d8);
  socket.position.set(PAIR_X, 0.01, 0);
  group.add(socket);

  // The copy: one slab in flight at a time, a thread from each layer to its copy.
  const ghost = new THREE.Mesh(new THREE.BoxGeometry(SLAB.w, SLAB.h, SLAB.d), new THREE.MeshLambertMaterial({ color: 0xc7bdf0 }));
  ghost.visible = false;
  const threadMat = new THREE.LineBasicMaterial({ color: 0xc9d4e8, transparent: true, opacity: 0.7 });
  const threads = layers.map((slab) => {
    const y = slab.userData.rest;
    const g = new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(SLAB.w / 2, y, 0), new THREE.Vector3(PAIR_X - SLAB.w / 2, y, 0)]);
    const line = new THREE.Line(g, threadMat);
    line.visible = false;
    return line;
  });
  group.add(ghost, ...threads);

  // The sign between the two: an arrow while the copy runs, then equals (or not equal).
  let sign = null;
  let said = null;
  function setSign(text) {
    if (text === said) return;
    said = text;
    const colour = text === '=' ? '#3ddbb0' : text === '≠' ? '#ffd166' : '#c9d4e8';
    sign = resprite(group, sign, textSprite(text, { height: 1.2, verbatim: true, colour }));
    sign.position.set(GAP, WALL_H + 0.3, 0.2); // over the gap the beads meet in
  }

  // 'apart': the dashed "what if" frame round the pair, and GPU 2 in another shade.
  let frameBox = null;
  if (mode === 'apart') {
    frameBox = dashed(new THREE.BoxGeometry(PAIR_X + BOARD.w + 0.8, WALL_H + 1.0, BOARD.d + 0.8), 0xffd166);
    frameBox.position.set(GAP, (WALL_H + 1.0) / 2, 0);
    const tag = textSprite(t('what if'), { height: 0.42, colour: '#ffd166' });
    tag.position.set(-BOARD.w / 2 + 0.6, WALL_H + 1.25, 0);
    const words = textSprite(t('two different models'), { height: 0.32, bg: 'rgba(8,13,24,0.9)' });
    words.position.set(GAP, WALL_H * 0.5, 0.2);
    frameBox.userData.words = words;
    group.add(frameBox, tag, words);
    body.slabMat.color.setHex(OTHER_TONE);
  }
  // What the pair is doing, over it.
  const doing = { together: () => t('Data parallelism · copies share the work'), travel: () => t('Tokens cross to the experts on the other GPU, and back') }[mode];
  const caption = doing ? textSprite(doing(), { height: 0.32, bg: 'rgba(8,13,24,0.9)' }) : null;
  if (caption) {
    caption.position.set(GAP, WALL_H + (mode === 'travel' ? 1.9 : 1.1), 0); // over the split's name
    group.add(caption);
  }

  // 'together': the beads, one from each GPU's layer, meeting in the gap. 'travel': the
  // tokens' numbers, one from each GPU's layer, crossing to the experts on the other GPU.
  const travel = mode === 'travel';
  const beadMat = new THREE.MeshBasicMaterial({ color: travel ? cssColour('--experts', '#f0e442') : cssColour('--allreduce', '#56b4e9') });
  const beadGeo = new THREE.SphereGeometry(0.13, 12, 8);
  const beads = mode === 'together' || travel
    ? layers.map((slab) => [0, 1].map(() => {
      const bead = new THREE.Mesh(beadGeo, beadMat);
      bead.position.y = slab.userData.rest;
      bead.visible = false;
      group.add(bead);
      return bead;
    }))
    : [];
  // A step's all-reduce starts a burst of beads. The tiny model's all-reduce lasts
  // microseconds of a millisecond step (the time bar shows it to scale), so a burst takes at
  // least BURST_MS on screen to be seen; one starting while another plays is not drawn.
  let burst = null; // when the burst on screen began (performance.now()), or null
  let wasIn = false; // the last frame was in the all-reduce
  let beadAt = null; // how far through its burst the beads are (null: none out)
  let beadFrames = 0; // frames drawn with beads out

  root.add(group);

  // The copy plays on its own clock from the chapter's start; the other modes start done.
  let copied = mode === 'copy' && !reduced() ? 0 : n;
  let arrived = mode === 'copy' && !reduced() ? 0 : 1;
  let raf = 0;
  let t0 = 0;
  function placeCopy(s) {
    arrived = ease((s - COPY.socket) / COPY.land);
    body.group.position.y = 2.6 * (1 - arrived) ** 2;
    body.group.visible = s >= COPY.socket;
    name.visible = arrived >= 1;
    ghost.visible = false;
    copied = 0;
    for (let i = 0; i < n; i++) {
      const u = (s - COPY.start - i * COPY.layer) / COPY.layer; // this layer's copy, 0..1
      const done = u >= 1;
      body.slabs[i].visible = done;
      threads[i].visible = u >= 0.3;
      if (done) copied += 1;
      else if (u >= 0) {
        // Lift off GPU 1's layer, slide across at that height, settle into the slot.
        const y = layers[i].userData.rest;
        ghost.visible = true;
        ghost.position.set(PAIR_X * ease((u - 0.25) / 0.55), y + 0.5 * Math.sin(Math.PI * Math.min(1, u / 0.9)), 0);
      }
    }
    setSign(copied >= n ? '=' : '→');
  }
  function tick(now) {
    if (!t0) t0 = now;
    const s = (now - t0) / 1000;
    placeCopy(s);
    requestRender();
    raf = copied < n ? requestAnimationFrame(tick) : 0;
  }
  if (copied < n) raf = requestAnimationFrame(tick);
  else {
    for (const slab of body.slabs) slab.visible = true;
    for (const thread of threads) thread.visible = mode === 'copy';
    setSign(mode === 'apart' ? '≠' : '=');
  }

  /** A frame of the live step: GPU 2's cores lit from its lane; the beads at the all-reduce. */
  function frame(f) {
    body.light(f?.lane?.(1)?.kind ?? null);
    if (!beads.length) return;
    const now = performance.now();
    const kind = f?.lane?.(0)?.kind;
    const inAllReduce = travel
      ? kind === 'all_to_all' || f?.phase === 'all_to_all'
      : phaseOf(kind)?.phase === 'allreduce' || phaseOf(f?.phase)?.phase === 'allreduce';
    if (inAllReduce && !wasIn && burst === null) burst = now;
    wasIn = inAllReduce;
    let p = burst === null ? null : (now - burst) / BURST_MS;
    if (p !== null && p >= 1) p = burst = null;
    if (reduced()) p = inAllReduce ? 0.5 : null; // merged in the gap while it lasts
    beadAt = p;
    if (p !== null) beadFrames += 1;
    // Out to the gap (to 0.45), merged there (to 0.55), and back to both GPUs; travelling,
    // across to the other GPU and back, never merged.
    const out = p === null ? 0 : p < 0.45 ? ease(p / 0.45) : p < 0.55 ? 1 : 1 - ease((p - 0.55) / 0.45);
    const merged = !travel && p !== null && p >= 0.45 && p < 0.55;
    const reach = travel ? PAIR_X - SLAB.w : GAP - SLAB.w / 2; // how far a bead goes
    for (const [a, b] of beads) {
      a.visible = p !== null;
      b.visible = p !== null && !merged;
      a.position.x = SLAB.w / 2 + reach * out;
      b.position.x = PAIR_X - SLAB.w / 2 - reach * out;
      if (travel) b.position.z = a.position.z + 0.3; // two lanes, to pass each other
      a.scale.setScalar(merged ? 1.4 : 1);
    }
  }

  return {
    frame,
    body,
    /** Play the copy again from an empty GPU 2 (the chapter's "do it"). */
    replay() {
      if (mode !== 'copy' || reduced()) return;
      cancelAnimationFrame(raf);
      t0 = 0;
      copied = 0;
      raf = requestAnimationFrame(tick);
    },
    /** GPU 2's walls, filled to its live memory account. */
    fill(m) {
      body.setFill(m?.capacity ? m.total / m.capacity : 0);
    },
    info: () => ({ mode, arrived, copied, sign: said, beads: beadAt, beadFrames }),
    describe: () => [
      ...(body.group.visible ? body.describe('gpu2-') : []),
      { name: 'socket', box: boxOf(socket) },
      ...(ghost.visible ? [{ name: 'copy', box: boxOf(ghost) }] : []),
      ...threads.filter((x) => x.visible).map((x) => ({ name: 'thread', box: boxOf(x) })),
      ...(sign ? [{ name: 'sign', box: boxOf(sign) }] : []),
      ...(frameBox ? [{ name: 'what-if', box: boxOf(frameBox) }] : []),
      ...(caption ? [{ name: 'caption', box: boxOf(caption) }] : []),
      ...beads.flat().filter((x) => x.visible).map((x) => ({ name: 'bead', box: boxOf(x) })),
    ],
    /** Stop the copy's clock (the close-up disposes of the pieces with its own). */
    dispose() {
      cancelAnimationFrame(raf);
    },
  };
}
