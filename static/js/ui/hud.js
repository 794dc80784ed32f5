// The heads-up display: run state, step, loss, measured tokens/s, restarts, the simulated
// step time as a stacked bar with units, and the run's parallel plan. The bar is the sum of
// the step's lanes: each group (data, compute, tensor, experts, all-reduce, checkpoint,
// waiting: the table comes with `hello`) is the time the GPUs' lanes spend in it, averaged
// over the GPUs. Kinds that run beside a lane's other work (`overlaps`: pipeline sends and
// receives on the copy engines) take no time of the lane's own, so they are drawn as a thin
// stripe under the bar and never added into its sum.
//
// The plan card says the plan in words a class follows ("2 copies × 2-way tensor split ×
// 2 pipeline stages, 4 microbatches, 1F1B"), the bubble the step measured, and the bytes
// each kind of traffic moved in the step (`step.plan_stats`).

import { TraceView } from '../scene/trace.js';
import { el, fmtBytes, fmtInt, fmtLoss, fmtRate, fmtSeconds, fmtSpeed } from './format.js';

// Tiny groups still get a sliver so the bar never hides that they happen.
const MIN_SHARE = 0.015;
// Where overlapping kinds go when the trace reader sums groups: out of the bar's sum.
const BESIDE = '~beside';

const SCHEDULE_WORDS = {
  '1f1b': { short: '1F1B', long: 'one forward, one backward (1F1B)' },
  gpipe: { short: 'GPipe', long: 'all forwards, then all backwards (GPipe)' },
};

const plural = (n, one, many) => `${fmtInt(n)} ${n === 1 ? one : many}`;

/** The plan in words: {layout, parts, detail}, e.g. "2 copies × 2-way tensor split ×
 * 2 pipeline stages" (parts: each factor on its own) and "4 microbatches, 1F1B". */
export function planWords(plan) {
  if (!plan) return { layout: '', parts: [], detail: '' };
  const { dp = 1, tp = 1, pp = 1, ep = 1, microbatches = 1, schedule = '1f1b', experts = 0, top_k: topK = 1 } = plan;
  const parts = [plural(dp, 'copy', 'copies')];
  if (tp > 1) parts.push(`${tp}-way tensor split`);
  if (pp > 1) parts.push(plural(pp, 'pipeline stage', 'pipeline stages'));
  // Expert parallelism shares the experts out within the copies (ep divides dp): the copies
  // then hold the rest of the model whole, but not all of the experts.
  const split = experts > 0 && ep > 1;
  if (tp === 1 && pp === 1) parts[0] += split ? ' (data parallel)' : dp === 1 ? ' of the whole model' : ' of the whole model (data parallel)';
  const layout = parts.join(' × ');
  const steps = [];
  if (microbatches > 1) steps.push(plural(microbatches, 'microbatch', 'microbatches'));
  if (pp > 1) steps.push((SCHEDULE_WORDS[schedule] ?? { short: schedule }).short);
  const detail = [];
  if (experts > 0) {
    const where = split ? `${experts / ep} on each GPU (shared out over ${ep} GPUs)` : 'all of them on every GPU';
    detail.push(`${plural(experts, 'expert', 'experts')} per layer, each token to its top ${topK}, ${where}`);
  }
  if (steps.length) detail.push(steps.join(', '));
  return { layout, parts, detail: detail.join('; ') };
}

/** The kinds of traffic a step moved between GPUs: [{kind, group, label, bytes}], in the
 * order of hello.trace_kinds, labelled with their time-bar group's words. */
export function planTraffic(hello, stats) {
  const labelOf = Object.fromEntries((hello?.trace_groups ?? []).map((g) => [g.id, g.label]));
  return (hello?.trace_kinds ?? [])
    .filter((k) => k.transfer && (stats?.traffic_bytes?.[k.kind] ?? 0) > 0)
    .map((k) => ({ kind: k.kind, group: k.group, label: labelOf[k.group] ?? k.kind, bytes: stats.traffic_bytes[k.kind] }));
}

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
    plan: $('plan-card'),
  };
  // The stripe of work done beside the lanes' own (see the top), under the bar.
  const beside = el('div', { class: 'timebar-beside', 'aria-hidden': 'true' });
  nodes.bar.after(beside);
  const plan = buildPlanCard(nodes.plan);

  let groups = []; // [{id, label}] from hello, in the order they are drawn
  let groupOf = {}; // kind -> group
  let barGroups = []; // the groups that add up to the step
  let besideGroups = new Set(); // groups whose kinds all run beside the lanes' own work
  let overlapping = new Set(); // kinds that run beside the lanes' own work
  const segs = {};
  const legendRows = {};
  const legendVals = {};
  const legendBytes = {}; // a transfer group's bytes this step (shown where the card's list is not)
  const seen = new Set(); // groups that have had time in this run: their rows stay put

  function buildGroups(hello) {
    groups = hello?.trace_groups ?? [];
    const kinds = hello?.trace_kinds ?? [];
    groupOf = Object.fromEntries(kinds.map((k) => [k.kind, k.group]));
    overlapping = new Set(kinds.filter((k) => k.overlaps).map((k) => k.kind));
    besideGroups = new Set(
      groups.map((g) => g.id).filter((id) => {
        const of = kinds.filter((k) => k.group === id);
        return of.length > 0 && of.every((k) => k.overlaps);
      }),
    );
    barGroups = groups.filter((g) => !besideGroups.has(g.id));
    nodes.bar.replaceChildren();
    beside.replaceChildren();
    nodes.legend.replaceChildren();
    seen.clear();
    for (const g of groups) {
      segs[g.id] = el('div', { class: `seg seg-${g.id}`, title: g.label });
      (besideGroups.has(g.id) ? beside : nodes.bar).append(segs[g.id]);
      legendVals[g.id] = el('span', { class: 'v' });
      legendBytes[g.id] = el('span', { class: 'b' });
      legendRows[g.id] = el(
        'li',
        { hidden: true, class: besideGroups.has(g.id) ? 'beside' : null },
        el('i', { class: `sw seg-${g.id}` }),
        el('span', { text: g.label }),
        legendBytes[g.id],
        legendVals[g.id],
      );
      nodes.legend.append(legendRows[g.id]);
    }
  }

  /** Seconds each group takes, averaged over the lanes: the bar's groups from the trace
   * reader, with overlapping kinds kept out of them, and the beside-groups on their own. */
  function groupSeconds(trace) {
    const groupsForView = { ...groupOf };
    for (const k of overlapping) groupsForView[k] = BESIDE;
    const seconds = new TraceView(trace, { groups: groupsForView }).groupSeconds();
    delete seconds[BESIDE];
    const gpus = trace.gpus || 1;
    // An all-to-all keeps every GPU of its group busy for each round: a reader that does not
    // count its records must not leave that time out of the sum.
    const uncounted = new Set(
      (trace.all_to_all ?? []).map((a) => a.kind).filter((k) => seconds[groupOf[k] ?? k] === undefined),
    );
    for (const a of trace.all_to_all ?? []) {
      if (!uncounted.has(a.kind)) continue;
      const g = groupOf[a.kind] ?? a.kind;
      seconds[g] = (seconds[g] ?? 0) + (a.round_s.reduce((x, y) => x + y, 0) * a.gpus.length) / gpus;
    }
    // Work beside the lanes' own, averaged over the lanes like the rest: a send and its
    // receive each occupy a lane, a ring every GPU of it, a span the lanes it names.
    const add = (kind, laneSeconds) => {
      if (!overlapping.has(kind)) return;
      const g = groupOf[kind] ?? kind;
      seconds[g] = (seconds[g] ?? 0) + laneSeconds / gpus;
    };
    for (const p of trace.p2p ?? []) add(p.kind, 2 * p.dur);
    for (const r of trace.rings ?? []) add(r.kind, r.pass_s.reduce((a, [sec, n]) => a + sec * n, 0) * r.ring.length);
    for (const sp of trace.spans ?? []) add(sp.kind, sp.dur * (sp.lanes ? sp.lanes.length : gpus));
    return seconds;
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
    const seconds = groupSeconds(step.trace);
    const total = barGroups.reduce((a, g) => a + (seconds[g.id] ?? 0), 0);
    let shares = barGroups.map((g) => (total > 0 ? (seconds[g.id] ?? 0) / total : 0));
    shares = shares.map((x, i) => (seconds[barGroups[i].id] > 0 ? Math.max(x, MIN_SHARE) : 0));
    const norm = shares.reduce((a, b) => a + b, 0) || 1;
    barGroups.forEach((g, i) => {
      segs[g.id].style.flexBasis = `${(100 * shares[i]) / norm}%`;
    });
    // The beside-stripe starts where compute does: that is the work it runs alongside.
    const computeAt = barGroups.findIndex((g) => g.id === 'compute');
    const before = computeAt < 0 ? 0 : shares.slice(0, computeAt).reduce((a, b) => a + b, 0) / norm;
    let offset = before;
    for (const id of besideGroups) {
      const v = seconds[id] ?? 0;
      const w = total > 0 && v > 0 ? Math.min(1 - offset, Math.max(MIN_SHARE, v / total)) : 0;
      segs[id].style.left = `${100 * offset}%`;
      segs[id].style.width = `${100 * w}%`;
      offset = Math.min(1, offset + w);
    }
    beside.hidden = ![...besideGroups].some((id) => (seconds[id] ?? 0) > 0);
    const sent = {};
    for (const t of planTraffic(store.state.hello, step.plan_stats)) sent[t.group] = (sent[t.group] ?? 0) + t.bytes;
    for (const g of groups) {
      const v = seconds[g.id] ?? 0;
      if (v > 0) seen.add(g.id);
      legendRows[g.id].hidden = !seen.has(g.id);
      legendVals[g.id].textContent = fmtSeconds(v);
      legendBytes[g.id].textContent = sent[g.id] ? fmtBytes(sent[g.id]) : '';
    }
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
    plan.render(store.state);
    renderStatus();
  });
  store.on('snapshot', () => {
    renderStatus();
    renderTime();
    plan.render(store.state);
  });
  store.on('step', () => {
    renderStatus();
    renderTime();
    plan.render(store.state);
  });
  store.on('event', renderStatus);
  store.on('change:status', renderStatus);
  store.on('change:connection', renderStatus);
  store.on('change:lastRollback', renderStatus);
  renderStatus();
}

/** The plan card: the plan in words, the measured bubble, each kind's traffic per step. */
function buildPlanCard(root) {
  if (!root) return { render() {} };
  const layout = el('p', { class: 'plan-layout' });
  const detail = el('p', { class: 'plan-detail' });
  const bubble = el('p', { class: 'plan-bubble' });
  const trafficHead = el('p', { class: 'plan-traffic-head', text: 'Sent between GPUs in this step' });
  const traffic = el('ul', { class: 'plan-traffic', 'aria-label': 'Bytes sent between GPUs in this step' });
  root.replaceChildren(
    el('div', { class: 'plan-head' }, el('h3', { text: 'The plan' }), el('span', { class: 'hint', text: 'how the GPUs share the job' })),
    layout,
    detail,
    bubble,
    trafficHead,
    traffic,
  );

  return {
    render(state) {
      const hello = state.hello;
      const p = hello?.plan;
      root.hidden = !p;
      if (!p) return;
      const words = planWords(p);
      // Each factor stays on one line; a narrow panel breaks between them.
      layout.replaceChildren(
        ...words.parts.flatMap((part, i) => [...(i ? [' × '] : []), el('span', { class: 'plan-part', text: part })]),
      );
      detail.textContent = words.detail;
      detail.hidden = !words.detail;
      if (p.pp > 1) detail.title = (SCHEDULE_WORDS[p.schedule] ?? { long: p.schedule }).long;
      else detail.removeAttribute('title');
      // The step on screen may still be the old run's until the new run's first step.
      const stats = state.step?.plan_stats ?? null;
      root.dataset.bubble = stats ? String(stats.bubble_fraction) : '';
      bubble.classList.toggle('none', p.pp === 1);
      if (p.pp > 1) {
        const pct = stats ? `${(100 * stats.bubble_fraction).toFixed(1)}%` : '–';
        bubble.replaceChildren(
          'Pipeline bubble ',
          el('strong', { class: 'plan-bubble-pct', text: pct }),
          el('span', { class: 'plan-why', text: ' of the stages’ time spent waiting, measured' }),
        );
      } else {
        bubble.textContent = 'One stage: no pipeline, no bubble';
      }
      const rows = planTraffic(hello, stats).map((t) =>
        el(
          'li',
          { 'data-kind': t.kind },
          el('i', { class: `sw seg-${t.group}` }),
          el('span', { text: t.label }),
          el('span', { class: 'v', text: fmtBytes(t.bytes) }),
        ),
      );
      traffic.replaceChildren(...rows);
      traffic.hidden = trafficHead.hidden = rows.length === 0;
    },
  };
}
