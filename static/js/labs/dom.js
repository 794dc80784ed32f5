// Tiny DOM helpers shared by the lab panels: build elements, and an SVG namespace variant.

import { join, num, t } from '../i18n/lang.js';

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
}

const BYTES = [['PB', 1e15], ['TB', 1e12], ['GB', 1e9], ['MB', 1e6], ['KB', 1e3]];
const COUNTS = [['T', 1e12], ['B', 1e9], ['M', 1e6], ['K', 1e3]];
// x in the largest unit it reaches, its figures written by `fig`; below them all, `below`.
const scaled = (x, units, gap, fig, below) => {
  for (const [u, scale] of units) if (x >= scale) return `${fig(x / scale)}${gap}${u}`;
  return below(Math.round(x));
};

/** Decimal units with three significant figures: 1.12 TB, 140 GB, 40 B. */
export function bytes(b) {
  return Number.isFinite(b) ? scaled(b, BYTES, ' ', sig3, (n) => `${n} B`) : '–';
}

export function count(n) {
  return Number.isFinite(n) ? scaled(n, COUNTS, '', sig3, String) : '–';
}

export function sig3(x) {
  return x >= 100 ? String(Math.round(x)) : String(Number(x.toPrecision(3)));
}

export function money(x) {
  if (!Number.isFinite(x)) return '–';
  if (x >= 1e9) return `$${sig3(x / 1e9)} billion`;
  if (x >= 1e6) return `$${sig3(x / 1e6)} million`;
  if (x >= 1e3) return `$${sig3(x / 1e3)} thousand`;
  return `$${x.toFixed(x >= 10 ? 0 : 2)}`;
}

export function plain(x) {
  if (!Number.isFinite(x)) return '–';
  return x >= 100 ? Math.round(x).toLocaleString('en-US') : sig3(x);
}

// The same writers the page's language's way (1,12 TB, 2,5 Mrd. $), marked as made (i18n/units.js).
function sig(x) {
  const d = x >= 100 || !x ? 0 : Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x))));
  return d ? num(Number(x.toPrecision(3)), `up to ${d}`) : num(Math.round(x));
}
const made = (f) => (x) => (Number.isFinite(x) ? join([f(x)]) : '–');
export const local = {
  sig3: made(sig),
  bytes: made((b) => scaled(b, BYTES, ' ', sig, (n) => `${num(n)} B`)),
  count: made((n) => scaled(n, COUNTS, '', sig, num)),
  plain: made((x) => (x >= 100 ? num(Math.round(x)) : sig(x))),
  money: made((x) =>
    x >= 1e9 ? t('${x} billion', { x: sig(x / 1e9) }) : x >= 1e6 ? t('${x} million', { x: sig(x / 1e6) }) : x >= 1e3 ? t('${x} thousand', { x: sig(x / 1e3) }) : t('${x}', { x: num(x, x >= 10 ? 0 : 2) }),
  ),
  /** 3.36e+23, with the language's decimal sign. */
  sci: made((x) => {
    const [m, e] = x.toExponential(2).split('e');
    return `${num(Number(m), 2)}e${e}`;
  }),
};
