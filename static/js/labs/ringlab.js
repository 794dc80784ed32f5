// Ring all-reduce lab: G GPUs on a circle, each with G small numbers (one per chunk). Step the
// passes forwards and back: reduce-scatter, then all-gather. Every value, send and byte count
// comes from the engine's own ring_allreduce via GET /api/labs/ring; nothing is recomputed here.

import { join, num, t } from '../i18n/lang.js';
import { say } from '../i18n/content.js';
import { whole } from '../i18n/units.js';
import { h, s, local } from './dom.js';
import * as api from './api.js';

const LETTERS = 'ABCDEFGHIJKLMNOP';
const MIN = 2;
const MAX = 16;

export function create() {
  let data = null;
  let gpus = 6;
  let seed = 1;
  let pass = 0; // 0 = before the first pass
  let text = null;
  let els = null;
  let loading = null;

  function onKey(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === '.' || ev.key === '>') go(pass + 1);
    else if (ev.key === ',' || ev.key === '<') go(pass - 1);
    else return;
    ev.preventDefault();
  }

  async function load() {
    const want = { gpus, seed };
    const p = api.ring(gpus, seed);
    loading = p;
    try {
      const d = await p;
      if (loading !== p) return; // a newer request superseded this one
      data = d;
      pass = Math.min(pass, total());
      els.error.textContent = '';
      render();
    } catch (err) {
      if (loading === p) els.error.textContent = t('Could not load the ring ({error}).', { error: err.message });
    } finally {
      if (loading === p) loading = null;
    }
    return want;
  }

  const total = () => (data ? data.passes.length : 2 * (gpus - 1));
  const valuesAt = (k) => (k === 0 ? data.initial : data.passes[k - 1].values);
  const coverageAt = (k) => (k === 0 ? data.initial.map((r) => r.map(() => 1)) : data.passes[k - 1].coverage);

  function go(k) {
    if (!data) return;
    pass = Math.max(0, Math.min(total(), k));
    render();
  }

  function setGpus(n) {
    gpus = Math.max(MIN, Math.min(MAX, n));
    pass = 0;
    els.gcount.textContent = whole(gpus);
    load();
  }

  function mount(body, { setTitle }) {
    els = {
      lede: h('p', { class: 'lab-lede' }),
      gminus: h('button', { type: 'button', class: 'lab-btn', 'aria-label': t('Fewer GPUs'), text: '−', onclick: () => setGpus(gpus - 1) }),
      gcount: h('output', { class: 'lab-num', 'aria-live': 'polite', text: whole(gpus) }),
      gplus: h('button', { type: 'button', class: 'lab-btn', 'aria-label': t('More GPUs'), text: '+', onclick: () => setGpus(gpus + 1) }),
      reseed: h('button', { type: 'button', class: 'lab-btn wide', text: t('new numbers'), onclick: () => { seed += 1; pass = 0; load(); } }),
      back: h('button', { type: 'button', class: 'lab-btn wide', 'data-act': 'back', title: t('Previous pass (,)'), text: t('◀ back'), onclick: () => go(pass - 1) }),
      next: h('button', { type: 'button', class: 'lab-btn wide primary', 'data-act': 'next', title: t('Next pass (.)'), text: t('next ▶'), onclick: () => go(pass + 1) }),
      counter: h('output', { class: 'ring-counter', 'aria-live': 'polite' }),
      phase: h('p', { class: 'ring-phase' }),
      svg: s('svg', { class: 'ring-svg', viewBox: '-250 -250 500 500', role: 'img', 'aria-label': t('GPUs in a ring') }),
      table: h('table', { class: 'ring-table' }),
      links: h('p', { class: 'ring-links' }),
      chartTitle: h('p', { class: 'ring-chart-title' }),
      chartLegend: h(
        'ul',
        { class: 'ring-chart-legend' },
        h('li', { class: 'ar' }, h('i', { class: 'key', 'aria-hidden': 'true' }), t('ring: every GPU sends to its neighbour')),
        h('li', { class: 'naive' }, h('i', { class: 'key', 'aria-hidden': 'true' }), t('all to one GPU')),
      ),
      chart: s('svg', { class: 'ring-chart', role: 'img', 'aria-label': t('Busiest link load, ring against everyone-to-one, for 2 to 16 GPUs') }),
      why: h('p', { class: 'lab-note' }),
      idea: h('p', { class: 'lab-idea' }),
      error: h('p', { class: 'lab-error', role: 'alert' }),
    };
    body.append(
      els.lede,
      h('div', { class: 'lab-row ring-controls' }, h('span', { class: 'lab-label', text: t('GPUs') }), els.gminus, els.gcount, els.gplus, els.reseed),
      h('div', { class: 'lab-row ring-controls' }, els.back, els.counter, els.next),
      els.phase,
      (els.main = h('div', { class: 'ring-main' }, h('div', { class: 'ring-svg-box' }, els.svg), (els.tableWrap = h('div', { class: 'ring-table-wrap', tabindex: '0', role: 'region', 'aria-label': t("Each GPU's numbers, chunk by chunk") }, els.table)))),
      els.links,
      h('h3', { text: t('Why a ring: the busiest link as the cluster grows') }),
      els.chartTitle,
      els.chartLegend,
      els.chart,
      els.why,
      els.idea,
      els.error,
    );
    // Both drawings are laid out in screen pixels, so their words keep the panel's type size
    // at any width: draw again when their width changes.
    if (typeof ResizeObserver === 'function') {
      let queued = 0;
      const ro = new ResizeObserver(() => {
        if (queued) return;
        queued = requestAnimationFrame(() => {
          queued = 0;
          render();
        });
      });
      ro.observe(els.svg);
      ro.observe(els.chart);
    }
    api.content().then((c) => {
      text = c.ring;
      setTitle(text.title);
      els.lede.textContent = say(text.lede);
      els.why.textContent = join([say(text.why), say(text.note)]); // two texts, each in the page's language
      els.idea.textContent = say(text.big_idea);
      render();
    }).catch(() => {});
    load();
  }

  function render() {
    if (!els || !data) return;
    const g = data.gpus;
    const n = total();
    els.counter.textContent = t('pass {pass} / {passes}', { pass, passes: n });
    els.back.disabled = pass === 0;
    els.next.disabled = pass === n;
    els.gminus.disabled = gpus <= MIN;
    els.gplus.disabled = gpus >= MAX;
    const cur = pass > 0 ? data.passes[pass - 1] : null;
    els.phase.replaceChildren(...phaseText(cur, g));
    drawRing(cur);
    drawTable(cur);
    drawLinks();
    drawChart();
  }

  function phaseText(cur, g) {
    if (!cur) return [h('b', { text: `${t('Start.')} ` }), t('Each GPU holds its own numbers, one per chunk. Every GPU needs the column totals.')];
    if (pass === total()) return [h('b', { class: 'ok', text: `${t('Done.')} ` }), t('Every GPU now holds every total, after {passes} passes.', { passes: total() })];
    if (cur.phase === 'reduce_scatter') {
      const k = cur.index;
      return [h('b', { text: `${t('Reduce-scatter, pass {k} of {n}.', { k, n: g - 1 })} ` }), k === g - 1 ? t('Each GPU now owns one chunk that is fully added up (outlined).') : say(text?.reduce_scatter ?? '')];
    }
    const k = cur.index - (g - 1);
    return [h('b', { text: `${t('All-gather, pass {k} of {n}.', { k, n: g - 1 })} ` }), say(text?.all_gather ?? '')];
  }

  /** The panel's type size in CSS px (the drawings use it so their words read as text). */
  function typePx(el) {
    return parseFloat(getComputedStyle(el).fontSize) || 16;
  }

  function drawRing(cur) {
    const g = data.gpus;
    const S = els.svg.getBoundingClientRect().width;
    if (S < 40) return; // not laid out yet (the panel is hidden)
    const font = typePx(els.svg);
    const small = Math.max(14, font * 0.875);
    const tags = g <= 10;
    const tagW = small * 3.6;
    const tagH = small * 1.7;
    const off = tagH * 0.5 + small * 1.2; // from the ring out to a tag's centre
    const R = tags ? S / 2 - off - tagW / 2 - 2 : S / 2 - small * 2.2;
    const nodeR = Math.max(small * 1.05, Math.min(font * 2.2, (Math.PI * R) / g - 4));
    const longNames = g <= 10 && nodeR >= small * 1.9;
    els.svg.setAttribute('viewBox', `${-S / 2} ${-S / 2} ${S} ${S}`);
    els.svg.style.height = `${S}px`;
    const pos = (i) => {
      const a = -Math.PI / 2 + (2 * Math.PI * i) / g;
      return [R * Math.cos(a), R * Math.sin(a)];
    };
    const prev = pass > 0 ? valuesAt(pass - 1) : null;
    const parts = [
      s('defs', {}, s('marker', { id: 'ring-arrow', viewBox: '0 0 10 10', refX: '8', refY: '5', markerWidth: '5', markerHeight: '5', orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head' }))),
      s('circle', { r: R, class: 'ring-track' }),
    ];
    for (let i = 0; i < g; i++) {
      const [x1, y1] = pos(i);
      const send = cur?.sends.find((x) => x.src === i);
      // Arc from node edge to node edge.
      const a1 = Math.atan2(y1, x1) + nodeR / R;
      const a2 = Math.atan2(y1, x1) + (2 * Math.PI) / g - nodeR / R;
      const p1 = [R * Math.cos(a1), R * Math.sin(a1)];
      const p2 = [R * Math.cos(a2), R * Math.sin(a2)];
      parts.push(s('path', { d: `M${p1[0]},${p1[1]} A${R},${R} 0 0 1 ${p2[0]},${p2[1]}`, class: send ? 'ring-link active' : 'ring-link', 'marker-end': send ? 'url(#ring-arrow)' : null }));
      if (send && tags) {
        const mid = Math.atan2(y1, x1) + Math.PI / g;
        const lx = (R + off) * Math.cos(mid);
        const ly = (R + off) * Math.sin(mid);
        const v = prev[send.src][send.chunk];
        parts.push(
          s('g', { class: 'ring-tag', transform: `translate(${lx.toFixed(1)},${ly.toFixed(1)})` },
            s('rect', { x: -tagW / 2, y: -tagH / 2, width: tagW, height: tagH, rx: tagH / 3 }),
            s('text', { y: small * 0.36, style: `font-size:${small}px`, translate: 'no', text: `${LETTERS[send.chunk]} ${v}` }),
          ),
        );
      }
    }
    const owned = cur && cur.phase === 'reduce_scatter' && cur.index === g - 1;
    for (let i = 0; i < g; i++) {
      const [x, y] = pos(i);
      const sub = owned && longNames;
      parts.push(
        s('g', { class: 'ring-node', transform: `translate(${x.toFixed(1)},${y.toFixed(1)})` },
          s('circle', { r: nodeR }),
          s('text', { y: sub ? -small * 0.15 : small * 0.36, class: 'ring-node-label', style: `font-size:${small}px`, text: longNames ? t('GPU {gpu}', { gpu: i + 1 }) : whole(i + 1) }),
          sub ? s('text', { y: small * 1.0, class: 'ring-node-sub', style: `font-size:${small}px`, text: t('owns {chunk}', { chunk: LETTERS[data.owner_chunk[i]] }) }) : null,
        ),
      );
    }
    const big = Math.max(small, Math.min(font * 1.3, (R - nodeR) / 4.5));
    parts.push(s('text', { class: 'ring-centre', y: -big * 0.25, style: `font-size:${big}px`, text: pass === 0 ? t('start') : cur.phase === 'reduce_scatter' ? t('reduce-scatter') : t('all-gather') }));
    parts.push(s('text', { class: 'ring-centre small', y: big * 0.25 + small * 1.1, style: `font-size:${small}px`, text: pass === 0 ? t('{gpus} GPUs', { gpus: g }) : t('pass {pass} / {passes}', { pass, passes: total() }) }));
    els.svg.replaceChildren(...parts);
  }

  function drawTable(cur) {
    const g = data.gpus;
    const vals = valuesAt(pass);
    const cov = coverageAt(pass);
    const recv = new Set((cur?.sends ?? []).map((x) => `${x.dst}:${x.chunk}`));
    const head = h('tr', {}, h('th', { text: '' }), ...Array.from({ length: g }, (_, c) => h('th', { scope: 'col', translate: 'no', text: LETTERS[c] })));
    const rows = vals.map((row, i) =>
      h('tr', {}, h('th', { scope: 'row', text: t('GPU {gpu}', { gpu: i + 1 }) }), ...row.map((v, c) => {
        const k = cov[i][c];
        const cls = ['cell', k === g ? 'done' : k > 1 ? 'partial' : 'own', recv.has(`${i}:${c}`) ? 'got' : ''].join(' ');
        return h('td', { class: cls, style: `--cov:${(k / g).toFixed(3)}`, title: t("GPU {gpu}, chunk {chunk}: {value} (sum of {k} of {g} GPUs' numbers)", { gpu: i + 1, chunk: LETTERS[c], value: v, k, g }), text: whole(v) });
      })),
    );
    const foot = h('tr', { class: 'totals' }, h('th', { scope: 'row', text: t('total') }), ...data.totals.map((v) => h('td', { text: whole(v) })));
    els.table.replaceChildren(h('thead', {}, head), h('tbody', {}, ...rows), h('tfoot', {}, foot));
    els.table.classList.toggle('dense', g > 10);
    // A table wider than half the panel goes under the ring, where it has the full width.
    els.main.classList.toggle('stack', g > 6);
  }

  function drawLinks() {
    const g = data.gpus;
    let sofar = 0;
    for (let k = 0; k < pass; k++) sofar += data.passes[k].sends[0].bytes;
    els.links.replaceChildren(
      h('span', { text: `${t('Every link has carried')} ` }), h('b', { text: local.bytes(sofar) }),
      h('span', { text: ` ${t('so far (one {n}-byte chunk per pass). Whole all-reduce:', { n: data.chunk_bytes })} ` }),
      h('b', { class: 'ar', text: t('{size} on the busiest ring link', { size: local.bytes(data.ring_busiest_bytes) }) }),
      h('span', { text: ` ${t('vs')} ` }),
      h('b', { class: 'naive', text: t('{size} into GPU 1', { size: local.bytes(data.naive_busiest_bytes) }) }),
      h('span', { text: ` ${t('if all {gpus} GPUs sent everything to one GPU.', { gpus: g })}` }),
    );
  }

  function drawChart() {
    const pts = data.scaling;
    const W = els.chart.getBoundingClientRect().width;
    const here = pts.find((p) => p.gpus === data.gpus);
    els.chartTitle.textContent = t('For {buffer} of gradients. At {gpus} GPUs the busiest link carries {ring} with the ring, {naive} all to one.', {
      buffer: local.bytes(data.scaling_buffer_bytes),
      gpus: here.gpus,
      ring: local.bytes(here.ring_busiest_bytes),
      naive: local.bytes(here.naive_busiest_bytes),
    });
    if (W < 40) return; // not laid out yet (the panel is hidden)
    // Laid out in screen pixels, so the axis words are the panel's smallest type, never less.
    const small = Math.max(14, typePx(els.chart) * 0.875);
    const H = Math.round(Math.max(small * 11, Math.min(W * 0.45, small * 17)));
    const L = small * 4.2;
    const B = small * 3.1;
    const T = small * 0.8;
    const Rm = small * 1.2;
    els.chart.setAttribute('viewBox', `0 0 ${W} ${H}`);
    els.chart.style.height = `${H}px`;
    const maxY = Math.max(...pts.map((p) => p.naive_busiest_bytes));
    const x = (g) => L + ((g - MIN) / (MAX - MIN)) * (W - L - Rm);
    const y = (b) => H - B - (b / maxY) * (H - B - T);
    const line = (key) => pts.map((p, i) => `${i ? 'L' : 'M'}${x(p.gpus).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ');
    const parts = [];
    const stepY = maxY > 12e9 ? 5e9 : maxY > 4e9 ? 2e9 : 1e9;
    for (let gb = 0; gb <= maxY + 1; gb += stepY) {
      parts.push(s('line', { x1: L, x2: W - Rm, y1: y(gb), y2: y(gb), class: 'grid' }));
      parts.push(s('text', { x: L - small * 0.5, y: y(gb) + small * 0.35, class: 'axis', 'text-anchor': 'end', style: `font-size:${small}px`, text: join([`${num(gb / 1e9)} GB`]) }));
    }
    for (const g of [2, 4, 8, 12, 16]) parts.push(s('text', { x: x(g), y: H - B + small * 1.35, class: 'axis', 'text-anchor': 'middle', style: `font-size:${small}px`, text: whole(g) }));
    parts.push(s('text', { x: (L + W - Rm) / 2, y: H - small * 0.35, class: 'axis', 'text-anchor': 'middle', style: `font-size:${small}px`, text: t('GPUs in the ring') }));
    parts.push(s('line', { x1: x(data.gpus), x2: x(data.gpus), y1: T, y2: H - B, class: 'marker' }));
    parts.push(s('path', { d: line('naive_busiest_bytes'), class: 'naive' }));
    parts.push(s('path', { d: line('ring_busiest_bytes'), class: 'ar' }));
    parts.push(s('circle', { cx: x(here.gpus), cy: y(here.naive_busiest_bytes), r: 5, class: 'dot naive' }));
    parts.push(s('circle', { cx: x(here.gpus), cy: y(here.ring_busiest_bytes), r: 5, class: 'dot ar' }));
    els.chart.replaceChildren(...parts);
  }

  return {
    mount,
    onOpen() {
      document.addEventListener('keydown', onKey);
    },
    onClose() {
      document.removeEventListener('keydown', onKey);
    },
    info() {
      if (!data) return { loaded: false, gpus, pass };
      const vals = valuesAt(pass);
      return {
        loaded: true,
        gpus: data.gpus,
        pass,
        passes: total(),
        phase: pass === 0 ? 'start' : data.passes[pass - 1].phase,
        values: vals.map((r) => [...r]),
        totals: [...data.totals],
        everyGpuHasTotals: vals.every((r) => r.every((v, c) => v === data.totals[c])),
      };
    },
  };
}
