// Quantities with their units, written the page's language's way (1.5 GB / 1,5 GB): the
// values t() puts into its sentences, and the cells that hold a number alone (ui/format.js
// gives them the names the page's modules use; docs/languages.md).
import { join, num as pageNum } from './lang.js';

/** The unit writers over one number writer: `num(x, digits)` from wordsFor() or lang.js. */
export function unitsFor(num) {
  const whole = (n) => (n === null || n === undefined || !Number.isFinite(Number(n)) ? '–' : num(Math.round(Number(n))));
  function bytes(b) {
    if (b === null || b === undefined || !Number.isFinite(b)) return '–';
    const units = ['B', 'KB', 'MB', 'GB', 'TB'];
    let v = b;
    let i = 0;
    // 999,999 B is 1 MB, not "1,000 KB": the unit steps up on the rounded value
    while (Math.abs(v) >= 999.5 && i < units.length - 1) {
      v /= 1000;
      i += 1;
    }
    const shown = v >= 100 || i === 0 ? num(Math.round(v)) : num(Math.round(v * 10) / 10, 'up to 1');
    return `${shown} ${units[i]}`;
  }
  function seconds(s) {
    if (s === null || s === undefined || !Number.isFinite(s)) return '–';
    const a = Math.abs(s);
    if (a === 0) return '0 s';
    if (a < 1e-6) return `${num(s * 1e9, a < 1e-8 ? 1 : 0)} ns`;
    if (a < 1e-3) return `${num(s * 1e6, a < 1e-5 ? 1 : 0)} µs`;
    if (a < 1) return `${num(s * 1e3, a < 1e-2 ? 2 : 1)} ms`;
    return `${num(s, 2)} s`;
  }
  function rate(x) {
    if (x === null || x === undefined || !Number.isFinite(x)) return '–';
    if (x >= 1e9) return `${num(x / 1e9, 1)} B`;
    if (x >= 1e6) return `${num(x / 1e6, 1)} M`;
    if (x >= 1e4) return `${num(x / 1e3, 1)} k`;
    return whole(x);
  }
  /** A share: 0.123 -> "12.3 %" in German, "12.3%" in English (Intl's percent style). */
  const percent = (x, digits = 0) => (Number.isFinite(Number(x)) ? num(Number(x), { percent: digits }) : '–');
  return { whole, bytes, seconds, rate, percent, loss: (x) => (Number.isFinite(x) ? num(x, 3) : '–') };
}

// On the page each writer's text is marked as made in the language (join), for the leftover
// check, even where it stands alone in a cell.
const page = Object.fromEntries(Object.entries(unitsFor((x, digits) => pageNum(x, digits))).map(([k, f]) => [k, (...a) => join([f(...a)])]));
export const { whole, bytes, seconds, rate, percent, loss } = page;
