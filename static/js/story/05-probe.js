// Chapters 5, 6 and 10: "Once upon a ___": the live probe's five best guesses as bars, the
// error as a pink bracket on how far "time" falls short of certain.
import { h, redrawer } from './figure.js';

// The model's own English words stay as they are on a page in another language.
const MODEL_WORDS = { translate: 'no', lang: 'en' };

export function enter({ figure, store }) {
  const draw = redrawer(figure, (probe) => {
    const time = probe.top.find((t) => t.token === 'time');
    return [
      h('p', { class: 'sf-prompt', ...MODEL_WORDS }, `${probe.prompt} `, h('span', { class: 'sf-blank', text: '____' })),
      h('div', { class: 'sf-probe' }, probe.top.map((t) => h('div', { class: `sf-pbar${t.token === 'time' ? ' sf-time' : ''}` },
        h('span', { class: 'sf-pword', ...MODEL_WORDS, text: t.token }),
        h('span', { class: 'sf-ptrack' }, h('b', { style: `width:${t.p * 100}%` }), t.token === 'time' ? h('i', { class: 'sf-error', style: `left:${t.p * 100}%` }) : null, h('i', { class: 'sf-certain' })),
        h('span', { class: 'sf-pp', text: `${Math.round(t.p * 100)}%` }),
      ))),
      h('p', { class: 'sf-legend' }, h('i', { class: 'sf-swatch sf-err' }), time ? ' the error: how far “time” falls short of certain' : ' “time” is not in the top five yet'),
    ];
  });
  const update = () => {
    const probe = store.state.step?.probe ?? store.state.lastProbe;
    if (probe) draw(probe.top, probe);
  };
  update();
  return { update, leave() {} };
}
