// Small drawing pieces the chapter modules share: elements, a memory wall with capacity
// ticks (and a hatched overflow), a row of 16 weights as dots, a labelled bar.

import { t } from '../i18n/lang.js';
import { h } from '../labs/dom.js';

export { h };

/** A memory wall: `parts` [{name, fraction, label}] stacked from the floor, ticks at each
 * quarter of the usable memory; anything past 1 climbs into a hatched overflow. */
export function wall({ parts, caption, overflowLabel = t("doesn't fit") }) {
  const total = parts.reduce((a, p) => a + p.fraction, 0);
  const top = Math.max(1, total);
  const box = h('div', { class: 'sf-wall', style: `--top:${top}` });
  const col = h('div', { class: 'sf-wall-col' });
  for (const q of [0.25, 0.5, 0.75, 1]) col.append(h('i', { class: `sf-tick${q === 1 ? ' sf-cap' : ''}`, style: `bottom:${(100 * q) / top}%` }));
  let at = 0;
  for (const p of parts) {
    col.append(h('b', { class: `sf-fill sf-${p.name}`, style: `bottom:${(100 * at) / top}%;height:${(100 * p.fraction) / top}%`, title: p.label ?? p.name }));
    at += p.fraction;
  }
  if (total > 1) {
    col.append(h('b', { class: 'sf-over', style: `bottom:${100 / top}%;height:${(100 * (total - 1)) / top}%` }));
    col.append(h('span', { class: 'sf-over-label', style: `bottom:${(100 * (1 + total) / 2) / top}%`, text: overflowLabel }));
  }
  box.append(col, h('span', { class: 'sf-wall-cap', text: caption }));
  box.dataset.total = String(total);
  return box;
}

/** Sixteen weights as dots on a line, placed by value (the spread of all rows given). */
export function dots(rows, { labels = [] } = {}) {
  const all = rows.flat().filter(Number.isFinite);
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  const span = hi - lo || 1;
  return h('div', { class: 'sf-dots' }, rows.map((row, r) => h('div', { class: `sf-dotrow sf-row${r}` },
    h('span', { class: 'sf-dotlabel', text: labels[r] ?? '' }),
    h('span', { class: 'sf-dottrack' }, row.map((w, i) => h('i', { class: 'sf-dot', style: `left:${(100 * (w - lo)) / span}%;top:${(i % 4) * 25}%`, title: String(w) }))),
  )));
}

/** A horizontal bar `share` (0..1+) of the track, with a label. */
export function bar(label, share, { cls = '', text = '' } = {}) {
  return h('div', { class: `sf-bar ${cls}` },
    h('span', { class: 'sf-bar-label', text: label }),
    h('span', { class: 'sf-bar-track' }, h('b', { style: `width:${Math.max(0, Math.min(1, share)) * 100}%` })),
    h('span', { class: 'sf-bar-text', text }),
  );
}

/** Re-draw `figure` only when `key` changes (a step arrives ten times a second at most). */
export function redrawer(figure, draw) {
  let last = null;
  return (key, ...args) => {
    const k = JSON.stringify(key);
    if (k === last) return;
    last = k;
    figure.replaceChildren(...[draw(...args)].flat().filter(Boolean));
    figure.hidden = !figure.childElementCount;
  };
}

/** Two copies' 16 weights as rows of shaded cells (one scale for both), and under them how
 * far each weight of the second copy is from the first's, as bars (flat when equal). */
export function copies(a, b, { labels = [t('GPU {n}', { n: 1 }), t('GPU {n}', { n: 2 })] } = {}) {
  const all = [...a, ...b];
  const lo = Math.min(...all);
  const span = Math.max(...all) - lo || 1;
  const shade = (w) => `hsl(205 70% ${18 + (62 * (w - lo)) / span}%)`;
  const row = (ws, label) => h('div', { class: 'sf-cells' }, h('span', { class: 'sf-dotlabel', text: label }),
    h('span', { class: 'sf-cellrow' }, ws.map((w) => h('i', { class: 'sf-wcell', style: `background:${shade(w)}`, title: String(w) }))));
  const d = a.map((w, i) => b[i] - w);
  const most = Math.max(...d.map(Math.abs));
  return h('div', { class: 'sf-copies' },
    row(a, labels[0]),
    row(b, labels[1]),
    h('div', { class: 'sf-cells' }, h('span', { class: 'sf-dotlabel', text: t('gap, enlarged') }),
      h('span', { class: 'sf-cellrow sf-diffrow' }, d.map((x) => h('i', { class: 'sf-diff' },
        h('b', { style: `height:${most ? (50 * Math.abs(x)) / most : 0}%;${x >= 0 ? 'bottom:50%' : 'top:50%'}` }))))),
  );
}
