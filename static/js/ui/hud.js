// The heads-up display: run state, step, loss, measured tokens/s, restarts, and the simulated
// step time as a stacked bar (data, compute, all-reduce, checkpoint) with units.

import { el, fmtInt, fmtLoss, fmtRate, fmtSeconds, fmtSpeed } from './format.js';

// The bar groups the engine's six phases the way people talk about a step.
const GROUPS = [
  { id: 'data', label: 'data', phases: ['data'] },
  { id: 'compute', label: 'compute (forward + backward + update)', phases: ['forward', 'backward', 'optimizer'] },
  { id: 'allreduce', label: 'all-reduce', phases: ['allreduce'] },
  { id: 'checkpoint', label: 'checkpoint', phases: ['checkpoint'] },
];
// Tiny phases still get a sliver so the bar never hides that they happen.
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

  const segs = {};
  const legendVals = {};
  for (const g of GROUPS) {
    segs[g.id] = el('div', { class: `seg seg-${g.id}`, title: g.label });
    nodes.bar.append(segs[g.id]);
    legendVals[g.id] = el('span', { class: 'v' });
    nodes.legend.append(
      el('li', {}, el('i', { class: `sw seg-${g.id}` }), el('span', { text: g.label }), legendVals[g.id]),
    );
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
    if (!step?.phases?.length) return;
    const byGroup = {};
    let total = 0;
    for (const g of GROUPS) {
      byGroup[g.id] = step.phases
        .filter((p) => g.phases.includes(p.name))
        .reduce((a, p) => a + (p.sim_s || 0), 0);
      total += byGroup[g.id];
    }
    let shares = GROUPS.map((g) => (total > 0 ? byGroup[g.id] / total : 0));
    shares = shares.map((x, i) => (byGroup[GROUPS[i].id] > 0 ? Math.max(x, MIN_SHARE) : 0));
    const norm = shares.reduce((a, b) => a + b, 0) || 1;
    GROUPS.forEach((g, i) => {
      segs[g.id].style.flexBasis = `${(100 * shares[i]) / norm}%`;
      legendVals[g.id].textContent = fmtSeconds(byGroup[g.id]);
    });
    segs.data.classList.toggle('waited', Boolean(step.loader?.waited));
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

  store.on('hello', () => {
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
