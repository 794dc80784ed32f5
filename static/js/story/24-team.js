// Chapters 24-26: the 64-GPU team: a row per stage, a column per expert range (from the
// plan's roles), GPU 1 lit. Chapter 24 ("Deeper") shows the stages two GPUs wide, the
// model's depth first; chapter 25 ("Wider") every GPU of a stage; chapter 26 ("One step")
// colours every cell with the work its GPU is doing at this moment of the live step (its
// lane of the trace: forward, backward, waiting, the update), under a legend. In the scene,
// the same team as one block of GPUs stacked by stage (team3d.js).
import { t } from '../i18n/lang.js';
import { teamCloseUp } from './closeup.js';
import { h, redrawer } from './figure.js';
import { stageGrid } from './21-stages.js';
import { phaseOf } from './phases.js';

const DEEP = 2; // GPUs a stage, as chapter 24 draws it

export function enter(ctx) {
  const { figure, store, chapter, getStage } = ctx;
  const id = chapter?.id;
  const block = teamCloseUp(ctx, { per: id === 'deeper' ? DEEP : 0, live: id === 'one-step' });
  const draw = redrawer(figure, (roles, plan, cfg) => {
    let copy0 = roles.filter((r) => r.dp < plan.ep);
    if (id === 'deeper') copy0 = copy0.filter((r) => copy0.filter((x) => x.stage === r.stage).indexOf(r) < DEEP);
    return [
      id === 'deeper'
        ? h('p', { class: 'sf-legend', text: t('Pipeline parallelism · {pp} stages of {per} GPUs: {gpus} in all · {layers} layers fit', { pp: plan.pp, per: DEEP, gpus: plan.pp * DEEP, layers: cfg.n_layer }) })
        : h('p', { class: 'sf-legend', text: t("Pipeline parallelism · {pp} stages · experts split {ep} ways (cells: each GPU's experts of {experts})", { pp: plan.pp, ep: plan.ep, experts: cfg.experts }) }),
      stageGrid(copy0, null, { compact: true }),
      id === 'one-step'
        ? h('p', { class: 'sf-legend sf-kinds' }, ...['forward', 'backward', 'wait', 'update'].flatMap((k) => [h('i', { class: `sf-swatch sf-k-${k}` }), ` ${{ forward: t('forward pass'), backward: t('backward pass'), wait: t('waiting'), update: t('update') }[k]}  `]))
        : null,
    ];
  });
  // Chapter 26: each cell in the colour of its GPU's work, frame by frame (the cells are
  // read once a drawing, not every frame).
  let cells = [];
  const shown = new Set(); // every kind a cell has taken since the chapter began
  // Followed from the stage's frames once there is a stage: a chapter opened directly can be
  // entered before the scene is up.
  let off = null;
  const follow = () => {
    if (off || id !== 'one-step') return;
    off = getStage?.()?.onUpdate?.((frame) => {
      for (const cell of cells) {
        const kind = frame?.lane?.(Number(cell.dataset.gpu))?.kind ?? null;
        const k = kind === 'wait' ? 'wait' : phaseOf(kind)?.phase ?? 'idle';
        if (cell.dataset.kind !== k) {
          cell.classList.remove(`sf-k-${cell.dataset.kind}`);
          cell.classList.add(`sf-k-${k}`);
          cell.dataset.kind = k;
          shown.add(k);
        }
      }
    }) ?? null;
  };
  const update = () => {
    follow();
    block.update();
    const s = store.state;
    if (s.hello?.roles) draw([s.hello.run_id], s.hello.roles, s.hello.plan, s.hello.config);
    cells = [...figure.querySelectorAll('.sf-cell')];
  };
  update();
  return {
    update,
    leave: () => {
      off?.();
      block.leave();
    },
    info: () => ({
      cells: cells.length,
      kinds: [...new Set(cells.map((c) => c.dataset.kind).filter(Boolean))].sort(),
      shown: [...shown].sort(),
      team: block.info(),
    }),
  };
}
