// What a page shows, as named parts: the one description that presenting (the presenter's
// page sends it, followers apply it), lesson links (?view=3&tour=4 ...) and "copy link to
// this view" all share. Each part is a flat object of plain values; a part can be added
// (a story chapter, say) with `addPart(name, {read, apply})` and nothing else changes.
//
// apply() goes through the page's own actions, exactly as if this page's keys had done it,
// so there is one code path for "what the page shows". A part that cannot be applied yet
// (the scene data or the labs still loading) is kept and applied when they arrive.

const RETRY_MS = 250;
const RETRY_FOR_MS = 30000;

function same(a, b) {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export function createParts({ store, actions, getTour, getLabs, getStage, getStory }) {
  const defs = new Map();
  let pending = null; // {parts, since}: parts waiting for the page to be ready for them
  let timer = 0;

  const labs = () => getLabs?.() ?? null;

  // ---- the tour and its stop (and whether the stop's question has been answered) ----
  defs.set('tour', {
    read() {
      const t = store.state.tour;
      return { active: Boolean(t.active), stop: t.stop ?? 0, revealed: t.revealed !== false, ended: Boolean(t.ended) };
    },
    apply(p) {
      const tour = getTour();
      if (!tour) return false;
      if (!p.active) {
        if (store.state.tour.active) tour.stop();
        return true;
      }
      if (!tour.length) return false; // the scene data is not here yet
      if (p.ended === true) {
        if (!tour.ended) tour.end();
        return true;
      }
      return tour.goTo(Math.max(0, Math.min(tour.length - 1, Number(p.stop) || 0)), { reveal: p.revealed === true });
    },
  });

  // ---- a guided story and its chapter (static/js/story/): the chapter's card, words,
  // figure and camera come with it, as on the presenting page ----
  defs.set('story', {
    read() {
      const s = store.state.story;
      return s ? { id: s.id, chapter: s.chapter } : { id: null };
    },
    apply(p) {
      const story = getStory?.();
      if (!story) return false; // the page is still starting
      if (!p.id) {
        if (story.active) story.close();
        return true;
      }
      const now = store.state.story;
      const at = Math.max(1, Number(p.chapter) || 1);
      if (now && now.id === p.id && now.chapter === at) return true;
      story.open(String(p.id), at);
      return true;
    },
  });

  // ---- the camera view (1-4; 0 the overview) ----
  defs.set('view', {
    read() {
      return { view: store.state.view };
    },
    apply(p) {
      const n = Number(p.view);
      if (!Number.isInteger(n) || n < 0 || n > 9) return true;
      // A tour stop sets its own view: only a different one is a move of its own.
      if (store.state.view !== n) actions.view(n);
      return true;
    },
  });

  // ---- the camera moved by hand (orbit, zoom): followers see the same angle ----
  // Flat numbers (a part holds only plain values): where the camera stands (px, py, pz) and
  // the point it looks at (tx, ty, tz), to the centimetre; {manual: false} at a numbered view.
  const AXES = ['px', 'py', 'pz', 'tx', 'ty', 'tz'];
  defs.set('orbit', {
    read() {
      const pose = getStage?.()?.cameraPose?.();
      if (!pose) return { manual: false };
      const v = [...pose.position, ...pose.target].map((x) => Math.round(x * 100) / 100);
      return { manual: true, ...Object.fromEntries(AXES.map((k, i) => [k, v[i]])) };
    },
    apply(p) {
      const stage = getStage?.();
      if (!stage) return p.manual !== true; // the stage is still coming: try again
      const v = AXES.map((k) => p[k]);
      if (p.manual === true && v.every(Number.isFinite)) {
        stage.setCameraPose({ position: v.slice(0, 3), target: v.slice(3) });
      } else if (stage.cameraPose?.()) actions.view(store.state.view); // back to the numbered view
      return true;
    },
  });

  // ---- what the scene shows: labels, signal, spin, the lifted fabric, projector mode ----
  const toggles = {
    labels: () => actions.toggleLabels(),
    signal: () => actions.toggleSignal(),
    spin: () => actions.toggleSpin(),
    exploded: () => actions.toggleExplode(),
    projector: () => actions.toggleProjector(),
  };
  defs.set('show', {
    read() {
      return Object.fromEntries(Object.keys(toggles).map((k) => [k, Boolean(store.state[k])]));
    },
    apply(p) {
      for (const [k, flip] of Object.entries(toggles)) {
        if (typeof p[k] === 'boolean' && p[k] !== Boolean(store.state[k])) flip();
      }
      return true;
    },
  });

  // ---- the open lab and its inputs (the memory lab's, swap-it's card) ----
  defs.set('lab', {
    read() {
      const l = labs();
      const open = l?.openId ?? null;
      const out = { open };
      if (open === 'memory') Object.assign(out, l.lab('memory')?.inputs?.() ?? {});
      if (open === 'swap') out.placement = store.state.placement ?? null;
      return out;
    },
    apply(p) {
      const l = labs();
      if (!l || typeof l.lab !== 'function') return false;
      const want = typeof p.open === 'string' ? p.open : null;
      if (!want) {
        if (l.openId) l.closeAll();
        return true;
      }
      if (l.has && !l.has(want)) return true; // a lab this page does not have
      if (l.openId !== want) l.open(want);
      const lab = l.lab(want);
      if (!lab) return false; // its code is still loading: applied when it has come
      if (want === 'memory') lab.setInputs?.({ params: p.params, precision: p.precision, gpu: p.gpu, spread: p.spread });
      if (want === 'swap' && typeof p.placement === 'string') lab.select?.(p.placement);
      return true;
    },
  });

  function read() {
    const out = {};
    for (const [name, def] of defs) {
      try {
        out[name] = def.read();
      } catch (err) {
        console.warn(`reading part ${name} failed`, err);
      }
    }
    return out;
  }

  /** Apply what `parts` names (parts it does not name stay as they are). */
  function apply(parts) {
    clearTimeout(timer);
    const left = {};
    for (const [name, value] of Object.entries(parts ?? {})) {
      const def = defs.get(name);
      if (!def || !value || typeof value !== 'object') continue;
      let done = true;
      try {
        done = def.apply(value) !== false;
      } catch (err) {
        console.warn(`applying part ${name} failed`, err);
      }
      if (!done) left[name] = value;
    }
    if (!Object.keys(left).length) {
      pending = null;
      return true;
    }
    const since = pending?.since ?? performance.now();
    pending = { parts: left, since };
    if (performance.now() - since < RETRY_FOR_MS) timer = setTimeout(() => apply(pending?.parts), RETRY_MS);
    return false;
  }

  return {
    read,
    apply,
    same,
    addPart(name, def) {
      defs.set(name, def);
    },
    names: () => [...defs.keys()],
  };
}
