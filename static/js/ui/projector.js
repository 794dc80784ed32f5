// Projector mode: a high-contrast theme with type sized for the back of a room. It starts
// on with `?projector` in the address and is toggled from the toolbar. Reduced motion is
// passed on to the stage here too, since both are "how should this room see it" settings.
// So is room for the scene: on a 700-1400 px screen or in projector mode the page is compact
// (body.compact, store.state.compact) and side panels are drawers, folded (app.css) to their
// heading until their button opens them.

import { t, tr } from '../i18n/lang.js';
import { el } from './format.js';

export function mountProjector(store, getStage) {
  const params = new URLSearchParams(window.location.search);
  if (params.has('projector')) store.set('projector', params.get('projector') !== '0');

  function apply() {
    document.body.classList.toggle('projector', store.state.projector);
    getStage()?.setTheme(store.state.projector ? 'projector' : 'default');
  }
  function motion() {
    document.body.classList.toggle('reduced-motion', store.state.reducedMotion);
    getStage()?.setReducedMotion(store.state.reducedMotion);
  }
  store.on('change:projector', apply);
  store.on('change:reducedMotion', motion);
  apply();
  motion();
  return {
    attach() {
      apply();
      motion();
    },
  };
}

/** Keep body.compact and store.state.compact up to date; call once. */
export function watchCompact(store) {
  const narrow = window.matchMedia?.('(min-width: 700px) and (max-width: 1400px)');
  const wide = window.matchMedia?.('(min-width: 700px)');
  const apply = () => {
    const on = Boolean(narrow?.matches || (store.state.projector && wide?.matches));
    document.body.classList.toggle('compact', on);
    store.set('compact', on);
  };
  narrow?.addEventListener?.('change', apply);
  wide?.addEventListener?.('change', apply);
  store.on('change:projector', apply);
  apply();
}

/** Make `panel` a drawer with a button in `head`; returns {open()}. */
export function mountDrawer(store, panel, { label, head = panel?.querySelector('.panel-head') }) {
  if (!panel) return null;
  const title = t('Show or fold: {what}', { what: tr(label) });
  const toggle = el('button', { type: 'button', class: 'drawer-toggle', title, 'aria-label': title });
  head?.append(toggle);
  let open = null; // the reader's choice; until there is one, folded while compact
  function render() {
    const folded = store.state.compact && open !== true;
    panel.classList.toggle('folded', folded);
    toggle.setAttribute('aria-expanded', String(!folded));
    toggle.textContent = folded ? '▸' : '▾';
  }
  toggle.addEventListener('click', () => {
    open = panel.classList.contains('folded');
    render();
  });
  store.on('change:compact', render);
  render();
  return {
    open() {
      open = true;
      render();
    },
  };
}
