// The story player (./player.js, with its chapters' values, and its stylesheet) loads the
// first time a story is asked for: the "One GPU" button, Shift+G, or ?story= in the address.
// Until then this stands in for it, so the page's first load carries none of it.

const STYLES = '/static/css/story.css';

/** The story's stylesheet, once: resolves when it has loaded (or failed: the words still
 * show, unstyled, rather than never). */
function styled() {
  if (document.querySelector(`link[href="${STYLES}"]`)) return Promise.resolve();
  return new Promise((resolve) => {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = STYLES;
    link.onload = link.onerror = () => resolve();
    document.head.append(link);
  });
}

const CLOSED = {
  id: null, chapter: null, chapters: 0, chapterId: null, run: null, liveRun: null, ready: false,
  caption: '', title: '', note: '', pending: null, drift: null, memo: {}, figure: null,
};

export function lazyStory(store, deps) {
  let player = null;
  let loading = null;
  const load = () => {
    loading ??= Promise.all([import('./player.js'), styled()]).then(([m]) => {
      player = m.mountStory(store, deps);
      return player;
    });
    return loading;
  };

  // Shift+G opens the story from anywhere before the player is here; once it is, its own
  // keys take over (G alone is the scale field).
  function onKey(ev) {
    if (player || ev.key !== 'G' || !ev.shiftKey || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t instanceof Element && t.closest('input, textarea, select, [contenteditable]')) return;
    ev.preventDefault();
    load().then((p) => p.open('one-gpu', 1));
  }
  window.addEventListener('keydown', onKey, true);

  return {
    open: (id, at) => load().then((p) => p.open(id, at)),
    close: () => player?.close(),
    fromUrl() {
      if (new URL(window.location.href).searchParams.has('story')) load().then((p) => p.fromUrl());
    },
    get active() {
      return player?.active ?? false;
    },
    info: () => (player ? player.info() : { ...CLOSED, memo: {} }),
  };
}
