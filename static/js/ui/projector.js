// Projector mode: a high-contrast theme with type sized for the back of a room. It starts
// on with `?projector` in the address and is toggled from the toolbar. Reduced motion is
// passed on to the stage here too, since both are "how should this room see it" settings.

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
