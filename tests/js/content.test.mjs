// The scene's own texts in the page's language (static/js/i18n/content.js): say() looks the
// English template up in the language's words, fills it as the tour always has ({name}s,
// {name:one|other} count forms, the "not yet" words) and marks what it made, so the
// leftover check passes it. Checked on the shipped German and Spanish words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';

import { NOT_YET, fillTemplate, say, sayFor } from '../../static/js/i18n/content.js';
import { wordsFor } from '../../static/js/i18n/lang.js';
import { unitsFor } from '../../static/js/i18n/units.js';
import { repoJson } from './fixture.mjs';

function catalogue(code) {
  const dir = new URL(`../../scenes/locales/${code}/`, import.meta.url);
  const files = readdirSync(dir).filter((x) => x.endsWith('.json')).sort();
  return Object.assign({}, ...files.map((f) => repoJson(`scenes/locales/${code}/${f}`)));
}

const scene = repoJson('scenes/training-run.json');
const first = scene.tour[0].caption; // "{gpus} simulated {gpus:GPU is|GPUs are} ... {step} {step:step|steps} ..."
const de = wordsFor('de', catalogue('de'));
const es = wordsFor('es', catalogue('es'));
const sayDe = sayFor(de);
const sayEs = sayFor(es);

test('in English the template itself, filled as the tour fills it', () => {
  assert.equal(say(first, { gpus: '8', step: '1,000' }), fillTemplate(first, { gpus: '8', step: '1,000' }));
  assert.match(say(first, { gpus: '1', step: '1' }), /^1 simulated GPU is training .* finished 1 step so far\.$/);
  assert.match(say(first, { gpus: '8', step: '1,000' }), /^8 simulated GPUs are training .* finished 1,000 steps so far\.$/);
  assert.equal(say(''), '');
});

test('in German with its own count forms, its numbers written the German way', () => {
  const n = unitsFor(de.num).whole;
  assert.equal(sayDe(first, { gpus: n(1), step: n(1) }), '1 simulierte GPU trainiert ein kleines Sprachmodell. Bisher hat es 1 Schritt geschafft.');
  // 1.000 is a thousand in German, not one
  assert.equal(sayDe(first, { gpus: n(8), step: n(1000) }), '8 simulierte GPUs trainieren gemeinsam ein kleines Sprachmodell. Bisher hat es 1.000 Schritte geschafft.');
  assert.match(sayEs(first, { gpus: '1', step: '2' }), /^1 GPU simulada entrena .* lleva 2 pasos\.$/);
});

test('what say() made is marked as made in the language', () => {
  const out = sayDe(scene.parts[0].name);
  assert.equal(out, de.words('Data lake'));
  assert.ok(de.made.has(out));
  // A template with no words: not marked, the leftover check names it
  assert.equal(sayDe('No words for this {n}', { n: 3 }), 'No words for this 3');
  assert.ok(!de.made.has('No words for this 3'));
});

test('a value that does not exist yet gives the "not yet" words, in the language', () => {
  const ck = scene.tour.find((s) => s.part === 'checkpoints');
  const values = { checkpoint_every: '5', checkpoint_step: '–', [NOT_YET]: new Set(['checkpoint_step']) };
  assert.match(say(ck.caption, values, ck.caption_not_yet), /^Every so often .* every 5 steps\. No checkpoint yet/);
  const de0 = sayDe(ck.caption, values, ck.caption_not_yet);
  assert.equal(de0, de.words(ck.caption_not_yet).replace('{checkpoint_every}', '5'));
  assert.ok(de.made.has(de0));
  values[NOT_YET] = new Set();
  values.checkpoint_step = '10';
  assert.match(sayDe(ck.caption, values, ck.caption_not_yet), /Schritt 10/);
});

test('every tour text is said in German and Spanish, for one and for many', () => {
  const every = (n) => new Proxy({}, { has: () => true, get: (_, k) => (typeof k === 'symbol' ? undefined : n) });
  for (const [code, w] of [['de', de], ['es', es]]) {
    for (const stop of scene.tour) {
      const texts = [stop.caption, stop.caption_not_yet, stop.more, stop.ask?.question, stop.ask?.answer, stop.ask?.answer_not_yet];
      for (const text of texts.filter(Boolean)) {
        assert.equal(typeof w.words(text), 'string', `${code} lacks words for ${text}`);
        for (const n of ['1', '7']) assert.doesNotMatch(sayFor(w)(text, every(n)), /[{}]/, text);
      }
    }
  }
});

test("a number written the language's way is marked as made", () => {
  // The scale field's buttons: num() writes 16.384 in German and Spanish, which tr(),
  // reading English, would otherwise turn into 16,384 (sixteen point three).
  assert.equal(de.num(16384), '16.384');
  assert.equal(es.num(16384), '16.384');
  assert.equal(es.num(4096), '4096');
  assert.ok(de.made.has('16.384') && es.made.has('16.384'));
});
