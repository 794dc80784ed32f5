// Chapter 18: inside one layer: attention at the base, the router's notch, the experts
// above (as many as the live model has); a token lights the top-k it is routed to.
import { h, redrawer } from './figure.js';

export function enter({ figure, store }) {
  const draw = redrawer(figure, (experts, k) => [
    h('div', { class: 'sf-layer' },
      h('div', { class: 'sf-experts' }, Array.from({ length: experts }, (_, i) => h('b', { class: `sf-expert${i === 2 || i === experts - 5 ? ' sf-chosen' : ''}`, text: String(i + 1) }))),
      h('div', { class: 'sf-router', text: `router: picks ${k} of ${experts}` }),
      h('div', { class: 'sf-attn', text: 'attention' }),
    ),
    h('p', { class: 'sf-legend', text: `One token: ${k} experts lit (the picture's choice; the live router decides per token)` }),
  ]);
  const update = () => {
    const cfg = store.state.hello?.config;
    if (cfg) draw([cfg.experts, cfg.top_k], cfg.experts, cfg.top_k);
  };
  update();
  return { update, leave() {} };
}
