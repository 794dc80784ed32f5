// The story player: a guided story told chapter by chapter on the live run
// (scenes/stories/<id>.json, served at /api/stories/<id>). It feels like the tour: the same
// caption box, PageDown / PageUp / arrows / Enter and a clicker move between chapters, Esc
// leaves, and each chapter's "do it" action is a button and the Space key.
//
// A chapter is data: its words with {placeholders} filled from the run (values.js), the
// camera view, the part to highlight, the run it needs and, where it must choreograph, one
// small module of its own (static/js/story/NN-name.js: enter(ctx) -> {update(), leave()}).
// Entering a chapter makes the page watch the run it needs: the server's side run
// "<story>.<run>" (app/web/runs.py), shared by every page in that chapter and started on the
// first ask. The class run, and every page watching it, never change; leaving the story
// watches the class run again. A follower (presenter/parts.js `story`) watches the story's
// runs with the presenter; changing a run ("do it", a fresh start) still needs the rights.

import { say } from '../i18n/content.js';
import { t, tr } from '../i18n/lang.js';
import { NO_RUN_HERE, runRequests } from './request.js';
import { PENDING, QUOTED_RUNS, storyValues } from './values.js';

const STORY_IDS = ['one-gpu'];

/** Does the live run train as `want` asks (cluster, model and plan)? */
export function runMatches(hello, want) {
  if (!hello || !want) return false;
  const cfg = hello.config ?? {};
  const plan = hello.plan ?? {};
  const same = (k, v) => (k in plan ? plan[k] : cfg[k]) === v;
  return ['gpus', 'servers', 'n_layer', 'experts', 'tp', 'pp', 'ep', 'microbatches'].every((k) => same(k, want[k]))
    && (want.pp === 1 || plan.schedule === want.schedule)
    && (want.experts === 0 || cfg.top_k === want.top_k);
}

export function mountStory(store, { getStage, actions, labels }) {
  const box = document.createElement('section');
  box.className = 'story-box';
  box.id = 'story-box';
  box.hidden = true;
  box.setAttribute('aria-label', t('Story'));
  box.innerHTML = `
    <div class="story-meta"><span class="story-count" id="story-count"></span><span class="story-group" id="story-group"></span></div>
    <h2 class="story-title" id="story-title"></h2>
    <p class="story-caption" id="story-caption" aria-live="polite"></p>
    <div class="story-figure" id="story-figure"></div>
    <p class="story-note" id="story-note" role="status"></p>
    <p class="story-source" id="story-source" hidden></p>
    <div class="story-nav">
      <button type="button" id="story-prev"></button>
      <span class="story-nav-mid">
        <button type="button" class="story-do" id="story-do"></button>
        <button type="button" id="story-exit"></button>
      </span>
      <button type="button" id="story-next"></button>
    </div>`;
  document.body.append(box);
  const $ = (id) => box.querySelector(`#${id}`);
  for (const [id, textContent, title] of [
    ['story-prev', t('◀ previous'), t('Previous chapter (Page Up)')],
    ['story-do', '', t('Do it (Space)')],
    ['story-exit', t('leave story'), t('Leave the story (Esc)')],
    ['story-next', t('next ▶'), t('Next chapter (Page Down or Enter)')],
  ]) Object.assign($(id), { textContent, title });
  const els = {
    count: $('story-count'), group: $('story-group'), title: $('story-title'), caption: $('story-caption'),
    figure: $('story-figure'), note: $('story-note'), doBtn: $('story-do'), source: $('story-source'),
  };

  let story = null;
  let index = 0;
  let active = false;
  let chapterModule = null; // the entered module's {update, leave}
  let entering = 0; // bumps on every chapter change, so a late module load is dropped
  // The run asked for (a watch, or a restart), its hello not here yet.
  const asked = runRequests({
    watchRun: (ref) => actions.watchRun(ref), // on a closed socket, asked again on reconnect
    newRun: () => Boolean(actions.newRun({ ...want() })),
  });
  let freshDue = false; // restart the chapter's run once this page watches it
  let restartedFrom = null; // {ref, runId}: the run this chapter started over, and its old id
  let refused = ''; // NO_RUN_HERE, the server's English reason, or true (none given)
  let notYours = ''; // a "do it" this page may not do, said until the chapter changes
  let deferred = null; // {fresh}: a run asked for before the hello said who may change it
  let drift = null;
  const memo = {}; // per run key: what the run measured while it was live {memory, sim_step, bubble}
  const modules = new Map();

  const chapter = () => story?.chapters?.[index] ?? null;
  const want = () => (chapter() ? story.runs[chapter().run] : null);
  // A page following the presenter leaves the run to the presenter, rights or not.
  const canControl = () => !store.state.following
    && (actions?.canControl ? actions.canControl() : store.state.hello?.can_control !== false);
  const runRef = (key) => `${story.id}.${key}`;
  // The story run this page watches now (its key), or null on the class run.
  const liveKey = () => {
    const watching = store.state.watching ?? '';
    if (!story || !watching.startsWith(`${story.id}.`)) return null;
    const key = watching.slice(story.id.length + 1);
    return key in story.runs ? key : null;
  };
  const values = () => storyValues(store, { story, memo, drift, runKey: liveKey(), here: true });

  function remember() {
    const key = liveKey();
    const step = store.state.step;
    if (!key || !step) return;
    memo[key] = {
      memory: step.memory?.[0]?.total,
      sim_step: step.sim_step_s,
      bubble: step.plan_stats?.bubble_fraction,
      step: step.step,
      tokens_per_gpu: step.tokens / (store.state.hello?.plan?.dp ?? 1),
    };
  }

  // ---- the run a chapter needs --------------------------------------------------------

  function ensureRun({ fresh = false } = {}) {
    const ch = chapter();
    const run = want();
    if (!ch || !run) return;
    if (!store.state.hello) {
      // The socket is not up yet: ask once the server's hello is here.
      deferred = { fresh: fresh || Boolean(deferred?.fresh) };
      return;
    }
    deferred = null;
    const ref = runRef(ch.run);
    if (store.state.watching !== ref) {
      freshDue = fresh;
      if (asked.watch(ch.run, ref)) refused = '';
      return;
    }
    if (fresh) restart();
    else asked.watching(ref);
  }

  /** The next two runs the story will need after this chapter's, started now on the
   * server (they rest until watched), so a heavy chapter is ready when the class gets there. */
  function warmAhead() {
    const ahead = [];
    for (const ch of story.chapters.slice(index + 1)) {
      if (ch.run !== chapter().run && !ahead.includes(ch.run)) ahead.push(ch.run);
      if (ahead.length === 2) break;
    }
    for (const key of ahead) actions?.warmRun?.(runRef(key));
  }

  /** The chapter's run from step 0 (a reset of the story run this page watches): only with
   * the rights to change it; everyone watching that run starts over together. */
  function restart() {
    freshDue = false;
    if (!canControl()) return;
    refused = '';
    restartedFrom = { ref: runRef(chapter().run), runId: store.state.hello?.run_id ?? null };
    asked.restart(chapter().run, runRef(chapter().run), restartedFrom.runId);
  }

  store.on('hello', (msg) => {
    asked.hello(msg);
    if (active && freshDue && chapter() && msg.watching === runRef(chapter().run)) restart();
    if (active && deferred) ensureRun(deferred);
    if (active) render();
  });
  store.on('error', (msg) => {
    // A watch refused (no runs beside the class run here, or too many): the chapter is told
    // on the run this page watches. A restart refused: the server's reason. Refused for pace
    // only: asked again (request.js).
    const said = asked.error(msg);
    if (said === null) return;
    refused = said;
    if (active) render();
  });
  /** The figures of an earlier run the chapter quotes but this page never watched (opened
   * at a later chapter): its first step, trained on a side copy by the server. What the
   * page sees of the run itself, live, is kept in preference. */
  const firstSteps = new Set();
  function quoteEarlier() {
    const runs = story.chapters.slice(0, index).map((c) => c.run);
    for (const key of QUOTED_RUNS) {
      if (memo[key] || firstSteps.has(key) || !runs.includes(key) || story.recorded?.includes(key)) continue;
      firstSteps.add(key);
      fetch(`/api/stories/${story.id}/first-step/${key}`)
        .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
        .then((first) => {
          memo[key] ??= first;
          if (active) render();
        })
        .catch((err) => {
          firstSteps.delete(key); // asked again on the next chapter
          console.warn(`the story's run ${key} could not be measured`, err);
        });
    }
  }

  store.on('step', () => {
    remember();
    if (active) render();
  });
  // A run watched after it has stepped shows its last step from the snapshot, before (or
  // without) a live one: that step is remembered too (a later chapter quotes it).
  store.on('snapshot', () => {
    remember();
    if (active) render();
  });

  function note() {
    const ch = chapter();
    if (!ch) return '';
    if (refused === NO_RUN_HERE) return t('This server cannot start the run this chapter needs now, so the chapter shows the run you watch.');
    if (refused) return t('The run could not be changed for this chapter: {reason}', { reason: refused === true ? t('the server refused it') : tr(refused) });
    if (notYours) return notYours;
    if (!store.state.hello) return t('Connecting to the run…');
    if (watchingIt()) return '';
    return t('Starting the run this chapter needs…');
  }

  // A heavy chapter's run may be played from a recording of a real run (the hello says so):
  // the card says where its steps come from, and where the recording ends.
  function source() {
    const rec = store.state.hello?.recording;
    if (!rec || !watchingIt()) return '';
    const step = store.state.step?.step ?? 0;
    if (step >= rec.last_step) return t('The recording of this real run ends at step {last}.', { last: rec.last_step });
    return t('Played from a recording of a real run of this model (steps {first}–{last}, recorded {date}), not computed now.', { first: rec.first_step, last: rec.last_step, date: String(rec.made_at).slice(0, 10) });
  }

  // ---- showing a chapter ----------------------------------------------------------------

  function filled(text) {
    return say(text, values());
  }

  function render() {
    const ch = chapter();
    if (!ch) return;
    const title = filled(ch.title);
    if (els.title.textContent !== title) els.title.textContent = title;
    const text = filled(ch.text);
    if (els.caption.textContent !== text) els.caption.textContent = text;
    const n = note();
    if (els.note.textContent !== n) els.note.textContent = n;
    els.note.hidden = !n;
    const from = source();
    if (els.source.textContent !== from) els.source.textContent = from;
    els.source.hidden = !from;
    box.dataset.ready = String(isReady());
    try {
      chapterModule?.update?.();
    } catch (err) {
      console.warn('story chapter failed to update', err);
    }
  }

  const watchingIt = () => store.state.watching === runRef(chapter().run) && runMatches(store.state.hello, want());

  function isReady() {
    const ch = chapter();
    if (!ch) return false;
    const text = `${filled(ch.title)} ${filled(ch.text)}`;
    return !asked.pending && watchingIt() && Boolean(store.state.step) && !text.includes(PENDING) && !/\{\w+\}/.test(text);
  }

  let cameraRetry = 0;
  function field(n) {
    // The scale field's own control (it keeps its panel and note in step), else the stage.
    if (typeof actions?.setField === 'function') actions.setField(n);
    else getStage()?.setField?.(n);
  }

  function camera(ch) {
    clearTimeout(cameraRetry);
    if ((store.state.fieldGpus ?? null) !== (ch.field ?? null)) field(ch.field ?? null);
    const stage = getStage();
    if (!stage) {
      // The 3D stage comes up after the socket: frame the chapter once it is there.
      cameraRetry = setTimeout(() => active && chapter() === ch && camera(ch), 300);
      return;
    }
    const instant = store.state.reducedMotion;
    if (!ch.field && Number.isInteger(ch.view)) {
      store.set('view', ch.view);
      stage.setView(ch.view, { instant });
    }
    // A chapter about one GPU (part "gpu:N") flies to it.
    const one = /^gpu:(\d+)$/.exec(ch.part ?? '');
    if (!ch.field && one) stage.frameGpu?.(Number(one[1]), { instant });
    stage.highlight(ch.field ? null : ch.part ?? null);
    labels?.highlight?.(ch.field ? null : ch.part ?? null);
  }

  async function loadModule(name) {
    if (!name) return null;
    if (!modules.has(name)) modules.set(name, import(`./${name}.js`));
    return modules.get(name);
  }

  function ctx() {
    return {
      store,
      story,
      chapter: chapter(),
      figure: els.figure,
      getStage,
      values,
      memo,
      getDrift: () => drift,
      // The chapter's run was started over for it, and this page now watches the new run.
      startedOver: () => Boolean(restartedFrom) && store.state.hello?.watching === restartedFrom.ref
        && store.state.watching === restartedFrom.ref && store.state.hello?.run_id !== restartedFrom.runId,
      loadDrift,
      reduced: () => store.state.reducedMotion,
      requestRender: () => getStage()?.requestRender?.(),
    };
  }

  function loadDrift() {
    if (drift) return Promise.resolve(drift);
    return fetch(`/api/stories/${story.id}/drift?steps=3`)
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((d) => {
        drift = d;
        if (active) render();
        return d;
      });
  }

  async function show(i, { forward = false } = {}) {
    if (!story) return;
    try {
      chapterModule?.leave?.();
    } catch (err) {
      console.warn('story chapter failed to leave', err);
    }
    chapterModule = null;
    els.figure.replaceChildren();
    els.figure.hidden = true;
    index = Math.max(0, Math.min(story.chapters.length - 1, i));
    notYours = '';
    restartedFrom = null;
    const ch = chapter();
    const my = ++entering;
    store.set('story', { id: story.id, chapter: index + 1, chapters: story.chapters.length });
    writeUrl();
    els.count.textContent = t('chapter {n} of {total}', { n: index + 1, total: story.chapters.length });
    els.group.textContent = say(ch.group);
    box.dataset.chapter = ch.id;
    els.doBtn.hidden = !ch.do;
    els.doBtn.textContent = ch.do ? t('{label} (Space)', { label: say(ch.do.label) }) : '';
    ensureRun({ fresh: Boolean(ch.fresh && forward) });
    quoteEarlier();
    if (store.state.hello) warmAhead();
    camera(ch);
    render();
    if (ch.module) {
      try {
        const mod = await loadModule(ch.module);
        if (my !== entering || !active) return;
        chapterModule = mod.enter(ctx()) ?? null;
        els.figure.hidden = !els.figure.childElementCount;
        render();
      } catch (err) {
        console.warn(`story chapter ${ch.module} could not start`, err);
      }
    }
  }

  function doIt() {
    const ch = chapter();
    if (!ch?.do) return false;
    if (ch.do.action !== 'oom' && !canControl()) {
      // Said until the chapter changes: the next step's render keeps it.
      notYours = t('Only the presenter can change the run: you follow along with what it is doing.');
      render();
      return true;
    }
    if (ch.do.action === 'speed_max') actions.setSpeed('max');
    else if (ch.do.action === 'rerun') ensureRun({ fresh: true });
    chapterModule?.act?.(ch.do);
    render();
    return true;
  }

  // ---- the address: /?story=one-gpu&chapter=N -------------------------------------------

  function writeUrl() {
    const url = new URL(window.location.href);
    if (active && story) {
      url.searchParams.set('story', story.id);
      url.searchParams.set('chapter', String(index + 1));
    } else {
      url.searchParams.delete('story');
      url.searchParams.delete('chapter');
    }
    history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`);
  }

  async function load(id) {
    if (story?.id === id) return story;
    const res = await fetch(`/api/stories/${encodeURIComponent(id)}`);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    story = await res.json();
    return story;
  }

  async function open(id = 'one-gpu', at = 1) {
    if (!STORY_IDS.includes(id)) return false;
    try {
      await load(id);
    } catch (err) {
      console.warn('the story could not be loaded', err);
      return false;
    }
    // Already there (the address and a lesson link or the presenter may both ask): stay.
    if (active && story.id === id && index === at - 1) return true;
    actions?.escape?.(); // the tour and any panel make way
    active = true;
    box.hidden = false;
    document.body.classList.add('storying');
    await show(at - 1, { forward: true }); // opened at a chapter: it starts as told (a fresh run)
    return true;
  }

  function close() {
    if (!active) return;
    active = false;
    deferred = null;
    asked.clear();
    freshDue = false;
    actions?.watchRun?.('class'); // back to the class run, as it went on meanwhile
    entering += 1;
    try {
      chapterModule?.leave?.();
    } catch (err) {
      console.warn('story chapter failed to leave', err);
    }
    chapterModule = null;
    box.hidden = true;
    document.body.classList.remove('storying');
    store.set('story', null);
    writeUrl();
    clearTimeout(cameraRetry);
    if ((store.state.fieldGpus ?? null) !== null) field(null);
    const stage = getStage();
    stage?.highlight(null);
    labels?.highlight?.(null);
  }

  const next = () => (index < story.chapters.length - 1 ? show(index + 1, { forward: true }) : close());
  const prev = () => show(index - 1);

  $('story-next').addEventListener('click', () => next());
  $('story-prev').addEventListener('click', () => prev());
  $('story-exit').addEventListener('click', () => close());
  els.doBtn.addEventListener('click', () => doIt());

  // Keys: while the story plays its keys come first (the page's own map would move the tour
  // or spin the scene); Shift+G opens it from anywhere (G alone is the scale field).
  function onKey(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const target = ev.target;
    if (target instanceof Element && target.closest('input, textarea, select, [contenteditable]')) return;
    if (!active) {
      if (ev.key === 'G' && ev.shiftKey) {
        ev.preventDefault();
        open('one-gpu', 1);
      }
      return;
    }
    let done = true;
    switch (ev.key) {
      case 'PageDown':
      case 'ArrowRight':
      case 'ArrowDown':
        next();
        break;
      case 'PageUp':
      case 'ArrowLeft':
      case 'ArrowUp':
        prev();
        break;
      case 'Enter':
        if (target instanceof Element && target.closest('button, a[href]')) done = false;
        else next();
        break;
      case ' ':
        if (target instanceof Element && target.closest('button, a[href]')) done = false;
        else done = doIt();
        break;
      case 'Escape':
        close();
        break;
      default:
        done = false;
    }
    if (done) {
      ev.preventDefault();
      ev.stopImmediatePropagation();
    }
  }
  window.addEventListener('keydown', onKey, true);

  /** Open the story the address asks for (?story=one-gpu&chapter=N). */
  function fromUrl() {
    const params = new URL(window.location.href).searchParams;
    const id = params.get('story');
    if (!id) return;
    const n = Number.parseInt(params.get('chapter') ?? '1', 10);
    open(id, Number.isFinite(n) && n >= 1 ? n : 1);
  }

  return {
    open,
    close,
    next,
    prev,
    doIt,
    fromUrl,
    get active() {
      return active;
    },
    info() {
      return {
        id: story?.id ?? null,
        chapter: active ? index + 1 : null,
        chapters: story?.chapters?.length ?? 0,
        chapterId: active ? chapter()?.id ?? null : null,
        run: active ? chapter()?.run ?? null : null,
        liveRun: liveKey(),
        ready: active && isReady(),
        caption: active ? els.caption.textContent : '',
        title: active ? els.title.textContent : '',
        note: active ? els.note.textContent : '',
        source: active ? els.source.textContent : '',
        pending: asked.pending?.key ?? null,
        drift,
        memo: JSON.parse(JSON.stringify(memo)),
        figure: chapterModule?.info?.() ?? null,
      };
    },
  };
}
