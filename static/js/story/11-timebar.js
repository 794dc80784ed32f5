// Chapters 11, 12 and 15: the time bar: one step's simulated time, its compute and its
// comparing (the all-reduce) from the step's trace, against one GPU's step when measured.
// A chapter on a fresh run (12) says so over the bar once the run is seen starting over (the
// step count from 0 again); come back to from a later chapter, the run goes on and it says
// nothing of the kind. In the
// scene GPU 1 stays open: in chapter 11 the step plays through it beside the batch's trays;
// in chapter 12 the trays are empty outlines, '+ more', for the fresh run to fill.
import { gpuCloseUp } from './closeup.js';
import { t } from '../i18n/lang.js';
import { TraceView } from '../scene/trace.js';
import { fmtSeconds } from '../ui/format.js';
import { bar, h, redrawer } from './figure.js';

export function groups(store) {
  const s = store.state;
  const kinds = Object.fromEntries((s.hello?.trace_kinds ?? []).map((k) => [k.kind, k.group]));
  return s.step?.trace ? new TraceView(s.step.trace, { groups: kinds }).groupSeconds() : {};
}

/** The time bar in `figure`, without the scene (chapter 15 draws its own). */
export function timeBar({ figure, store, memo, chapter, startedOver }) {
  let fresh = false; // the run seen at its start since the chapter began
  const runs = new Set(); // the chapter's run as watched: a second id is it started over
  const draw = redrawer(figure, (now, one, g, gpus, step) => {
    const longest = Math.max(now, one ?? 0);
    const rows = [];
    if (one && gpus > 1) rows.push(bar(t('1 GPU'), one / longest, { cls: 'sf-one', text: fmtSeconds(one) }));
    rows.push(bar(t(['{n} GPU', '{n} GPUs'], { n: gpus }, gpus), now / longest, { cls: 'sf-now', text: fmtSeconds(now) }));
    if (g.allreduce) rows.push(bar(t('comparing'), g.allreduce / longest, { cls: 'sf-sync', text: fmtSeconds(g.allreduce) }));
    return [
      fresh ? h('p', { class: 'sf-fresh', text: t('A fresh run: from step 0, every weight random again; now at step {step}', { step }) }) : null,
      h('div', { class: 'sf-bars' }, rows),
      h('p', { class: 'sf-legend', text: t('one step, simulated time') }),
    ];
  });
  const update = () => {
    const hello = store.state.hello;
    if (hello?.run_id && hello.watching === store.state.watching && store.state.watching?.endsWith(`.${chapter?.run}`)) runs.add(hello.run_id);
    const step = store.state.step;
    if (!step) return;
    // Seen at step 0 or 1, or started over while watched, or started over for this chapter
    // (at full speed its first steps can pass before the page draws one).
    fresh ||= Boolean(chapter?.fresh) && ((store.state.status?.step ?? step.step) <= 1 || runs.size > 1 || Boolean(startedOver?.()));
    const g = groups(store);
    const gpus = store.state.hello?.config?.gpus ?? 1;
    draw([step.seq, memo.one?.sim_step, fresh], step.sim_step_s, memo.one?.sim_step, g, gpus, store.state.status?.step ?? step.step);
  };
  update();
  return { update, info: () => ({ now: store.state.step?.sim_step_s ?? null, one: memo.one?.sim_step ?? null }) };
}

export function enter(ctx) {
  const gpu = gpuCloseUp(ctx, true, ctx.chapter?.fresh ? { layers: 4, batch: { dim: true } } : { layers: 4, stepping: true, batch: {} });
  const bars = timeBar(ctx);
  const update = () => {
    gpu.update();
    bars.update();
  };
  return { update, leave: gpu.leave, info: () => ({ ...bars.info(), ...gpu.info() }) };
}
