// Chapters 24-26: the 64-GPU team: a row per stage, a column per expert range (from the
// plan's roles), GPU 1 lit; the step's measured bubble beside it.
import { t } from '../i18n/lang.js';
import { h, redrawer } from './figure.js';
import { stageGrid } from './21-stages.js';

export function enter({ figure, store }) {
  const draw = redrawer(figure, (roles, plan, cfg) => {
    const copy0 = roles.filter((r) => r.dp < plan.ep);
    return [
      h('p', { class: 'sf-legend', text: t("Pipeline parallelism · {pp} stages · experts split {ep} ways (cells: each GPU's experts of {experts})", { pp: plan.pp, ep: plan.ep, experts: cfg.experts }) }),
      stageGrid(copy0, null, { compact: true }),
    ];
  });
  const update = () => {
    const s = store.state;
    if (s.hello?.roles) draw([s.hello.run_id], s.hello.roles, s.hello.plan, s.hello.config);
  };
  update();
  return { update, leave() {} };
}
