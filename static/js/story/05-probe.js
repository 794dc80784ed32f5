// Chapters 5, 6 and 10: "Once upon a ___": the live probe's five best guesses as bars, the
// error as a pink bracket on how far "time" falls short of certain. In the scene, GPU 1
// open with its four layers and the live step playing through them, the batch as trays of
// text at its door, the top one the prompt, its tokens entering as each step begins; in chapter 6 ("The model's guess") the guesses stand as bars over the
// layers too, the error bracketed in pink.
import { t } from '../i18n/lang.js';
import { h, redrawer } from './figure.js';
import { gpuCloseUp } from './closeup.js';

// The model's own English words stay as they are on a page in another language.
const MODEL_WORDS = { translate: 'no', lang: 'en' };

export function enter(ctx) {
  const { figure, store } = ctx;
  const probeNow = () => store.state.step?.probe ?? store.state.lastProbe ?? null;
  const guess = ctx.chapter?.id === 'guess' ? probeNow : null;
  const gpu = gpuCloseUp(ctx, true, { layers: 4, stepping: true, batch: {}, prompt: () => probeNow()?.prompt ?? null, guess });
  const draw = redrawer(figure, (probe) => {
    const time = probe.top.find((g) => g.token === 'time');
    return [
      h('p', { class: 'sf-prompt', ...MODEL_WORDS }, `${probe.prompt} `, h('span', { class: 'sf-blank', text: '____' })),
      h('div', { class: 'sf-probe' }, probe.top.map((g) => h('div', { class: `sf-pbar${g.token === 'time' ? ' sf-time' : ''}` },
        h('span', { class: 'sf-pword', ...MODEL_WORDS, text: g.token }),
        h('span', { class: 'sf-ptrack' }, h('b', { style: `width:${g.p * 100}%` }), g.token === 'time' ? h('i', { class: 'sf-error', style: `left:${g.p * 100}%` }) : null, h('i', { class: 'sf-certain' })),
        h('span', { class: 'sf-pp', text: `${Math.round(g.p * 100)}%` }),
      ))),
      h('p', { class: 'sf-legend' }, h('i', { class: 'sf-swatch sf-err' }), ` ${time ? t('the error: how far “time” falls short of certain') : t('“time” is not in the top five yet')}`),
    ];
  });
  const update = () => {
    gpu.update();
    const probe = store.state.step?.probe ?? store.state.lastProbe;
    if (probe) draw(probe.top, probe);
  };
  update();
  return { update, leave: gpu.leave, info: gpu.info };
}
