// Quantities with units in the page's language (static/js/i18n/units.js): the same steps as
// ui/format.js's English writers, with the language's decimal comma and grouping.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { wordsFor } from '../../static/js/i18n/lang.js';
import { unitsFor } from '../../static/js/i18n/units.js';
import { fmtBytes, fmtInt, fmtRate, fmtSeconds } from '../../static/js/ui/format.js';

const en = unitsFor(wordsFor('en').num);
const de = unitsFor(wordsFor('de').num);

test('in English they read as ui/format.js writes them', () => {
  for (const b of [0, 512, 1500, 99_999, 1.5e9, 2.25e12]) assert.equal(en.bytes(b), fmtBytes(b));
  for (const s of [0, 3e-9, 4.2e-7, 3.3e-5, 0.0042, 0.25, 17.531]) assert.equal(en.seconds(s), fmtSeconds(s));
  for (const x of [12, 9999, 12_345, 2.5e6, 3.1e9]) assert.equal(en.rate(x), fmtRate(x));
  for (const n of [0, 7, 1024, 131072]) assert.equal(en.whole(n), fmtInt(n));
  assert.equal(en.bytes(null), '–');
  assert.equal(en.bytes(999_999), '1 MB'); // ui/format.js wrote "1000 KB"
  assert.equal(en.bytes(7e15), '7,000 TB');
});

test('in German with a decimal comma, grouping dots and a spaced percent sign', () => {
  assert.equal(de.bytes(1.5e9), '1,5 GB');
  assert.equal(de.bytes(2e9), '2 GB');
  assert.equal(de.seconds(17.531), '17,53 s');
  assert.equal(de.seconds(0.0042), '4,20 ms');
  assert.equal(de.whole(131072), '131.072');
  assert.equal(de.rate(2.5e6), '2,5 M');
  assert.equal(de.percent(0.99), '99\u00a0%');
  assert.equal(en.percent(0.123, 1), '12.3%');
  assert.equal(de.loss(2.8604), '2,860');
});
