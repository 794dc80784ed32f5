// Live numbers drawn from the store, already formatted with units. Tour caption templates
// in the scene data name them as {placeholders}; part cards show them as facts.
//
// The names and what each means are listed once, in app/scenes.py (CAPTION_PLACEHOLDERS),
// which the page also receives as the scene's `placeholders`; liveValues gives a value for
// exactly those names (tests/web/test_ui_live.py checks both ways).
//
// Some values do not exist yet early in a run (no checkpoint saved, no probe asked): liveValues
// lists them under the NOT_YET symbol, and a text that quotes one says its "not yet" words
// instead (fillTemplate's third argument), never "Step none yet".

import { TraceView } from '../scene/trace.js';
import { fmtBytes, fmtInt, fmtLoss, fmtRate, fmtSeconds } from './format.js';

/** The key, on liveValues' answer, of the Set of names whose values do not exist yet. */
export const NOT_YET = Symbol('notYet');

function lastCheckpoint(state) {
  const ok = (state.checkpoints ?? []).filter((c) => c.ok !== false);
  return ok.length ? ok[ok.length - 1] : null;
}

/** Simulated seconds per time-bar group: the step's lanes summed, as the HUD's bar shows. */
function groupSeconds(step, hello) {
  if (!step?.trace) return {};
  const groups = Object.fromEntries((hello?.trace_kinds ?? []).map((k) => [k.kind, k.group]));
  return new TraceView(step.trace, { groups }).groupSeconds();
}

/** A display string for every declared placeholder name. */
export function liveValues(store) {
  const s = store.state;
  const step = s.step;
  const hello = s.hello;
  const topo = hello?.topology;
  const cfg = hello?.config;
  const preset = hello?.preset;
  const mem0 = step?.memory?.[0];
  const top = step?.probe?.top?.[0] ?? lastProbe(s)?.top?.[0];
  const ckpt = lastCheckpoint(s);
  const tps = store.tokensPerSecond();
  const simTps = step?.sim_step_s > 0 ? step.tokens / step.sim_step_s : null;
  const seconds = groupSeconds(step, hello);
  const notYet = new Set();
  if (!ckpt) notYet.add('checkpoint_step').add('checkpoint_bytes');
  if (!top) notYet.add('top_word').add('top_p');
  return {
    [NOT_YET]: notYet,
    step: fmtInt(s.status?.step ?? step?.step),
    epoch: fmtInt(step?.epoch ?? s.status?.epoch),
    loss: fmtLoss(step?.loss ?? s.status?.loss),
    // Tour captions speak of the simulated hardware; the HUD shows the measured rate here.
    tokens_per_s: fmtRate(simTps),
    tokens_per_s_here: fmtRate(tps),
    tokens: fmtInt(step?.tokens),
    tokens_total: fmtInt(s.status?.tokens_total ?? step?.tokens_total),
    gpus: fmtInt(topo?.gpus?.length ?? cfg?.gpus),
    servers: fmtInt(topo?.servers?.length ?? cfg?.servers),
    gpus_per_server: fmtInt(cfg ? cfg.gpus / cfg.servers : null),
    leaves: fmtInt(topo?.leaves?.length),
    spines: fmtInt(topo?.spines?.length),
    params: fmtInt(hello?.n_params),
    n_params: fmtInt(hello?.n_params),
    vocab: fmtInt(hello?.vocab_size),
    ring_bytes: fmtBytes(step?.ring?.bytes_per_gpu),
    ring_bytes_total: fmtBytes(step?.ring?.bytes_total),
    ring_bytes_per_gpu: fmtBytes(step?.ring?.bytes_per_gpu),
    ring_passes: fmtInt(step?.ring?.passes),
    busiest_link: fmtBytes(step?.ring?.busiest_link_bytes),
    queue_depth: fmtInt(step?.loader?.queue_depth),
    queue_capacity: fmtInt(step?.loader?.queue_capacity),
    workers: fmtInt(step?.loader?.workers),
    samples_per_epoch: fmtInt(step?.loader?.samples_per_epoch),
    batches_per_epoch: fmtInt(step?.loader?.batches_per_epoch),
    checkpoint_step: ckpt ? fmtInt(ckpt.step) : 'none yet',
    checkpoint_bytes: ckpt ? fmtBytes(ckpt.bytes) : '–',
    checkpoints: fmtInt((s.checkpoints ?? []).length),
    checkpoint_every: fmtInt(cfg?.checkpoint_every),
    memory_per_gpu: fmtBytes(mem0?.total),
    memory_capacity: fmtBytes(mem0?.capacity),
    sim_step: fmtSeconds(step?.sim_step_s),
    sim_compute: fmtSeconds(seconds.compute ?? null),
    sim_allreduce: fmtSeconds(seconds.allreduce ?? null),
    top_word: top ? top.token : '…',
    top_p: top ? `${Math.round(top.p * 100)}%` : '–',
    restarts: fmtInt(s.status?.restarts ?? s.rollbacks),
    preset: preset?.label ?? preset?.name ?? '',
    gpu_name: preset?.gpu ?? preset?.label ?? 'GPU',
  };
}

/** The most recent probe: it only rides on every few steps. */
export function lastProbe(state) {
  return state.lastProbe ?? null;
}

export function rememberProbe(store) {
  let from = null; // the step the remembered probe came from
  let run = null;
  // Another run (a story chapter's, a reset): its model has not been asked yet.
  store.on('hello', (h) => {
    if (h.run_id === run) return;
    run = h.run_id;
    from = null;
    store.set('lastProbeStep', null);
    store.set('lastProbe', null);
  });
  store.on('step', (msg) => {
    if (!msg.probe) return;
    from = msg.step;
    store.set('lastProbeStep', from);
    store.set('lastProbe', msg.probe);
  });
  store.on('snapshot', (msg) => {
    if (!msg.last_step?.probe) return;
    from = msg.last_step.step;
    store.set('lastProbeStep', from);
    store.set('lastProbe', msg.last_step.probe);
  });
  // A rollback past the remembered probe leaves it on an abandoned timeline: forget it until
  // the next probe, rather than quote it as the model's current guess.
  store.on('event', (e) => {
    const d = e?.detail ?? {};
    if (e?.kind !== 'restored' || (d.reason === 'resume' && !d.steps_lost)) return;
    if (from !== null && Number.isFinite(d.restored_step) && from > d.restored_step) {
      from = null;
      store.set('lastProbe', null);
    }
  });
}

/** The {names} a template quotes. */
export function quoted(template) {
  return [...String(template ?? '').matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

/** Fill "{loss}"-style placeholders; unknown names stay visible as a dash, not as braces.
 * A template that quotes a value which does not exist yet (values[NOT_YET]) gives `notYet`
 * filled in instead, when there is one. */
export function fillTemplate(template, values, notYet = '') {
  const missing = values?.[NOT_YET];
  if (notYet && missing?.size && quoted(template).some((n) => missing.has(n))) {
    return fillTemplate(notYet, values);
  }
  // {name} is the value; {name:one|other} the words for a count of it: "1 GPU is", "8 GPUs are".
  return String(template ?? '').replace(/\{(\w+)(?::([^{}|]*)\|([^{}]*))?\}/g, (_, name, one, other) => {
    if (one !== undefined) return Number(String(values?.[name]).replace(/,/g, '')) === 1 ? one : other;
    return name in values ? String(values[name]) : '–';
  });
}
