// The toolbar's menu on smaller screens: one button that opens the controls that do not fit
// in the bar ("more" on a laptop, every control on a phone). The CSS decides what is folded
// away at which width; this module only opens and closes it. Choosing a control closes the
// menu again, as does a click elsewhere or Esc (actions.escape).

import { t } from '../i18n/lang.js';
import { el } from './format.js';

export function mountMenu(store, { bar, panel }) {
  const toggle = el(
    'button',
    {
      type: 'button',
      id: 'btn-menu',
      class: 'tb-toggle',
      title: t('More controls'),
      'aria-label': t('More controls'),
      'aria-expanded': 'false',
      'aria-controls': panel.id,
    },
    el('span', { class: 'tb-toggle-more', text: t('more ▾') }),
    el('span', { class: 'tb-toggle-menu', 'aria-hidden': 'true', text: t('☰ menu') }),
  );

  function set(open) {
    store.set('menuOpen', open);
    bar.classList.toggle('open', open);
    toggle.setAttribute('aria-expanded', String(open));
  }
  const close = () => store.state.menuOpen && set(false);

  toggle.addEventListener('click', (ev) => {
    ev.stopPropagation();
    set(!store.state.menuOpen);
  });
  // A control chosen from the open menu has done its job: get the menu out of the way. (This
  // listener is on the panel, so the button's own handler has already run.)
  panel.addEventListener('click', (ev) => {
    if (store.state.menuOpen && ev.target instanceof Element && ev.target.closest('button')) close();
  });
  document.addEventListener('pointerdown', (ev) => {
    if (store.state.menuOpen && ev.target instanceof Node && !bar.contains(ev.target)) close();
  });
  // Grown past the width that needs a menu: nothing is folded away any more.
  window.addEventListener('resize', () => {
    if (store.state.menuOpen && toggle.offsetParent === null) close();
  });

  return { toggle, close, open: () => set(true) };
}
