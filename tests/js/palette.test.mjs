// One meaning per colour (static/js/scene/palette.js), what each kind of work is called and
// how long slow motion dwells on it (static/js/scene/steptext.js), and the field's shades
// (static/js/scene/field/tones.js), against the engine's list of trace kinds and the scene
// spec's colours.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { KIND_MEANING, makePalette } from '../../static/js/scene/palette.js';
import { SLOW_DEFAULT_S, STEP_TEXT, alsoText, stepText } from '../../static/js/scene/steptext.js';
import { TONES, toneOf } from '../../static/js/scene/field/tones.js';
import { fixture } from './fixture.mjs';

const { kinds } = fixture('traces.json');
const { scene } = fixture('layouts.json');
const spec = { colours: scene.colours, background: scene.background };
const THEMES = ['default', 'projector'];

// ---- colour arithmetic: sRGB -> linear -> CIE Lab, and colour-blind vision -----------------
const lin = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
const rgb = (hex) => [1, 3, 5].map((i) => lin(parseInt(hex.slice(i, i + 2), 16) / 255));
function hsl(hex) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const l = (max + min) / 2;
  const d = max - min;
  if (d === 0) return { h: 0, s: 0, l };
  const s = d / (1 - Math.abs(2 * l - 1));
  const h = max === r ? ((g - b) / d + 6) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
  return { h: h * 60, s, l };
}
function lab([r, g, b]) {
  const X = 0.4124 * r + 0.3576 * g + 0.1805 * b;
  const Y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const Z = 0.0193 * r + 0.1192 * g + 0.9505 * b;
  const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
  const [fx, fy, fz] = [f(X / 0.95047), f(Y), f(Z / 1.08883)];
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}
// Dichromat vision in linear RGB (Viénot, Brettel & Mollon 1999).
const VISION = {
  typical: [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
  protanopia: [[0.11238, 0.88762, 0], [0.11238, 0.88762, 0], [0.00401, -0.00401, 1]],
  deuteranopia: [[0.29275, 0.70725, 0], [0.29275, 0.70725, 0], [-0.02234, 0.02234, 1]],
};
const seen = (m, hex) => lab(m.map((row) => row[0] * rgb(hex)[0] + row[1] * rgb(hex)[1] + row[2] * rgb(hex)[2]));
const deltaE = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
const luminance = (hex) => { const [r, g, b] = rgb(hex); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };

test('every trace kind the engine has is drawn in a meaning colour the palette holds', () => {
  const names = kinds.map((k) => k.kind).sort();
  assert.deepEqual(Object.keys(KIND_MEANING).sort(), names);
  for (const theme of THEMES) {
    const p = makePalette(spec, theme);
    for (const k of names) assert.match(p[KIND_MEANING[k]], /^#[0-9A-Fa-f]{6}$/, `${theme}: ${k}`);
  }
  // The all-reduce is blue however it runs; what a GPU still waits for is waiting, not a transfer.
  assert.equal(KIND_MEANING.allreduce_hidden, KIND_MEANING.allreduce);
  assert.equal(KIND_MEANING.allreduce_wait, KIND_MEANING.wait);
});

test("the scene spec's colours are used, and the fallbacks are the same values", () => {
  for (const theme of THEMES) {
    const withSpec = makePalette(spec, theme);
    const without = makePalette(null, theme);
    for (const [name, c] of Object.entries(spec.colours)) {
      assert.equal(withSpec[name], c[theme], `${theme} ${name}`);
      assert.equal(without[name].toLowerCase(), c[theme].toLowerCase(), `${theme} ${name}: the fallback differs from the spec`);
    }
    assert.equal(withSpec.background, spec.background[theme]);
    assert.equal(withSpec.theme, theme);
  }
  const mine = makePalette({ colours: { forward: { default: '#123456' } } });
  assert.equal(mine.forward, '#123456');
  assert.equal(makePalette(spec, 'no such theme').theme, 'default');
});

test('the colours mean what the design says: amber forward, pink backward, light blue all-reduce, grey waiting, red failure, green saved', () => {
  for (const theme of THEMES) {
    const p = makePalette(spec, theme);
    const h = (name) => hsl(p[name]).h;
    assert.ok(h('forward') >= 30 && h('forward') <= 50, `${theme} forward ${p.forward}`);
    assert.ok(h('backward') >= 300 && h('backward') <= 345, `${theme} backward ${p.backward}`);
    assert.ok(h('allreduce') >= 185 && h('allreduce') <= 215 && hsl(p.allreduce).l > 0.5, `${theme} all-reduce ${p.allreduce}`);
    assert.ok(hsl(p.waiting).s < 0.25, `${theme} waiting ${p.waiting}`);
    assert.ok(h('failure') >= 345 || h('failure') <= 10, `${theme} failure ${p.failure}`);
    assert.ok(h('saved') >= 100 && h('saved') <= 175, `${theme} saved ${p.saved}`);
  }
});

test('for red-green colour-blind viewers the glows still read apart', () => {
  // Forward and backward are both a solid glow (the spec's `shape`), told apart by colour
  // alone; failure must not pass for the forward pass's amber.
  assert.equal(spec.colours.forward.shape, spec.colours.backward.shape);
  for (const theme of THEMES) {
    const p = makePalette(spec, theme);
    for (const [vision, m] of Object.entries(VISION)) {
      for (const [a, b] of [['forward', 'backward'], ['forward', 'failure'], ['backward', 'allreduce'], ['forward', 'saved']]) {
        const d = deltaE(seen(m, p[a]), seen(m, p[b]));
        assert.ok(d >= 20, `${theme}, ${vision}: ${a} and ${b} only ${d.toFixed(1)} apart`);
      }
    }
  }
});

test('a dark background by default, black on the projector, and text that stands out on both', () => {
  const def = makePalette(spec);
  const proj = makePalette(spec, 'projector');
  assert.ok(luminance(def.background) < 0.02);
  assert.equal(luminance(proj.background), 0);
  for (const p of [def, proj]) {
    // WCAG contrast ratio of the scene's text on its background: 7:1 or more (level AAA).
    const ratio = (luminance(p.text) + 0.05) / (luminance(p.background) + 0.05);
    assert.ok(ratio >= 7, `${p.theme}: ${ratio}`);
  }
  // On a washed-out projector the GPUs are lighter than in the default theme, and read on
  // black as text would need to: the dies at least 7:1, the packages at least 4.5:1 (WCAG).
  assert.ok(luminance(proj.gpu) > luminance(def.gpu));
  const contrast = (a, b) => (Math.max(luminance(a), luminance(b)) + 0.05) / (Math.min(luminance(a), luminance(b)) + 0.05);
  assert.ok(contrast(proj.gpuIdle, proj.background) >= 7, `${contrast(proj.gpuIdle, proj.background)}`);
  assert.ok(contrast(proj.gpu, proj.background) >= 4.5, `${contrast(proj.gpu, proj.background)}`);
});

test('failure red stands far apart from the forward amber and the backward pink', () => {
  const rgb255 = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const dist = (a, b) => Math.hypot(...rgb255(a).map((v, i) => v - rgb255(b)[i]));
  for (const theme of THEMES) {
    const p = makePalette(spec, theme);
    assert.ok(dist(p.failure, p.forward) >= 130, `${theme}: ${dist(p.failure, p.forward)}`);
    assert.ok(dist(p.failure, p.backward) >= 100, `${theme}: ${dist(p.failure, p.backward)}`);
  }
});

test('every trace kind has words for the class and a dwell of several seconds', () => {
  for (const { kind } of kinds) {
    const t = stepText(kind);
    assert.equal(t, STEP_TEXT[kind], kind);
    assert.ok(t.name.length > 2 && t.caption.split(' ').length >= 6, kind);
    assert.ok(t.slowS >= 2.5 && t.slowS <= 6, `${kind}: ${t.slowS} s`);
  }
  assert.deepEqual(Object.keys(STEP_TEXT).sort(), kinds.map((k) => k.kind).sort());
  // A kind this table does not know is named by its id and gets the default dwell.
  assert.deepEqual(stepText('future_kind'), { name: 'future_kind', caption: '', slowS: SLOW_DEFAULT_S });
});

test("what else goes on in a block is listed in order, the block's own kind left out", () => {
  const kindsIn = new Set(['wait', 'p2p', 'forward', 'tp_allreduce']);
  assert.equal(alsoText(kindsIn, 'forward'), 'Pipeline hand-off · Tensor-parallel join · Waiting for a turn');
  assert.equal(alsoText(new Set(['forward']), 'forward'), '');
  assert.equal(alsoText(null, 'forward'), '');
  assert.equal(alsoText(new Set(['data', 'optimizer']), 'data'), ''); // not worth naming beside
});

test('the field takes one shade per tenfold of steps', () => {
  assert.equal(toneOf(0), -1);
  assert.equal(toneOf(-5), -1);
  assert.equal(toneOf(NaN), -1);
  for (let e = 0; e < TONES.length; e++) {
    assert.equal(toneOf(10 ** e), e, `${10 ** e}`);
    assert.equal(toneOf(10 ** (e + 1) - 1), e, `${10 ** (e + 1) - 1}`);
  }
  assert.equal(toneOf(10 ** 12), TONES.length - 1);
  // From a cold grey-blue to a warm green: the hue moves one way, from blue towards yellow.
  const hues = TONES.map((c) => hsl(c).h);
  for (let i = 1; i < hues.length; i++) assert.ok(hues[i] < hues[i - 1], `${TONES[i]} after ${TONES[i - 1]}`);
});
