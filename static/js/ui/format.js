// Number formatting with units, shared by the HUD, cards and tour captions, so the same
// quantity always reads the same way on screen, in the page's language (1.5 GB / 1,5 GB):
// the writers of i18n/units.js under the names the page's modules use.
import { bytes, loss, rate, seconds, whole } from '../i18n/units.js';

export const fmtInt = whole;
export const fmtLoss = loss;
export const fmtBytes = bytes;
export const fmtSeconds = seconds;
export const fmtRate = rate;

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
