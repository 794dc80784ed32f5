// "Your own run": while this page watches a run of its own (started from the new-run panel
// without the presenter's rights), the header says so, with one button back to the class
// run. The own run goes on for a minute without a viewer, then the server stops it.

export function mountOwnRun(store, actions) {
  const box = document.getElementById('own-run');
  const back = document.getElementById('own-back');
  if (!box || !back) return;
  const show = () => {
    box.hidden = !String(store.state.watching ?? '').startsWith('mine.');
  };
  back.addEventListener('click', () => actions.watchRun('class'));
  store.on('hello', show);
  show();
}
