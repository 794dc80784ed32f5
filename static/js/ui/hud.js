// The heads-up display: run state, step, loss, tokens/s, restarts; the simulated step time
// as a stacked bar (each group the GPUs' mean time in it; kinds that run beside a lane's work,
// `overlaps`, such as pipeline sends or the all-reduce hidden under backward, are a stripe
// under the bar, never in its sum); the model lens (the same step priced for a real model
// size, /api/labs/lens); and the plan card in a class's words, with the measured bubble and
// the bytes each kind of traffic moved (`step.plan_stats`).

import { TraceView } from '../scene/trace.js';
import { activeFaults } from '../store.js';
import { join, num, t, tr } from '../i18n/lang.js';
import { bytes, percent, rate, seconds as secs, whole } from '../i18n/units.js';
import { handoffs, textbookBubble } from './bubble.js';
import { el, fmtBytes, fmtInt, fmtLoss, fmtRate, fmtSeconds } from './format.js';

// The groups that move data between GPUs and add to the step (app/engine/lens.py COMMUNICATION).
const COMMUNICATION = ['tensor', 'experts', 'allreduce'];
// Cluster sizes the lens offers beside the live one (the scale field's sizes that every
// preset model's default plan divides).
const LENS_GPUS = [1024, 16384];
// The schedules the lens offers: [schedule, chunks of layers a stage].
const LENS_SCHEDULES = [['1f1b', 1], ['interleaved', 2], ['interleaved', 4], ['zb-h1', 1], ['gpipe', 1]];
const SCHEDULE_NOTATION = { '1f1b': '1F1B', gpipe: 'GPipe', 'zb-h1': 'ZB-H1' };
/** A schedule's name: notation for 1F1B, GPipe and ZB-H1, words for interleaving. */
function scheduleName(schedule, v) {
  if (schedule === 'interleaved') return t('interleaved 1F1B, {v} chunks a stage', { v });
  return SCHEDULE_NOTATION[schedule] ?? schedule;
}

/** What bounds a step, from its shares of the bar: the lens's own rule (lens.py `explain`),
 * so the live step and a lens step are judged alike. */
export function boundOf(shares) {
  const comm = COMMUNICATION.reduce((a, k) => a + (shares[k] ?? 0), 0);
  const candidates = {
    compute: shares.compute ?? 0,
    communication: comm,
    'pipeline bubble': shares.wait ?? 0,
    data: shares.data ?? 0,
    update: shares.update ?? 0,
    checkpoint: shares.checkpoint ?? 0,
  };
  let bound = 'compute';
  for (const [k, v] of Object.entries(candidates)) if (v > candidates[bound]) bound = k;
  return { bound, comm };
}

/** Why the live step looks as it does, in one or two sentences, from its own shares. */
export function liveWhy(shares, nParams, faulted = false) {
  const { bound, comm } = boundOf(shares);
  const v = { weights: whole(nParams), comm: percent(comm), compute: percent(shares.compute ?? 0), wait: percent(shares.wait ?? 0), share: percent(shares[bound] ?? 0) };
  if (bound === 'communication') {
    return t("Communication-bound: {comm} of the step moves data, compute is {compute}. This model has only {weights} weights, so each GPU's maths is over in microseconds, while every message round the ring still pays the network’s fixed delay per hop. Pick a real model size above to see the opposite.", v);
  }
  if (bound === 'compute') {
    return t('Compute-bound: forward and backward take {compute} of the step; communication adds {comm}. Even {weights} weights pay a fixed launch cost for every kernel, and few GPUs make the ring short.', v);
  }
  if (bound === 'pipeline bubble') {
    return faulted
      ? t('Waiting-bound: the GPUs sit idle for {wait} of the step, held up by the fault above.', v)
      : t('Waiting-bound: the GPUs sit idle for {wait} of the step, waiting for their data or for one another.', v);
  }
  if (bound === 'data') return t('Data takes the largest share of this step ({share}).', v);
  if (bound === 'update') return t('Update takes the largest share of this step ({share}).', v);
  return t('Checkpoint takes the largest share of this step ({share}).', v);
}

/** "7.1 × 10^18 operations (6 × 70.6 B weights × 16.8 M tokens)" for a lens result: the
 * weights each token uses (a mixture of experts uses only some). */
function flopsValues(r) {
  const flops = 6 * r.active_params * r.tokens_per_step;
  const exp = Math.floor(Math.log10(flops));
  return { flops: num(flops / 10 ** exp, 1), exp, params: rate(r.active_params), tokens: rate(r.tokens_per_step) };
}

// Tiny groups still get a sliver so the bar never hides that they happen.
const MIN_SHARE = 0.015;
// Where overlapping kinds go when the trace reader sums groups: out of the bar's sum.
const BESIDE = '~beside';

const SCHEDULE_SHORT = { '1f1b': '1F1B', gpipe: 'GPipe' };
const scheduleLong = (s) => ({ '1f1b': t('one forward, one backward (1F1B)'), gpipe: t('all forwards, then all backwards (GPipe)') })[s] ?? s;

/** The plan in words: {layout, parts, detail}, e.g. "2 copies × 2-way tensor split ×
 * 2 pipeline stages" (parts: each factor on its own) and "4 microbatches, 1F1B". */
export function planWords(plan) {
  if (!plan) return { layout: '', parts: [], detail: '' };
  const { dp = 1, tp = 1, pp = 1, ep = 1, microbatches = 1, schedule = '1f1b', experts = 0, top_k: topK = 1 } = plan;
  // Expert parallelism shares the experts out within the copies (ep divides dp): the copies
  // then hold the rest of the model whole, but not all of the experts.
  const split = experts > 0 && ep > 1;
  const n = dp;
  const parts = [
    tp > 1 || pp > 1
      ? t(['{n} copy', '{n} copies'], { n }, n)
      : split
        ? t(['{n} copy (data parallel)', '{n} copies (data parallel)'], { n }, n)
        : n === 1
          ? t('{n} copy of the whole model', { n })
          : t('{n} copies of the whole model (data parallel)', { n }),
  ];
  if (tp > 1) parts.push(t('{n}-way tensor split', { n: tp }));
  if (pp > 1) parts.push(t(['{n} pipeline stage', '{n} pipeline stages'], { n: pp }, pp));
  const layout = parts.join(' × ');
  const sched = pp > 1 ? SCHEDULE_SHORT[schedule] ?? schedule : '';
  const mb = { n: microbatches, schedule: sched };
  const steps = microbatches > 1 ? (sched ? t('{n} microbatches, {schedule}', mb) : t('{n} microbatches', mb)) : sched;
  let detail = steps;
  if (experts > 0) {
    const v = { n: experts, k: topK, each: experts / ep, ep, steps };
    if (split) detail = steps ? t('{n} experts per layer, each token to its top {k}, {each} on each GPU (shared out over {ep} GPUs); {steps}', v) : t('{n} experts per layer, each token to its top {k}, {each} on each GPU (shared out over {ep} GPUs)', v);
    else detail = steps ? t('{n} experts per layer, each token to its top {k}, all of them on every GPU; {steps}', v) : t('{n} experts per layer, each token to its top {k}, all of them on every GPU', v);
  }
  return { layout, parts, detail };
}

// How much the backward recomputes, in words (app/engine/activations.py): the lens and the
// memory lab say it the same way.
export const RECOMPUTED = {
  none: () => t('nothing recomputed'),
  selective: () => t('the attention’s scores recomputed'),
  full: () => t('every layer’s forward recomputed'),
};

/** The fullest GPU's memory in the lens: its training state and its activations. */
export function lensMemory(r) {
  const acts = r.activation_bytes_per_gpu ?? {};
  return t('Memory per GPU: {total} = {state} of weights, gradients and optimizer state + {activations} of activations kept for the backward pass ({how}); with nothing recomputed they would take {none}.', {
    total: bytes(r.memory_per_gpu_bytes),
    state: bytes(r.state_bytes_per_gpu),
    activations: bytes(acts[r.recompute]),
    how: RECOMPUTED[r.recompute]?.() ?? r.recompute,
    none: bytes(acts.none),
  });
}

/** The kinds of traffic a step moved between GPUs: [{kind, group, label, bytes}], in the
 * order of hello.trace_kinds, labelled with their time-bar group's words. */
export function planTraffic(hello, stats) {
  const labelOf = Object.fromEntries((hello?.trace_groups ?? []).map((g) => [g.id, tr(g.label)]));
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
    panel: document.querySelector('.time-panel'),
  };
  const title = nodes.panel?.querySelector('.panel-head h2');
  const liveTitle = t('One step, simulated');
  // The lens: which model, on which cluster; the step shown and why it looks as it does.
  const lensModel = el('select', { id: 'lens-model', 'aria-label': t('Model size the step is shown for') }, el('option', { value: '', text: t('the live tiny model') }));
  const lensGpus = el('select', { id: 'lens-gpus', 'aria-label': t('Cluster the step is priced on') });
  // The pipeline's schedule: 1F1B, GPipe, or interleaved 1F1B with 2 or 4 chunks of layers a
  // stage (the lens lays each out; app/engine/pipeline.py).
  const lensSchedule = el('select', { id: 'lens-schedule', 'aria-label': t('Pipeline schedule the step is laid out with') },
    ...LENS_SCHEDULES.map(([schedule, v]) => el('option', { value: `${schedule}:${v}`, text: scheduleName(schedule, v) })));
  const scheduleLabel = el('span', { text: t('laid out as') });
  const lensRow = el('div', { class: 'lens-row', role: 'group', 'aria-label': t('Model lens') }, el('span', { text: t('Show the step for') }), lensModel, el('span', { text: t('on') }), lensGpus, scheduleLabel, lensSchedule);
  const which = el('p', { class: 'time-which', id: 'time-which' });
  const why = el('p', { class: 'time-why', id: 'time-why' });
  const hiddenNote = el('p', { class: 'time-hidden', id: 'time-hidden', hidden: true });
  nodes.panel?.querySelector('.panel-head')?.after(lensRow, which);
  nodes.bar.before(why);
  // The stripe of work done beside the lanes' own (see the top), under the bar.
  const beside = el('div', { class: 'timebar-beside', 'aria-hidden': 'true' });
  nodes.bar.after(beside);
  beside.after(hiddenNote);
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
      segs[g.id] = el('div', { class: `seg seg-${g.id}`, title: tr(g.label) });
      (besideGroups.has(g.id) ? beside : nodes.bar).append(segs[g.id]);
      legendVals[g.id] = el('span', { class: 'v' });
      legendBytes[g.id] = el('span', { class: 'b' });
      legendRows[g.id] = el(
        'li',
        { hidden: true, class: besideGroups.has(g.id) ? 'beside' : null },
        el('i', { class: `sw seg-${g.id}` }),
        el('span', { text: tr(g.label) }),
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
      nodes.state.textContent = s.connection === 'lost' ? t('reconnecting') : t('connecting');
    } else if (st) {
      const sp = st.speed;
      const speed = sp === 'lesson' ? t('lesson pace') : sp === 'max' ? t('full speed') : t(['{n} step/s', '{n} steps/s'], { n: sp }, sp);
      const words = { paused: t('paused'), resting: t('resting'), waiting: t('waiting') };
      nodes.state.textContent = st.state === 'running' ? t('running · {speed}', { speed }) : words[st.state] ?? st.state;
      nodes.state.dataset.state = st.state;
    }
    const step = s.step;
    nodes.step.textContent = fmtInt(st?.step ?? step?.step);
    nodes.loss.textContent = fmtLoss(step?.loss ?? st?.loss);
    nodes.epoch.textContent = fmtInt(step?.epoch ?? st?.epoch);
    nodes.restarts.textContent = fmtInt(Math.max(st?.restarts ?? 0, s.rollbacks));
    nodes.tps.textContent = fmtRate(store.tokensPerSecond());
  }

  let lensModels = null; // /api/labs/lens/models
  let lensResult = null; // the latest lens answer, or {error}
  let lensKey = '';

  function renderTime() {
    const lens = store.state.lens;
    if (lens) return renderLens();
    const step = store.state.step;
    if (title && title.textContent !== liveTitle) title.textContent = liveTitle;
    nodes.panel?.classList.remove('lensing');
    if (!step?.trace || !groups.length) return;
    const seconds = groupSeconds(step.trace);
    const total = drawBar(seconds, 'live');
    const sent = {};
    for (const x of planTraffic(store.state.hello, step.plan_stats)) sent[x.group] = (sent[x.group] ?? 0) + x.bytes;
    for (const g of groups) legendBytes[g.id].textContent = sent[g.id] ? fmtBytes(sent[g.id]) : '';
    segs.data?.classList.toggle('waited', Boolean(step.loader?.waited));
    nodes.total.textContent = t('{sim} simulated · {here} here', { sim: secs(step.sim_step_s ?? total), here: secs(step.wall_step_s) });
    const h = store.state.hello;
    which.textContent = t('Live step {step} of the tiny model ({weights} weights) on this {gpus}-GPU cluster', { step: whole(step.step), weights: whole(h?.n_params), gpus: whole(h?.config?.gpus) });
    const faulted = activeFaults(store.state.faults, step.step).length > 0;
    why.textContent = liveWhy(shareOf(seconds, total), h?.n_params, faulted);
    if (h?.measured) {
      // An attached real job (ui/attach.js): every figure was measured there, none simulated.
      if (title) title.textContent = t('One step, measured');
      nodes.total.textContent = t('{time} measured on your cluster', { time: secs(step.wall_step_s) });
      which.textContent = t('Step {step} of your job: {ranks} ranks, {weights} weights', { step: whole(step.step), ranks: whole(h.attached?.world_size), weights: whole(h.n_params) });
      why.textContent = '';
    }
  }

  function shareOf(seconds, total) {
    return Object.fromEntries(barGroups.map((g) => [g.id, total > 0 ? (seconds[g.id] ?? 0) / total : 0]));
  }

  /** Draw the bar and its legend from seconds by group; returns the bar's sum. */
  let lastSource = '';
  let lastShares = {};
  function drawBar(seconds, source) {
    // A different step (live or a lens model) has groups of its own: the rows start afresh.
    // It flips at once to the other step's shares (a slide from the old ones would blur it).
    // So does a step whose shares jumped (a fault starting or ending): only small changes slide.
    const next = shareOf(seconds, barGroups.reduce((a, g) => a + (seconds[g.id] ?? 0), 0));
    const jump = barGroups.some((g) => Math.abs((next[g.id] ?? 0) - (lastShares[g.id] ?? 0)) > 0.1);
    const flipped = source !== lastSource;
    if (flipped) seen.clear();
    lastSource = source;
    lastShares = next;
    for (const g of barGroups) segs[g.id].style.transition = flipped || jump ? 'none' : '';
    const total = barGroups.reduce((a, g) => a + (seconds[g.id] ?? 0), 0);
    let shares = barGroups.map((g) => (total > 0 ? (seconds[g.id] ?? 0) / total : 0));
    shares = shares.map((x, i) => (seconds[barGroups[i].id] > 0 ? Math.max(x, MIN_SHARE) : 0));
    const norm = shares.reduce((a, b) => a + b, 0) || 1;
    barGroups.forEach((g, i) => {
      segs[g.id].style.flexBasis = `${(100 * shares[i]) / norm}%`;
    });
    // The beside-stripe starts where compute does: that is the work it runs alongside. The
    // hidden all-reduce runs under the end of the backward pass: it ends where compute ends.
    const computeAt = barGroups.findIndex((g) => g.id === 'compute');
    const before = computeAt < 0 ? 0 : shares.slice(0, computeAt).reduce((a, b) => a + b, 0) / norm;
    const computeEnd = computeAt < 0 ? 0 : before + shares[computeAt] / norm;
    let offset = before;
    for (const id of besideGroups) {
      const v = seconds[id] ?? 0;
      const w = total > 0 && v > 0 ? Math.min(1, Math.max(MIN_SHARE, v / total)) : 0;
      const at = id === 'allreduce_hidden' && computeAt >= 0 ? Math.max(0, computeEnd - w) : Math.min(offset, 1 - w);
      segs[id].style.left = `${100 * at}%`;
      segs[id].style.width = `${100 * w}%`;
      if (id !== 'allreduce_hidden') offset = Math.min(1, offset + w);
    }
    beside.hidden = ![...besideGroups].some((id) => (seconds[id] ?? 0) > 0);
    const hidden = seconds.allreduce_hidden ?? 0;
    hiddenNote.hidden = !(hidden > 0);
    if (hidden > 0) {
      const exposed = seconds.allreduce ?? 0;
      hiddenNote.textContent = t('All-reduce hidden under backward: {hidden} (not added to the step) · exposed: {exposed}', { hidden: secs(hidden), exposed: secs(exposed) });
    }
    for (const g of groups) {
      const v = seconds[g.id] ?? 0;
      if (v > 0) seen.add(g.id);
      legendRows[g.id].hidden = !seen.has(g.id);
      legendVals[g.id].textContent = fmtSeconds(v);
      legendBytes[g.id].textContent = '';
    }
    nodes.bar.dataset.total = String(total);
    nodes.bar.dataset.source = source;
    nodes.bar.dataset.shares = JSON.stringify(shareOf(seconds, total));
    return total;
  }

  function lensRequest() {
    const lens = store.state.lens;
    const h = store.state.hello;
    const preset = h?.config?.preset ?? 'h100';
    const q = new URLSearchParams({ model: lens.model, gpus: String(lens.gpus), preset });
    if (lens.schedule && lens.schedule !== '1f1b') q.set('schedule', lens.schedule);
    if (lens.virtual > 1) q.set('virtual', String(lens.virtual));
    return q;
  }

  async function fetchLens() {
    const lens = store.state.lens;
    if (!lens) return;
    const q = lensRequest();
    const key = q.toString();
    if (key === lensKey) return;
    lensKey = key;
    lensResult = null;
    renderLens();
    let body = null;
    try {
      let res = await fetch(`/api/labs/lens?${q}`);
      // The model's own plan does not fit this many GPUs: try the live run's plan.
      const p = store.state.hello?.plan;
      if (res.status === 422 && p) {
        const q2 = new URLSearchParams(q);
        q2.set('tp', String(p.tp ?? 1));
        q2.set('pp', String(p.pp ?? 1));
        res = await fetch(`/api/labs/lens?${q2}`);
      }
      body = await res.json();
      if (!res.ok) body = { error: (body?.detail?.[0]?.msg ?? `HTTP ${res.status}`).replace(/^Value error, /, '') };
    } catch (err) {
      body = { error: String(err?.message ?? err) };
    }
    if (key !== lensKey) return; // the choice changed meanwhile
    lensResult = body;
    renderLens();
  }

  function renderLens() {
    const lens = store.state.lens;
    const h = store.state.hello;
    const m = lensModels?.models?.[lens.model];
    nodes.panel?.classList.add('lensing');
    if (title) title.textContent = t('What this step would cost for a {model} model', { model: m?.label ?? lens.model });
    const r = lensResult;
    which.dataset.lens = `${lens.model}:${!r ? 'working' : r.error ? 'refused' : 'priced'}`; // for tests
    if (!r || r.error) {
      which.textContent = r?.error ? t('The lens cannot price this: {error}', { error: tr(r.error) }) : t('Working it out…');
      why.textContent = '';
      return;
    }
    if (!groups.length) return;
    drawBar(r.groups, `lens:${r.model}:${r.gpus}`);
    segs.data?.classList.remove('waited');
    const plan = `tp ${r.plan.tp} × pp ${r.plan.pp} × dp ${r.plan.dp}${r.plan.ep > 1 ? ` × ep ${r.plan.ep}` : ''}${r.plan.pp > 1 ? `, ${scheduleName(r.plan.schedule, r.plan.virtual)}` : ''}`;
    nodes.total.textContent = t('{time} a step · {mfu} of peak end to end', { time: secs(r.step_s), mfu: percent(r.mfu) });
    const v = { model: r.label, params: rate(r.params), tokens: rate(r.tokens_per_step), gpus: whole(r.gpus), gpu: r.gpu, plan };
    which.textContent = r.fits
      ? t('Not the live run: one step of {model} ({params} weights, {tokens} tokens a step) on {gpus}× {gpu}, plan {plan}, by the same timing rules', v)
      : t('Not the live run: one step of {model} ({params} weights, {tokens} tokens a step) on {gpus}× {gpu}, plan {plan} — it would not fit in their memory, by the same timing rules', v);
    why.textContent = join([
      t('{why} Each step is {flops} × 10^{exp} operations (6 × {params} weights × {tokens} tokens), so the GPUs compute for {compute}; most of the all-reduce hides under the backward pass.', { why: tr(r.why), compute: secs(r.groups.compute), ...flopsValues(r) }),
      lensMemory(r),
    ]);
    why.title = join((r.assumptions ?? []).map(tr), '\n'); // each line in the page's language
    nodes.assumption.textContent = t('Assumed: {first} (all {n} assumptions: hover the sentence above)', { first: tr(r.assumptions?.[0] ?? ''), n: whole(r.assumptions?.length) });
    nodes.assumption.title = join((r.sources ?? []).map(tr), '\n');
  }

  function renderLensControls() {
    const h = store.state.hello;
    const live = h?.config?.gpus;
    const keep = lensGpus.value;
    lensGpus.replaceChildren(
      el('option', { value: String(live ?? ''), text: t(['this cluster ({gpus} GPU)', 'this cluster ({gpus} GPUs)'], { gpus: live ?? '–' }, live) }),
      ...LENS_GPUS.filter((n) => n !== live).map((n) => el('option', { value: String(n), text: t('{n} GPUs', { n }) })),
    );
    const lens = store.state.lens;
    // Off, it names the live cluster (the step on show); on, the cluster the lens prices.
    if (lens) lensGpus.value = String(lens.gpus);
    else lensGpus.value = String(live ?? keep);
    lensGpus.disabled = !lens;
    // The live step is laid out with the live plan's schedule: the choice shows with the lens.
    lensSchedule.hidden = scheduleLabel.hidden = !lens;
    lensSchedule.value = `${lens?.schedule ?? '1f1b'}:${lens?.virtual ?? 1}`;
    lensModel.value = lens?.model ?? '';
  }

  function chooseLens() {
    const model = lensModel.value;
    const gpus = Number(lensGpus.value) || store.state.hello?.config?.gpus || 1024;
    const [schedule, v] = lensSchedule.value.split(':');
    store.set('lens', model ? { model, gpus, schedule, virtual: Number(v) || 1 } : null);
  }
  lensModel.addEventListener('change', chooseLens);
  lensGpus.addEventListener('change', chooseLens);
  lensSchedule.addEventListener('change', chooseLens);

  fetch('/api/labs/lens/models')
    .then((res) => (res.ok ? res.json() : null))
    .then((body) => {
      lensModels = body;
      for (const [id, m] of Object.entries(body?.models ?? {})) {
        // A model's size and name are the same in every language.
        lensModel.append(el('option', { value: id, translate: 'no', text: `${id} (${m.label})` }));
      }
      renderLensControls();
      if (store.state.lens) renderLens();
    })
    .catch(() => {
      lensRow.hidden = true; // no lens without its models; the live step still shows
    });

  store.on('change:lens', () => {
    renderLensControls();
    if (store.state.lens) fetchLens();
    else {
      lensKey = '';
      why.removeAttribute('title');
      renderAssumption();
    }
    renderTime();
  });

  function renderAssumption() {
    const h = store.state.hello;
    if (!h) return;
    if (h.measured) {
      // An attached real job: nothing is assumed, every figure was measured (ui/attach.js).
      nodes.assumption.textContent = h.preset?.label ?? t('Measured on your cluster');
      nodes.assumption.title = (h.attached?.hosts ?? []).join('\n');
      return;
    }
    const p = h.preset ?? {};
    const gpus = h.topology?.gpus?.length ?? h.config?.gpus;
    // The GPU's name is a name: the same in every language.
    const parts = [el('span', { translate: 'no', lang: 'en', text: `${gpus}× ${p.gpu ?? p.label ?? 'GPU'}` })];
    if (p.mfu) parts.push(t('{pct} utilisation', { pct: percent(p.mfu) }));
    // The preset's *_gbps fields are gigabytes per second, one direction, per GPU.
    if (p.nvlink_gbps) parts.push(t('NVLink {bw}', { bw: `${whole(p.nvlink_gbps)} GB/s` }));
    if (p.network_gbps) parts.push(t('network {bw} per GPU', { bw: `${whole(p.network_gbps)} GB/s` }));
    // Mixed precision: the gradients travel in BF16, whatever the tiny model computes in.
    if (p.grad_wire_bytes) parts.push(t('gradients sent as BF16 ({n} bytes each)', { n: p.grad_wire_bytes }));
    nodes.assumption.replaceChildren(
      t('Assumed hardware:'),
      ' ',
      ...parts.flatMap((part, i) => [...(i ? [' · '] : []), typeof part === 'string' ? el('span', { text: part }) : part]),
      ...(p.sources?.length ? [' ', t('(public specs)')] : []),
    );
    nodes.assumption.title = join((p.sources ?? []).map(tr), '\n');
  }

  store.on('hello', (msg) => {
    buildGroups(msg);
    renderLensControls();
    if (store.state.lens) {
      lensKey = '';
      fetchLens();
    }
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

/** The textbook's bubble beside the measured one, and why they differ (ui/bubble.js). */
function textbookWords(p, stats, trace) {
  const book = textbookBubble(p.pp, p.microbatches);
  const said = t('Textbook, (p − 1) / (m + p − 1): {pct}', { pct: percent(book, 1) });
  if (!stats) return said;
  const hops = handoffs(trace);
  if (!hops || stats.bubble_fraction - book < 0.02) return `${said}. ${t('The same as measured.')}`;
  return `${said}. ${t('Measured is more: each hand-off between stages takes {hop} on its link, beside {work} of a stage’s work on a microbatch; the textbook counts hand-offs as free.', { hop: secs(hops.handoff), work: secs(hops.work) })}`;
}

/** The plan card: the plan in words, the measured bubble, each kind's traffic per step. */
function buildPlanCard(root) {
  if (!root) return { render() {} };
  const layout = el('p', { class: 'plan-layout' });
  const detail = el('p', { class: 'plan-detail' });
  const bubble = el('p', { class: 'plan-bubble' });
  const textbook = el('p', { class: 'plan-textbook' });
  const trafficHead = el('p', { class: 'plan-traffic-head', text: t('Sent between GPUs in this step') });
  const traffic = el('ul', { class: 'plan-traffic', 'aria-label': t('Bytes sent between GPUs in this step') });
  root.replaceChildren(
    el('div', { class: 'plan-head' }, el('h3', { text: t('The plan') }), el('span', { class: 'hint', text: t('how the GPUs share the job') })),
    layout,
    detail,
    bubble,
    textbook,
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
      if (p.pp > 1) detail.title = scheduleLong(p.schedule);
      else detail.removeAttribute('title');
      // The step on screen may still be the old run's until the new run's first step.
      const stats = state.step?.plan_stats ?? null;
      root.dataset.bubble = stats ? String(stats.bubble_fraction) : '';
      bubble.classList.toggle('none', p.pp === 1);
      if (p.pp > 1) {
        const pct = stats ? percent(stats.bubble_fraction, 1) : '–';
        bubble.replaceChildren(
          t('Pipeline bubble'),
          ' ',
          el('strong', { class: 'plan-bubble-pct', text: pct }),
          el('span', { class: 'plan-why' }, ' ', t('of the stages’ time spent waiting, measured')),
        );
        textbook.textContent = textbookWords(p, stats, state.step?.trace);
      } else {
        bubble.textContent = t('One stage: no pipeline, no bubble');
      }
      textbook.hidden = p.pp === 1 || !textbook.textContent;
      const rows = planTraffic(hello, stats).map((x) =>
        el(
          'li',
          { 'data-kind': x.kind },
          el('i', { class: `sw seg-${x.group}` }),
          el('span', { text: x.label }),
          el('span', { class: 'v', text: fmtBytes(x.bytes) }),
        ),
      );
      traffic.replaceChildren(...rows);
      traffic.hidden = trafficHead.hidden = rows.length === 0;
    },
  };
}
