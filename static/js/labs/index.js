// Concept labs: ring all-reduce, GPU memory, swap-it cards, cost, talk about it.
// mountLabs is called by main.js once the page is up; it returns the lab keys for the toolbar.
export function mountLabs({ store, send, stage, ui } = {}) {
  return { keys: [], closeAll() {} };
}
