// The model's guess over GPU 1's close-up (gpu3d.js), for chapter 6: at the top of the
// layers, a bar for each of the live probe's five best next tokens, as tall as its
// probability, under a line at "certain" (100 %); and a pink bracket from the top of the
// "time" bar up to that line: the error, how far "time" falls short of certain.

import * as THREE from 'three';
import { textSprite } from '../scene/util.js';
import { WALL_H } from './body3d.js';
import { boxOf, cssColour, resprite } from './parts3d.js';

export const GUESS_AT = WALL_H + 1.25; // the bars' base, their words over the walls' names
const TALL = 1.8; // a certain token's bar
const PITCH = 0.8;

/** showGuess({parent, probe}) -> {update(), info(), describe()}: probe() is the live probe. */
export function showGuess({ parent, probe }) {
  const group = new THREE.Group();
  group.name = 'guess';
  group.position.y = GUESS_AT;
  const certain = new THREE.Mesh(new THREE.BoxGeometry(PITCH * 5 + 0.4, 0.03, 0.03), new THREE.MeshBasicMaterial({ color: 0xc9d4e8 }));
  certain.position.y = TALL;
  const pink = cssColour('--backward', '#cc79a7');
  const amber = cssColour('--forward', '#e69f00');
  const bars = Array.from({ length: 5 }, (_, i) => {
    const bar = new THREE.Mesh(new THREE.BoxGeometry(PITCH * 0.6, 1, 0.4), new THREE.MeshLambertMaterial({ color: 0x8fa3c8 }));
    bar.position.x = (i - 2) * PITCH;
    bar.userData.word = null;
    return bar;
  });
  const bracket = new THREE.Mesh(new THREE.BoxGeometry(0.08, 1, 0.08), new THREE.MeshBasicMaterial({ color: pink }));
  bracket.visible = false;
  group.add(certain, ...bars, bracket);
  parent.add(group);
  let words = [];
  let error = null;

  function update() {
    const top = probe()?.top ?? [];
    error = null;
    bars.forEach((bar, i) => {
      const g = top[i];
      bar.visible = Boolean(g);
      if (!g) return;
      const h = Math.max(0.02, g.p * TALL);
      bar.scale.y = h;
      bar.position.y = h / 2;
      bar.material.color.copy(g.token === 'time' ? amber : new THREE.Color(0x8fa3c8));
      if (bar.userData.word !== g.token) {
        bar.userData.word = g.token;
        // The model's own English word, under its bar.
        words[i] = resprite(group, words[i], textSprite(g.token, { height: 0.3, verbatim: true }));
        words[i].position.set(bar.position.x, -0.25, 0.3);
      }
      if (g.token === 'time') {
        error = 1 - g.p;
        bracket.visible = error > 0;
        bracket.scale.y = Math.max(0.01, error * TALL);
        bracket.position.set(bar.position.x + PITCH * 0.36, h + (error * TALL) / 2, 0);
      }
    });
    if (error === null) bracket.visible = false;
    words = words.slice(0, 5);
  }
  update();

  return {
    update,
    info: () => ({ bars: bars.filter((b) => b.visible).map((b) => b.userData.word), top: (probe()?.top ?? []).slice(0, 5).map((g) => ({ token: g.token, p: g.p })), error }),
    describe: () => [
      { name: 'certain', box: boxOf(certain) },
      ...bars.filter((b) => b.visible).map((b) => ({ name: b.userData.word === 'time' ? 'bar-time' : 'bar', box: boxOf(b) })),
      ...(bracket.visible ? [{ name: 'error', box: boxOf(bracket) }] : []),
    ],
  };
}
