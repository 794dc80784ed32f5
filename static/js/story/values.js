// The live numbers a story chapter quotes, by {name}: every one read from the run (hello,
// the step on screen, its memory account and plan figures), from what the story measured
// on an earlier chapter's run (`memo`), from the engine's side copies (`drift`) or from the
// memory lab's full-size figures the story route sends (`figures`). Nothing typed.
// A number not known yet reads '…' (the player waits for it before calling a chapter ready).
// Every value is written in the page's language; `here` leaves out the live values the
// captions share with the tour (ui/live.js), for the figures' own sentences.

import { lang, t as pageT } from '../i18n/lang.js';
import { bytes, loss, percent, seconds, whole } from '../i18n/units.js';
import { liveValues } from '../ui/live.js';

export const PENDING = '…';
// The earlier runs whose figures a caption quotes (memo.<key> below).
export const QUOTED_RUNS = ['one', 'dp2', 'pp4'];

const HERE = { t: pageT, whole, bytes, seconds, percent, loss };

/** A [first, last + 1) range, counted from 1: [0, 8] -> '1–8', [7, 8] -> '8'. */
export const span = (r) => (r[1] - r[0] === 1 ? `${r[1]}` : `${r[0] + 1}–${r[1]}`);
const range = (r) => (Array.isArray(r) && r[1] > r[0] ? span(r) : PENDING);

/** Weights in words: 875,000,000 -> "875 million", 7e9 -> "7 billion". */
export function bigCount(n) {
  const { t, whole: count } = HERE;
  const by = (x, d) => +(n / x).toFixed(d);
  if (!Number.isFinite(n)) return PENDING;
  if (n >= 1e12) return t('{n} trillion', { n: by(1e12, 1) });
  if (n >= 1e9) return t('{n} billion', { n: by(1e9, 1) });
  if (n >= 1e6) return t('{n} million', { n: by(1e6, 0) });
  return count(n);
}

export function storyValues(store, { story, memo, drift, runKey, here = false }) {
  const w = HERE;
  const { t } = w;
  const pct = (x) => (Number.isFinite(x) ? w.percent(x, x < 0.1 ? 1 : 0) : PENDING);
  const count = (n) => (Number.isFinite(n) ? w.whole(n) : PENDING);
  const bytes = (b) => (Number.isFinite(b) ? w.bytes(b) : PENDING);
  const secs = (x) => (Number.isFinite(x) ? w.seconds(x) : PENDING);
  const s = store.state;
  const base = here ? {} : liveValues(store);
  const hello = s.hello;
  const plan = hello?.plan ?? {};
  const cfg = hello?.config ?? {};
  const step = s.step;
  const mem = step?.memory ?? [];
  const roles = hello?.roles ?? [];
  const fig = story?.figures ?? {};
  const probe = step?.probe ?? s.lastProbe;
  const time = probe?.top?.find((g) => g.token === 'time');
  const traffic = step?.plan_stats?.traffic_bytes ?? {};
  const a2a = Object.entries(traffic).filter(([k]) => k.includes('all_to_all') || k.includes('a2a')).reduce((a, [, v]) => a + v, 0);
  const layers = cfg.n_layer;
  const m0 = mem[0];
  const field = fig.field;
  const team = cfg.gpus;
  const mirror = Number.isFinite(field) && team ? field / team : NaN;
  const stageOf = (st) => roles.find((r) => r.stage === st);
  // A stage's GPUs by number, listed the language's way: "1 and 3", "1 und 3".
  const gpusOf = (st) => {
    const g = roles.filter((r) => r.stage === st).map((r) => String(r.gpu + 1));
    return g.length ? new Intl.ListFormat(lang, { type: 'conjunction' }).format(g) : PENDING;
  };
  const ready = (v) => (Number.isFinite(v) ? v : NaN);
  return {
    ...base,
    loss: step ? base.loss ?? w.loss(step.loss) : PENDING,
    step: count(s.status?.step ?? step?.step),
    tokens: count(step?.tokens),
    sim_step: secs(step?.sim_step_s),
    memory_per_gpu: bytes(m0?.total),
    memory_capacity: bytes(m0?.capacity),
    field_gpus: count(field),
    gpu_name: hello?.preset?.gpu ?? hello?.preset?.label ?? PENDING,
    layers: count(layers),
    experts: count(cfg.experts),
    top_k: count(cfg.top_k),
    microbatches: count(plan.microbatches),
    gpus: count(team),
    dp: count(plan.dp),
    pp: count(plan.pp),
    ep: count(plan.ep),
    ep_minus_1: count(plan.ep - 1),
    experts_per_gpu: count(cfg.experts && plan.ep ? cfg.experts / plan.ep : NaN),
    n_params: count(hello?.n_params),
    // The transformer layers' share of GPU 1's memory, per layer (the embedding is not a layer).
    layer_bytes: bytes(m0 && layers ? layerBytes(m0, fig, hello) : NaN),
    p_time: time ? pct(time.p) : probe ? t('less than the top five guesses') : PENDING,
    top_word: probe?.top?.[0]?.token ?? PENDING,
    top_p: probe?.top?.[0] ? pct(probe.top[0].p) : PENDING,
    drift_steps: count(drift?.apart?.steps),
    drift_differing: count(drift?.apart?.differing),
    drift_params: count(drift?.apart?.n_params),
    together_differing: count(drift?.together?.differing),
    sim_step_one: secs(memo.one?.sim_step),
    tokens_per_gpu: count(step && plan.dp ? step.tokens / plan.dp : NaN),
    tokens_per_gpu_one: count(memo.one?.tokens_per_gpu),
    scale_layer_params: bigCount(fig.layer_params),
    bytes_per_weight: count(fig.bytes_per_weight),
    weight_grad_bytes: count(fig.weight_grad_bytes),
    optimizer_bytes: count(fig.optimizer_bytes),
    oom_need: bytes(fig.layers8?.bytes),
    oom_share: pct(fig.layers8?.fraction),
    gpu_usable: bytes(fig.gpu_usable_bytes),
    expert_share: pct(fig.expert_share),
    gpu1_experts: range(roles[0]?.experts),
    gpu2_experts: range(roles[1]?.experts),
    gpu1_layers: range(roles[0]?.layers),
    gpu1_layers_words: roles[0] ? t(['layer {layers}', 'layers {layers}'], { layers: range(roles[0].layers) }, roles[0].layers[1] - roles[0].layers[0]) : PENDING,
    memory_before: bytes(memo.dp2?.memory),
    a2a_bytes: bytes(step ? a2a : NaN),
    stage1_gpus: gpusOf(0),
    stage2_gpus: gpusOf(1),
    stage1_layers: range(stageOf(0)?.layers),
    stage2_layers: range(stageOf(1)?.layers),
    bubble: pct(step?.plan_stats ? step.plan_stats.bubble_fraction : NaN),
    bubble_before: pct(ready(memo.pp4?.bubble)),
    deep_layers: count(fig.deep_layers),
    mirror: count(mirror),
    field_dp: count(Number.isFinite(mirror) ? plan.dp * mirror : NaN),
    run: runKey ?? '',
  };
}

function layerBytes(m0, fig, hello) {
  // Weights + gradients + optimizer of the layers GPU 1 holds, over how many it holds:
  // the account less the embedding and head, which are not layers.
  const roles = hello?.roles?.[0];
  const held = roles ? roles.layers[1] - roles.layers[0] : hello?.config?.n_layer;
  const perWeight = (m0.weights + m0.grads + m0.optimizer) / Math.max(1, m0.weights / 4);
  return held ? (fig.layer_weights ?? 0) * perWeight : NaN;
}
