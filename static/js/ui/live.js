// Live numbers drawn from the store, already formatted with units. Tour caption templates
// in the scene data name them as {placeholders}; part cards show them as facts.
//
// The names and what each means are listed once, in app/scenes.py (CAPTION_PLACEHOLDERS),
// which the page also receives as the scene's `placeholders`; liveValues gives a value for
// exactly those names (tests/web/test_ui_live.py checks both ways).
//
// Some values do not exist yet early in a run (no checkpoint saved, no probe asked): liveValues
// lists them under the NOT_YET symbol, and a text that quotes one says its "not yet" words
// instead (fillTemplate's third argument, i18n/content.js), never "Step none yet".

import { NOT_YET, fillTemplate, quoted } from '../i18n/content.js';
import { t } from '../i18n/lang.js';
import { bytes, loss, percent, rate, seconds, whole } from '../i18n/units.js';
import { TraceView } from '../scene/trace.js';

export { NOT_YET, fillTemplate, quoted };

// The values' writers, in the page's language.
const HERE = {
  int: whole, bytes, loss, rate, secs: seconds, pct: (p) => percent(p), none: () => t('none yet'),
  every: (r, n) => interval(r, n, (unit, v) => ({ minutes: t('{n} minutes', { n: v }), hours: t('{n} hours', { n: v }), days: t('{n} days', { n: v }) })[unit]),
};

/** How long, on average, between interruptions of a job on `gpus` GPUs that each fail at
 * `rate` per hour: in minutes up to two hours, hours up to two days, then days (`say(unit,
 * n)` writes it). */
function interval(rate, gpus, say) {
  if (!(rate > 0) || !(gpus > 0)) return '–';
  const hours = 1 / (rate * gpus);
  if (hours < 2) return say('minutes', Math.round(hours * 60));
  return hours < 48 ? say('hours', Math.round(hours)) : say('days', Math.round(hours / 24));
}

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

/** A display string for every declared placeholder name, in the page's language. */
export function liveValues(store) {
  const { int, bytes, loss, rate, secs, pct, none, every } = HERE;
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
  const lanes = groupSeconds(step, hello);
  const notYet = new Set();
  if (!ckpt) notYet.add('checkpoint_step').add('checkpoint_bytes');
  if (!top) notYet.add('top_word').add('top_p');
  return {
    [NOT_YET]: notYet,
    step: int(s.status?.step ?? step?.step),
    epoch: int(step?.epoch ?? s.status?.epoch),
    loss: loss(step?.loss ?? s.status?.loss),
    // Tour captions speak of the simulated hardware, and of what this computer manages: the
    // last step's tokens over the wall-clock time it took to compute (read on a paused run
    // too), else the rate steps have arrived at. The HUD shows the arrival rate.
    tokens_per_s: rate(simTps),
    tokens_per_s_here: rate(step?.wall_step_s > 0 ? step.tokens / step.wall_step_s : tps),
    tokens: int(step?.tokens),
    tokens_total: int(s.status?.tokens_total ?? step?.tokens_total),
    gpus: int(topo?.gpus?.length ?? cfg?.gpus),
    servers: int(topo?.servers?.length ?? cfg?.servers),
    gpus_per_server: int(cfg ? cfg.gpus / cfg.servers : null),
    leaves: int(topo?.leaves?.length),
    spines: int(topo?.spines?.length),
    params: int(hello?.n_params),
    n_params: int(hello?.n_params),
    vocab: int(hello?.vocab_size),
    ring_bytes: bytes(step?.ring?.bytes_per_gpu),
    ring_bytes_total: bytes(step?.ring?.bytes_total),
    ring_bytes_per_gpu: bytes(step?.ring?.bytes_per_gpu),
    ring_passes: int(step?.ring?.passes),
    busiest_link: bytes(step?.ring?.busiest_link_bytes),
    queue_depth: int(step?.loader?.queue_depth),
    queue_capacity: int(step?.loader?.queue_capacity),
    workers: int(step?.loader?.workers),
    samples_per_epoch: int(step?.loader?.samples_per_epoch),
    batches_per_epoch: int(step?.loader?.batches_per_epoch),
    checkpoint_step: ckpt ? int(ckpt.step) : none(),
    checkpoint_bytes: ckpt ? bytes(ckpt.bytes) : '–',
    checkpoints: int((s.checkpoints ?? []).length),
    checkpoint_every: int(cfg?.checkpoint_every),
    memory_per_gpu: bytes(mem0?.total),
    memory_capacity: bytes(mem0?.capacity),
    sim_step: secs(step?.sim_step_s),
    sim_compute: secs(lanes.compute ?? null),
    sim_allreduce: secs(lanes.allreduce ?? null),
    top_word: top ? top.token : '…',
    top_p: top ? pct(top.p) : '–',
    restarts: int(s.status?.restarts ?? s.rollbacks),
    interrupted_every: every(preset?.interruptions_per_gpu_hour, cfg?.gpus ?? topo?.gpus?.length),
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
