// The heads-up display: run state, step, loss, measured tokens/s, restarts, and the simulated
// step time as a stacked bar with units. The bar is the sum of the step's lanes: each group
// (data, compute, all-reduce, checkpoint, waiting: the table comes with `hello`) is the time
// the GPUs' lanes spend in it, averaged over the GPUs.

import { TraceView } from '../scene/trace.js';
import { el, fmtInt, fmtLoss, fmtRate, fmtSeconds, fmtSpeed } from './format.js';

// Tiny groups still get a sliver so the bar never hides that they happen.
const MIN_SHARE = 0.015;

export function mountHud(store) {
  const $ = (id) => document.getElementById(id);
  const nodes = {
    state: $('hud-state'),
    step: $('hud-step'),
    loss: $('hud-loss'),
    tps: $('hud-tps'),
    epoch: $('hud-epoch'),
    restarts: $('hud-restarts'),
    bar: $('timebar'),
    legend: $('timelegend'),
    total: $('time-total'),
    assumption: $('time-assumption'),
  };

  let groups = []; // [{id, label}] from hello, in the order they are drawn
  let groupOf = {}; // kind -> group
  const segs = {};
  const legendRows = {};
  const legendVals = {};
  const seen = new Set(); // groups that have had time in this run: their rows stay put

  function buildGroups(hello) {
    groups = hello?.trace_groups ?? [];
    groupOf = Object.fromEntries((hello?.trace_kinds ?? []).map((k) => [k.kind, k.group]));
    nodes.bar.replaceChildren();
    nodes.legend.replaceChildren();
    seen.clear();
    for (const g of groups) {
      segs[g.id] = el('div', { class: `seg seg-${g.id}`, title: g.label });
      nodes.bar.append(segs[g.id]);
      legendVals[g.id] = el('span', { class: 'v' });
      legendRows[g.id] = el('li', { hidden: true }, el('i', { class: `sw seg-${g.id}` }), el('span', { text: g.label }), legendVals[g.id]);
      nodes.legend.append(legendRows[g.id]);
    }
  }

  function renderStatus() {
    const s = store.state;
    const st = s.status;
    if (s.connection !== 'open' && !st) {
      nodes.state.textContent = s.connection === 'lost' ? 'reconnecting' : 'connecting';
    } else if (st) {
      const speed = st.state === 'running' ? ` · ${fmtSpeed(st.speed)}` : '';
      nodes.state.textContent = `${st.state}${speed}`;
      nodes.state.dataset.state = st.state;
    }
    const step = s.step;
    nodes.step.textContent = fmtInt(st?.step ?? step?.step);
    nodes.loss.textContent = fmtLoss(step?.loss ?? st?.loss);
    nodes.epoch.textContent = fmtInt(step?.epoch ?? st?.epoch);
    nodes.restarts.textContent = fmtInt(Math.max(st?.restarts ?? 0, s.rollbacks));
    nodes.tps.textContent = fmtRate(store.tokensPerSecond());
  }

  function renderTime() {
    const step = store.state.step;
    if (!step?.trace || !groups.length) return;
    const seconds = new TraceView(step.trace, { groups: groupOf }).groupSeconds();
    const total = groups.reduce((a, g) => a + (seconds[g.id] ?? 0), 0);
    let shares = groups.map((g) => (total > 0 ? (seconds[g.id] ?? 0) / total : 0));
    shares = shares.map((x, i) => (seconds[groups[i].id] > 0 ? Math.max(x, MIN_SHARE) : 0));
    const norm = shares.reduce((a, b) => a + b, 0) || 1;
    groups.forEach((g, i) => {
      const v = seconds[g.id] ?? 0;
      if (v > 0) seen.add(g.id);
      segs[g.id].style.flexBasis = `${(100 * shares[i]) / norm}%`;
      legendRows[g.id].hidden = !seen.has(g.id);
      legendVals[g.id].textContent = fmtSeconds(v);
    });
    segs.data?.classList.toggle('waited', Boolean(step.loader?.waited));
    nodes.bar.dataset.total = String(total);
    nodes.total.textContent = `${fmtSeconds(step.sim_step_s ?? total)} simulated · ${fmtSeconds(step.wall_step_s)} here`;
  }

  function renderAssumption() {
    const h = store.state.hello;
    if (!h) return;
    const p = h.preset ?? {};
    const gpus = h.topology?.gpus?.length ?? h.config?.gpus;
    const parts = [`${gpus}× ${p.gpu ?? p.label ?? 'GPU'}`];
    if (p.mfu) parts.push(`${Math.round(p.mfu * 100)}% utilisation`);
    // The preset's *_gbps fields are gigabytes per second, one direction, per GPU.
    if (p.nvlink_gbps) parts.push(`NVLink ${Math.round(p.nvlink_gbps)} GB/s`);
    if (p.network_gbps) parts.push(`network ${Math.round(p.network_gbps)} GB/s per GPU`);
    nodes.assumption.textContent = `Assumed hardware: ${parts.join(' · ')}${
      p.sources?.length ? ' (public specs)' : ''
    }`;
    nodes.assumption.title = (p.sources ?? []).join('\n');
  }

  store.on('hello', (msg) => {
    buildGroups(msg);
    renderTime();
    renderAssumption();
    renderStatus();
  });
  store.on('snapshot', () => {
    renderStatus();
    renderTime();
  });
  store.on('step', () => {
    renderStatus();
    renderTime();
  });
  store.on('event', renderStatus);
  store.on('change:status', renderStatus);
  store.on('change:connection', renderStatus);
  store.on('change:lastRollback', renderStatus);
  renderStatus();
}
