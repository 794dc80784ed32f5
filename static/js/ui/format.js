// Number formatting with units, shared by the HUD, cards and tour captions, so the same
// quantity always reads the same way on screen.

export function fmtInt(n) {
  if (n === null || n === undefined || !Number.isFinite(Number(n))) return '–';
  return Math.round(Number(n)).toLocaleString('en-US');
}

const EN_PLURAL = new Intl.PluralRules('en-US');

/** A count and its noun agreeing in number: "1 GPU", "2 GPUs", "1,024 steps". The page
 * writes English; the translator puts each form into the page's language. */
export function fmtCount(n, one, other = `${one}s`) {
  return `${fmtInt(n)} ${EN_PLURAL.select(Math.round(Number(n))) === 'one' ? one : other}`;
}

export function fmtLoss(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  return x.toFixed(3);
}

export function fmtBytes(b) {
  if (b === null || b === undefined || !Number.isFinite(b)) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = b;
  let i = 0;
  while (Math.abs(v) >= 1000 && i < units.length - 1) {
    v /= 1000;
    i += 1;
  }
  const shown = v >= 100 || i === 0 ? String(Math.round(v)) : v.toFixed(1).replace(/\.0$/, '');
  return `${shown} ${units[i]}`;
}

export function fmtSeconds(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  const a = Math.abs(s);
  if (a === 0) return '0 s';
  if (a < 1e-6) return `${(s * 1e9).toFixed(a < 1e-8 ? 1 : 0)} ns`;
  if (a < 1e-3) return `${(s * 1e6).toFixed(a < 1e-5 ? 1 : 0)} µs`;
  if (a < 1) return `${(s * 1e3).toFixed(a < 1e-2 ? 2 : 1)} ms`;
  return `${s.toFixed(2)} s`;
}

export function fmtRate(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  if (x >= 1e9) return `${(x / 1e9).toFixed(1)} B`;
  if (x >= 1e6) return `${(x / 1e6).toFixed(1)} M`;
  if (x >= 1e4) return `${(x / 1e3).toFixed(1)} k`;
  return Math.round(x).toLocaleString('en-US');
}

export function fmtSpeed(speed) {
  if (speed === 'lesson') return 'lesson pace';
  if (speed === 'max') return 'full speed';
  if (typeof speed === 'number') return `${speed} step${speed === 1 ? '' : 's'}/s`;
  return '';
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}
