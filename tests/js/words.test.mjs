// The page's words (static/js/i18n/lang.js wordsFor): t() makes a text in the language at the
// moment it is drawn, picks the form a count needs, writes numbers the language's way, and
// remembers what it made for the leftover check; a form a language has beyond English's two
// comes from its own plural rules. Checked on the shipped English, German and Spanish words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

import { wordsFor } from '../../static/js/i18n/lang.js';
import { stepSentence } from '../../static/js/ui/announce.js';

const LOCALES = new URL('../../scenes/locales/', import.meta.url);
const catalogue = (lang) => Object.assign({}, ...readdirSync(new URL(`${lang}/`, LOCALES))
  .map((f) => JSON.parse(readFileSync(new URL(`${lang}/${f}`, LOCALES), 'utf8'))));

const en = wordsFor('en', catalogue('en'));
const de = wordsFor('de', catalogue('de'));
const es = wordsFor('es', catalogue('es'));
const FORMS = ['live: {n} GPU training', 'live: {n} GPUs training'];

test('English is a locale file like the others, its numbers written the English way', () => {
  assert.equal(en.t('Step {step}: loss {loss}, all {gpus} GPUs agreed on the update.', { step: 1024, loss: en.num(2.8604, 3), gpus: 32 }),
    'Step 1,024: loss 2.860, all 32 GPUs agreed on the update.');
  assert.equal(en.t(FORMS, { n: 1 }, 1), 'live: 1 GPU training');
  assert.equal(en.t(FORMS, { n: 4096 }, 4096), 'live: 4,096 GPUs training');
  assert.ok(en.made.has('live: 4,096 GPUs training'));
  // The English file's words are the ones shown, even where they say it otherwise than the key.
  const edited = wordsFor('en', { ...catalogue('en'), Loss: 'Training loss' });
  assert.equal(edited.t('Loss'), 'Training loss');
});

test('German and Spanish words, counts and numbers, and what t() made is remembered', () => {
  assert.equal(de.t(FORMS, { n: 1 }, 1), 'live: 1 GPU trainiert');
  assert.equal(de.t(FORMS, { n: 4096 }, 4096), 'live: 4.096 GPUs trainieren');
  assert.ok(de.made.has('live: 4.096 GPUs trainieren'));
  assert.equal(de.num(1024.5, 1), '1.024,5');
  assert.equal(es.num(12345.5, 1), '12.345,5');
  const said = es.t('Step {step}: loss {loss}, all {gpus} GPUs agreed on the update.', { step: 41, loss: es.num(2.86, 3), gpus: 32 });
  assert.match(said, /^Paso 41: .*2,860.*32/);
});

test('a language with more forms than English picks its own', () => {
  // Polish: 1 plik, 2 pliki, 5 plików; the English key is the "other" form.
  const pl = wordsFor('pl', { '{n} files': { one: '{n} plik', few: '{n} pliki', many: '{n} plików', other: '{n} pliku' } });
  const files = ['{n} file', '{n} files'];
  assert.deepEqual([1, 2, 5, 22].map((n) => pl.t(files, { n }, n)), ['1 plik', '2 pliki', '5 plików', '22 pliki']);
});

test('a placeholder with no value stays visible, never "undefined"', () => {
  assert.equal(en.t('step {n}', {}), 'step {n}');
  assert.equal(en.num(undefined), '–');
});

test('the step sentence for a screen reader is made by t()', () => {
  assert.equal(stepSentence({ step: 41, loss: 2.86 }, 32), 'Step 41: loss 2.860, all 32 GPUs agreed on the update.');
  assert.equal(stepSentence({ step: 41, loss: 2.86 }, 1), 'Step 41: loss 2.860, 1 GPU updated its weights.');
  assert.equal(stepSentence({ step: 41, loss: 2.86 }, 32, 2),
    'Step 41: loss 2.860, 2 of 32 GPUs down; the run goes on from its last checkpoint.');
});

test('sentences made by t() and put together are marked as made too', () => {
  const de2 = wordsFor('de', catalogue('de'));
  const parts = [de2.t('rolled back to step {step}', { step: 5 }), de2.t('step {n}', { n: 6 })];
  assert.equal(de2.join(parts), 'zurück auf Schritt 5 Schritt 6');
  assert.ok(de2.made.has('zurück auf Schritt 5 Schritt 6'));
});

test('a number with decimals keeps as many as it has, at most three, written the language\'s way', () => {
  assert.equal(de.t("needs {x}× this GPU's memory", { x: 1.5 }), 'braucht 1,5× den Speicher dieser GPU');
  assert.equal(en.t("needs {x}× this GPU's memory", { x: 12.3456 }), "needs 12.346× this GPU's memory");
  assert.equal(es.t('{p}% full', { p: 88 }), '88 % llena');
});
