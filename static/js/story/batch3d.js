// The batch as trays of text beside a GPU of the close-up (gpu3d.js), the seed's chapters 5,
// 8, 12 and 14: a column of trays at the GPU's door, the top one the prompt the live probe
// asks about ("Once upon a ___"), the others the texts the live step really trained on
// (step.texts, each cut to its first words). When the step's forward pass begins, the top
// tray's tokens enter the door one after another. With `answer` the blank is filled once
// the backward pass has noted what the text said, and every tray gets a tick (its gradients
// are in); with `dim` the trays are empty outlines, '+ more' (a fresh run has read nothing
// yet). `replica` picks whose texts: the pair's GPU 2 reads replica 1's. The model's words
// stay in English on every page; with reduced motion the tokens do not fly.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { disposeTree, textSprite } from '../scene/util.js';
import { BOARD } from './body3d.js';
import { boxOf, phaseOf, tray as makeTray } from './parts3d.js';

export const TRAY = { w: 2.9, d: 0.9, rise: 0.5 }; // a tray (parts3d.js), and the column's step up
const CHARS = 22; // a text is cut to its first words within this many characters
const FLY_S = 0.45; // one token's trip from the tray to the door, in seconds
const ANSWER = 'time'; // what the texts say after "Once upon a"

/** A text's first words, within CHARS, and '…' where it goes on. */
export function firstWords(text, chars = CHARS) {
  const words = String(text ?? '').replace(/^[.,!?;:]+\s*/, '').split(/\s+/).filter(Boolean); // from its first word
  let out = '';
  for (const w of words) {
    if (out && out.length + 1 + w.length > chars) return `${out} …`;
    out = out ? `${out} ${w}` : w.slice(0, chars);
  }
  return out;
}

/**
 * batchTrays({parent, x0, side, count, texts(), prompt(), answer, dim, replica, reduced}) ->
 *   {update(), frame(frame), moving(), info(), describe(), dispose()}
 * @param x0 the GPU's x in the group; side -1: the column stands at its left, by the door, 0:
 *   the trays lie in a row in front of it, under it as the camera sees it
 * @param texts() the live step's texts ([{replica, text}]); prompt() the probe's prompt
 */
export function batchTrays({ parent, x0 = 0, side = -1, count = 4, texts, prompt = null, answer = false, dim = false, replica = 0, reduced = () => false }) {
  const group = new THREE.Group();
  group.name = 'batch';
  const cx = x0 + side * (BOARD.w / 2 + 0.2 + TRAY.w / 2);
  // Where tray i lies: a column by the door (the first on top), or a row in front.
  const place = (i) => (side ? [cx, 0.1 + (count - 1 - i) * TRAY.rise, 0.55] : [x0, 0.08, BOARD.d / 2 + 0.75 + i * (TRAY.d + 0.15)]);
  // The door the prompt's tokens go in by, on the GPU's side facing the trays.
  const door = prompt ? new THREE.Mesh(new THREE.BoxGeometry(0.08, 0.5, 0.7), new THREE.MeshBasicMaterial({ color: 0x0b1220 })) : null;
  if (door) {
    door.position.set(x0 + side * (BOARD.w / 2 + 0.02), 0.42, 0.55);
    door.add(new THREE.LineSegments(new THREE.EdgesGeometry(door.geometry), new THREE.LineBasicMaterial({ color: 0xe6c870 })));
    group.add(door);
  }
  const trays = Array.from({ length: count }, (_, i) => {
    const part = makeTray(TRAY.w, place(i));
    const { mesh } = part;
    if (dim) {
      Object.assign(mesh.material, { transparent: true, opacity: 0.18, depthWrite: false }); // an outline
      mesh.add(new THREE.LineSegments(new THREE.EdgesGeometry(mesh.geometry), new THREE.LineBasicMaterial({ color: 0x8fa3c8 })));
    }
    group.add(mesh);
    return { part, mesh, said: null, tick: null };
  });
  const more = dim ? textSprite(t('+ more'), { height: 0.4, colour: '#c9d4ea', bg: 'rgba(8,13,24,0.9)' }) : null;
  if (more) {
    more.material.depthTest = false; // read over whatever of the scene stands behind
    more.renderOrder = 10;
    more.position.set(...place(-1)).setY(0.1 + count * TRAY.rise);
    group.add(more);
  }
  parent.add(group);

  // The top tray's tokens on their way in: one sprite each, sent in turn.
  let flying = [];
  let entered = 0; // tokens that reached the door since the chapter began
  let flights = 0; // forward passes whose tokens set off
  let noted = false; // the backward pass has been through this step
  let phase = null;

  function write(tray, text) {
    if (text === tray.said) return;
    tray.said = text;
    tray.part.label(text, { height: 0.3, y: 0.2, verbatim: true }); // the model's own words
  }
  function setTick(tray, on) {
    if (on && !tray.tick) {
      tray.tick = new THREE.Mesh(new THREE.BoxGeometry(0.34, 0.06, 0.06), new THREE.MeshBasicMaterial({ color: 0xcc79a7 }));
      tray.tick.position.set(-TRAY.w / 2 + 0.3, -0.1, TRAY.d / 2 + 0.04); // under the text's start
      tray.mesh.add(tray.tick);
    }
    if (tray.tick) tray.tick.visible = on;
  }

  /** The trays' words from the live step and probe (none while the run is fresh). */
  function update() {
    if (dim) return;
    const asked = prompt?.();
    const own = (texts?.() ?? []).filter((x) => (x.replica ?? 0) === replica).map((x) => x.text);
    trays.forEach((tray, i) => {
      const text = own[asked ? i - 1 : i]; // the prompt's tray first, where there is one
      if (i === 0 && asked) write(tray, `${asked} ${answer && noted ? ANSWER : '___'}`);
      else write(tray, text ? firstWords(text) : null);
      setTick(tray, answer && noted);
    });
  }

  function launch() {
    const words = String(prompt() ?? '').split(/\s+/).filter(Boolean);
    const from = trays[0].mesh.position;
    const now = performance.now();
    words.forEach((w, i) => {
      const s = textSprite(w, { height: 0.24, verbatim: true, colour: '#ffd27a' });
      s.userData = { from: from.clone().add(new THREE.Vector3(side * -0.3 * (words.length - i), 0.3, 0)), start: now + i * FLY_S * 600 };
      s.position.copy(s.userData.from);
      s.visible = false;
      group.add(s);
      flying.push(s);
    });
    flights += 1;
  }

  /** A frame of the step playing (the stage's onUpdate frame), on GPU `lane`'s clock. */
  function frame(f, lane = 0) {
    const p = phaseOf(f?.lane?.(lane)?.kind)?.phase ?? null;
    if (p && p !== phase) {
      if (p === 'forward' && !(f.lane(lane).mb > 0)) {
        noted = false;
        if (prompt && !dim && !reduced()) launch();
      }
      if (p === 'backward' || p === 'update') noted = true;
      phase = p;
      update();
    }
    if (!flying.length) return;
    const now = performance.now();
    const to = door.position;
    flying = flying.filter((s) => {
      const k = (now - s.userData.start) / (FLY_S * 1000);
      if (k >= 1) {
        group.remove(s);
        s.material.map?.dispose();
        s.material.dispose();
        entered += 1;
        return false;
      }
      s.visible = k >= 0;
      if (k >= 0) s.position.lerpVectors(s.userData.from, to, k).setY(s.userData.from.y + (to.y - s.userData.from.y) * k + Math.sin(Math.PI * k) * 0.4);
      return true;
    });
  }

  update();
  return {
    update,
    frame,
    moving: () => flying.length > 0,
    info: () => ({ texts: trays.map((x) => x.said), ticks: trays.filter((x) => x.tick?.visible).length, entered, flights, flying: flying.filter((s) => s.visible).length, dim }),
    describe: () => [
      ...trays.map((x) => ({ name: 'batch-tray', box: boxOf(x.mesh) })),
      ...(door ? [{ name: 'door', box: boxOf(door) }] : []),
      ...flying.filter((s) => s.visible).map((s) => ({ name: 'token', box: boxOf(s) })),
      ...trays.filter((x) => x.tick?.visible).map((x) => ({ name: 'text-tick', box: boxOf(x.tick) })),
      ...(more ? [{ name: 'plus-more', box: boxOf(more) }] : []),
    ],
    dispose: () => disposeTree(group),
  };
}
