// Words for the server's English (static/js/i18n/translate.js makeTranslator, lang.js tr()):
// put into German and Spanish with the real locale words (scenes/locales/<lang>/*.json), the
// numbers in filled-in lines written the language's way, and what must stay as it is left alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';

import { makeTranslator } from '../../static/js/i18n/translate.js';
import { LANGS, lang, tr } from '../../static/js/i18n/lang.js';
import { repoJson } from './fixture.mjs';

/** A language's words, every area merged, as GET /api/locale/<lang> serves them. */
function catalogue(code) {
  const dir = new URL(`../../scenes/locales/${code}/`, import.meta.url);
  const words = {};
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.json')).sort()) {
    Object.assign(words, repoJson(`scenes/locales/${code}/${f}`));
  }
  return words;
}

const de = makeTranslator('de', catalogue('de'));
const es = makeTranslator('es', catalogue('es'));
const en = makeTranslator('en', {});

test('numbers the way each language writes them', () => {
  // German: a point groups thousands, a comma marks the decimals.
  assert.equal(de.number('1,024.5 ms'), '1.024,5 ms');
  assert.equal(de.number('131,072 GPUs'), '131.072 GPUs');
  // and a space before the percent sign, as Intl writes it (a space that does not break).
  assert.equal(de.number('99%'), '99\u00a0%');
  assert.equal(es.number('+20% over 80 GB'), '+20\u00a0% over 80 GB');
  assert.equal(en.number('99%'), '99%');
  assert.equal(de.number('2.50 s'), '2,50 s'); // the decimals shown are kept
  // Spanish (CLDR): a comma for decimals, and a four-figure number is not grouped.
  assert.equal(es.number('1,024.5 ms'), '1024,5 ms');
  assert.equal(es.number('16,384 GPUs'), '16.384 GPUs');
  // English is the page's own: unchanged.
  assert.equal(en.number('1,024.5 ms'), '1,024.5 ms');
});

test('addresses, versions, times of day and links keep their numbers', () => {
  for (const t of ['http://127.0.0.1:8000/?join=1', '192.168.1.20', '10:30', 'v1.2.3', '/api/steps/1024/trace']) {
    assert.equal(de.text(t), t, t);
  }
});

test('filled-in lines match their pattern, with their numbers re-written', () => {
  assert.equal(de.text('chapter 3 of 29'), 'Kapitel 3 von 29');
  assert.equal(es.text('chapter 3 of 29'), 'capítulo 3 de 29');
  assert.equal(de.text('GPU 3 failed at step 1,024'), 'GPU 3 ist in Schritt 1.024 ausgefallen');
  assert.equal(es.text('GPU 3 failed at step 1,024'), 'La GPU 3 falló en el paso 1024');
  // A line built from another filled-in line: the speed is itself a pattern.
  assert.equal(de.text('running · 4 steps/s'), 'läuft · 4 Schritte/s');
  assert.equal(es.text('running · 1 step/s'), 'en marcha · 1 paso/s');
});

test('a pattern fits only when what it captured is a number, a name or words of its own', () => {
  const t = makeTranslator('de', {
    Loss: 'Verlust',
    'GPU {n}': 'GPU {n}',
    'The model bets on "{top_word}"': 'Das Modell setzt auf "{top_word}"',
  });
  assert.equal(t.text('  Loss '), '  Verlust '); // the spaces round it are kept
  assert.equal(t.text('GPU 3'), 'GPU 3');
  assert.equal(t.text('GPU H100 SXM'), 'GPU H100 SXM');
  // "GPU 3 failed" is not "GPU {n}" with n = "3 failed": it found no words.
  assert.equal(t.translate('GPU 3 failed'), undefined);
  // The model's own word is kept as it is, even one the locale has words for.
  assert.equal(t.text('The model bets on "Loss"'), 'Das Modell setzt auf "Loss"');
  assert.deepEqual([...t.misses.keys()], ['GPU 3 failed']);
});

test('under Node the page speaks English until told otherwise', () => {
  assert.equal(lang, 'en');
  assert.equal(tr('Loss'), 'Loss');
  assert.deepEqual(Object.keys(LANGS), ['en', 'de', 'es']);
});
