// Number formatting with units (static/js/ui/format.js, the page's language's way: English under Node; the labs' static/js/labs/dom.js, the
// story's words for big counts in static/js/story/values.js): decimal SI units, the figures
// the rule says, and a dash for what is not a number.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { fmtBytes, fmtInt, fmtLoss, fmtRate, fmtSeconds } from '../../static/js/ui/format.js';
import { bytes, count, money, plain, sig3 } from '../../static/js/labs/dom.js';
import { PENDING, bigCount, span } from '../../static/js/story/values.js';

const NOT_NUMBERS = [null, undefined, NaN, Infinity, -Infinity];
const SI = ['B', 'KB', 'MB', 'GB', 'TB'];

test('what is not a number reads as a dash', () => {
  for (const f of [fmtInt, fmtLoss, fmtBytes, fmtSeconds, fmtRate, bytes, count, money, plain]) {
    for (const x of NOT_NUMBERS) assert.equal(f(x), '–', `${f.name}(${x})`);
  }
});

test('bytes in decimal units: the number shown times its unit is the bytes, to the figures shown', () => {
  for (let e = 0; e <= 14.5; e += 0.25) {
    const b = Math.round(10 ** e);
    const text = fmtBytes(b);
    const m = /^(\d+(?:\.\d)?) (B|KB|MB|GB|TB)$/.exec(text.replace(/,/g, ''));
    assert.ok(m, `${b} -> ${text}`);
    const unit = SI.indexOf(m[2]);
    const v = Number(m[1]);
    // The unit is the largest that keeps the number at 1 or more (up to TB).
    assert.equal(unit, Math.min(4, Math.floor(Math.log10(b) / 3 + 1e-12)), `${b} -> ${text}`);
    assert.ok(v >= 1 && (v < 1000 || unit === 4), `${b} -> ${text}`);
    // One decimal under 100, none from 100 on: within half of the last figure shown.
    const step = v >= 100 || unit === 0 ? 1 : 0.1;
    assert.ok(Math.abs(b / 1000 ** unit - v) <= step / 2 + 1e-9, `${b} -> ${text}`);
  }
  assert.equal(fmtBytes(0), '0 B');
  assert.equal(fmtBytes(1000), '1 KB'); // 1 KB is 1000 B, and a whole number loses its ".0"
  assert.equal(fmtBytes(1500), '1.5 KB');
  assert.equal(fmtBytes(80e9), '80 GB');
  assert.equal(fmtBytes(3.2e15), '3,200 TB'); // nothing past TB
  assert.equal(fmtBytes(999_999), '1 MB'); // the unit steps up on the rounded value
});

test('seconds from nanoseconds to seconds, each in the unit that reads best', () => {
  const UNIT = { ns: 1e-9, 'µs': 1e-6, ms: 1e-3, s: 1 };
  for (let e = -9; e <= 1.5; e += 0.25) {
    const s = 3 * 10 ** e;
    const m = /^(\d+(?:\.\d+)?) (ns|µs|ms|s)$/.exec(fmtSeconds(s));
    assert.ok(m, `${s} -> ${fmtSeconds(s)}`);
    const v = Number(m[1]);
    // The unit keeps the number between 1 and 1000 (seconds go on past it).
    assert.ok(v >= 1 && (v < 1000 || m[2] === 's'), `${s} -> ${fmtSeconds(s)}`);
    // At least two significant figures, and within rounding of the value.
    const decimals = (m[1].split('.')[1] ?? '').length;
    assert.ok(Math.abs(v * UNIT[m[2]] - s) <= (0.5 * 10 ** -decimals) * UNIT[m[2]] * (1 + 1e-9), `${s} -> ${fmtSeconds(s)}`);
    assert.ok(m[1].replace('.', '').replace(/^0+/, '').length >= 2, `${s} -> ${fmtSeconds(s)}`);
  }
  assert.equal(fmtSeconds(0), '0 s');
  assert.equal(fmtSeconds(40e-9), '40 ns');
  assert.equal(fmtSeconds(450e-6), '450 µs');
  assert.equal(fmtSeconds(0.0123), '12.3 ms');
  assert.equal(fmtSeconds(2.5), '2.50 s');
  assert.equal(fmtSeconds(-0.0123), '-12.3 ms');
});

test('counts group their thousands with commas; rates say k, M and B', () => {
  assert.equal(fmtInt(1234567.4), '1,234,567');
  assert.equal(fmtInt('2048'), '2,048');
  assert.equal(fmtInt(999), '999');
  assert.equal(fmtLoss(2.34567), '2.346');
  assert.equal(fmtRate(2.5e9), '2.5 B');
  assert.equal(fmtRate(3.25e6), '3.3 M');
  assert.equal(fmtRate(12345), '12.3 k');
  assert.equal(fmtRate(9999), '9,999');
});

test("the labs' figures keep three significant figures", () => {
  // labs/dom.js: "Decimal units with three significant figures: 1.12 TB, 140 GB, 40 B."
  assert.equal(bytes(1.1234e12), '1.12 TB');
  assert.equal(bytes(140e9), '140 GB');
  assert.equal(bytes(40), '40 B');
  assert.equal(bytes(2.5e15), '2.5 PB');
  for (const x of [1.23456, 12.3456, 123.456, 0.0123456, 99.95]) {
    const shown = Number(sig3(x));
    assert.ok(Math.abs(shown - x) <= 0.5 * 10 ** (Math.floor(Math.log10(x)) - 2) * (1 + 1e-9), `${x} -> ${sig3(x)}`);
  }
  assert.equal(count(70e9), '70B');
  assert.equal(count(405e9), '405B');
  assert.equal(count(1.5e12), '1.5T');
  assert.equal(count(999), '999');
  assert.equal(money(2.5e9), '$2.5 billion');
  assert.equal(money(12_300_000), '$12.3 million');
  assert.equal(money(4500), '$4.5 thousand');
  assert.equal(money(7.5), '$7.50');
  assert.equal(plain(123456), '123,456');
  assert.equal(plain(3.14159), '3.14');
});

test("the story's big counts in words, and ranges counted from 1", () => {
  // values.js: "875,000,000 -> 875 million, 7e9 -> 7 billion".
  assert.equal(bigCount(875_000_000), '875 million');
  assert.equal(bigCount(7e9), '7 billion');
  assert.equal(bigCount(1.5e12), '1.5 trillion');
  assert.equal(bigCount(70.6e9), '70.6 billion');
  assert.equal(bigCount(12345), '12,345');
  assert.equal(bigCount(NaN), PENDING);
  // [first, last + 1): [0, 8] is GPUs 1 to 8; [7, 8] is GPU 8 alone.
  assert.equal(span([0, 8]), '1–8');
  assert.equal(span([7, 8]), '8');
  assert.equal(span([4, 6]), '5–6');
});
