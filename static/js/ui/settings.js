// The "new run" panel: choose the seed, the simulated hardware, the cluster (GPUs, servers),
// the batch and the learning rate,
// then start training again from step 0, and, if asked, the lesson with it. The panel checks
// the cluster rules as you type, in the server's words; the server checks them again and its
// answer (a new hello, or an error naming the rule) closes the panel or is shown in it.
// A page without the rights to change the class run starts a run of its own instead (the
// server's side run, app/web/runs.py): it trains for this page alone, the class run goes on.

import { t } from '../i18n/lang.js';
import { el, fmtInt } from './format.js';

// The server's hardware presets (app/engine/timing.py PRESETS); it refuses any other name.
const PRESETS = [{ id: 'h100' }, { id: 'a100' }, { id: 'b200' }, { id: 'h800' }];
const presetLabel = (id) => ({ h100: t('H100 cluster'), a100: t('A100 cluster'), b200: t('B200 cluster'), h800: t('H800 cluster') })[id];
// The same bounds as the server's own (ResetControl, and Settings for --gpus / --servers).
const LIMITS = { seed: [0, 2 ** 31 - 1], gpus: [1, 4096], servers: [1, 1024], batch_size: [1, 1024] };
const LR_MAX = 1; // the learning rate: above 0, at most this (Settings.lr)
// A run of one's own is smaller (app/web/runs.py OWN_GPUS_MAX): one computer does its work.
export const OWN_GPUS_MAX = 64;
// Past this many GPUs one computer doing every GPU's work steps slowly (about 2.8 s a step
// at 1024 here): worth saying before a lesson waits on it.
const SLOW_GPUS = 256;
const ANSWER_MS = 30000;

/** The choice in the fields, or the first rule it breaks (in the words the server uses). */
export function checkChoice({ seed, preset, gpus, servers, batch_size, lr }, { own = false } = {}) {
  // Batch and learning rate are optional: unnamed, the server keeps or chooses them.
  const named = batch_size === undefined ? { seed, gpus, servers } : { seed, gpus, servers, batch_size };
  for (const [name, value] of Object.entries(named)) {
    const [lo, hi] = name === 'gpus' && own ? [1, OWN_GPUS_MAX] : LIMITS[name];
    if (!Number.isInteger(value)) return { problem: `${name} must be a whole number` };
    if (value < lo || value > hi) return { problem: `${name} must be between ${fmtInt(lo)} and ${fmtInt(hi)}` };
  }
  if (lr !== undefined && !(Number.isFinite(lr) && lr > 0 && lr <= LR_MAX)) {
    return { problem: `lr must be above 0 and at most ${LR_MAX}` };
  }
  if (!PRESETS.some((p) => p.id === preset)) return { problem: `unknown hardware ${preset}` };
  if (servers > gpus) return { problem: `servers (${servers}) cannot outnumber gpus (${gpus})` };
  if (gpus % servers) {
    return { problem: `gpus (${gpus}) must divide evenly over servers (${servers}): ${gpus} % ${servers} = ${gpus % servers}` };
  }
  // Whether the batch shares out over the plan's copies is the server's rule to say.
  const choice = { seed, preset, gpus, servers };
  if (batch_size !== undefined) choice.batch_size = batch_size;
  if (lr !== undefined) choice.lr = lr;
  return { choice };
}

export function mountSettings(store, { actions }) {
  const $ = (id) => document.getElementById(id);
  const box = $('newrun');
  const form = $('newrun-form');
  const fields = {
    seed: $('newrun-seed'), preset: $('newrun-preset'), gpus: $('newrun-gpus'), servers: $('newrun-servers'),
    batch_size: $('newrun-batch'), lr: $('newrun-lr'),
  };
  const lesson = $('newrun-lesson');
  const problem = $('newrun-problem');
  const why = $('newrun-why');
  const startBtn = $('newrun-start');
  const title = $('newrun-title');
  const intro = $('newrun-intro');

  for (const p of PRESETS) fields.preset.append(el('option', { value: p.id, text: presetLabel(p.id) }));
  for (const name of ['seed', 'gpus', 'servers', 'batch_size']) {
    fields[name].min = String(LIMITS[name][0]);
    fields[name].max = String(LIMITS[name][1]);
  }

  let pending = null; // {runId, lesson, timer} while the server is starting the new run
  let filled = {}; // the batch and learning rate the panel opened with

  const read = () => ({
    seed: Number(fields.seed.value === '' ? NaN : fields.seed.value),
    preset: fields.preset.value,
    gpus: Number(fields.gpus.value === '' ? NaN : fields.gpus.value),
    servers: Number(fields.servers.value === '' ? NaN : fields.servers.value),
    batch_size: Number(fields.batch_size.value === '' ? NaN : fields.batch_size.value),
    lr: Number(fields.lr.value === '' ? NaN : fields.lr.value),
  });

  function say(text) {
    problem.textContent = text ?? '';
    problem.hidden = !text;
  }

  // Without the rights to change the class run, the panel starts a run of this page's own.
  const own = () => !actions.canControl();

  function explain() {
    const mine = own();
    const { choice, problem: bad } = checkChoice(read(), { own: mine });
    box.classList.toggle('own', mine);
    title.textContent = mine ? t('A run of your own') : t('New run');
    intro.textContent = mine
      ? t('Only the presenter changes the class run. This starts a run of your own from step 0, on this server, for you alone: the class run goes on, and you can go back to it. Nobody else controls yours; it stops a minute after you leave it.')
      : t("Starts training again from step 0 on the cluster you choose. The old run's history is kept.");
    lesson.closest('label').hidden = mine;
    fields.gpus.max = String(mine ? OWN_GPUS_MAX : LIMITS.gpus[1]);
    if (!pending) startBtn.textContent = mine ? t('Start my own run') : t('Start');
    say(bad);
    startBtn.disabled = Boolean(bad) || Boolean(pending);
    if (!choice) {
      why.textContent = '';
      return;
    }
    const v = { gpus: choice.gpus, servers: choice.servers, each: choice.gpus / choice.servers };
    const n = choice.servers;
    if (choice.gpus > SLOW_GPUS) {
      why.textContent = t(['{gpus} GPUs on {servers} server: {each} per server. This computer does every GPU’s work itself, so a cluster this big steps slowly.', '{gpus} GPUs on {servers} servers: {each} per server. This computer does every GPU’s work itself, so a cluster this big steps slowly.'], v, n);
    } else if (choice.gpus === 1) {
      why.textContent = t(['{gpus} GPU on {servers} server: {each} per server.', '{gpus} GPU on {servers} servers: {each} per server.'], v, n);
    } else why.textContent = t(['{gpus} GPUs on {servers} server: {each} per server.', '{gpus} GPUs on {servers} servers: {each} per server.'], v, n);
  }

  function fill() {
    const cfg = store.state.hello?.config ?? {};
    fields.seed.value = String(cfg.seed ?? 0);
    fields.preset.value = PRESETS.some((p) => p.id === cfg.preset) ? cfg.preset : PRESETS[0].id;
    fields.gpus.value = String(cfg.gpus ?? 8);
    fields.servers.value = String(cfg.servers ?? 1);
    fields.batch_size.value = String(cfg.batch_size ?? 128);
    fields.lr.value = String(cfg.lr ?? 0.003);
    filled = { batch_size: Number(fields.batch_size.value), lr: Number(fields.lr.value) };
  }

  function open() {
    fill();
    box.hidden = false;
    store.set('newRunOpen', true);
    explain();
    fields.gpus.focus({ preventScroll: true });
  }

  function finish() {
    if (pending) clearTimeout(pending.timer);
    pending = null;
    startBtn.textContent = own() ? t('Start my own run') : t('Start');
  }

  function close() {
    if (box.hidden) return;
    box.hidden = true;
    store.set('newRunOpen', false);
  }

  // The page's keys stand aside while a field has the focus; Esc should still close this.
  form.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      close();
    }
  });
  form.addEventListener('input', explain);
  form.addEventListener('change', explain);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (pending) return;
    const mine = own();
    const { choice, problem: bad } = checkChoice(read(), { own: mine });
    if (bad) return say(bad);
    // A batch or rate left as it was is not asked for: the server keeps the run's, or picks
    // the batch that shares out over a new cluster.
    for (const name of ['batch_size', 'lr']) if (choice[name] === filled[name]) delete choice[name];
    const runId = store.state.hello?.run_id ?? null;
    if (!(mine ? actions.ownRun(choice) : actions.newRun(choice))) return undefined;
    pending = {
      runId,
      lesson: !mine && lesson.checked,
      timer: setTimeout(() => {
        finish();
        say(t('The server has not answered yet: the new run may still be starting. Try again in a moment.'));
        explain();
      }, ANSWER_MS),
    };
    startBtn.textContent = t('starting…');
    startBtn.disabled = true;
    return undefined;
  });
  $('newrun-close').addEventListener('click', () => close());
  $('newrun-cancel').addEventListener('click', () => close());
  box.addEventListener('click', (ev) => {
    if (ev.target === box) close();
  });

  // The new run has started when a hello for another run arrives.
  store.on('hello', (msg) => {
    if (!pending) {
      if (!box.hidden) explain(); // rights may have changed
      return;
    }
    if (msg.run_id === pending.runId) return;
    const startLesson = pending.lesson;
    finish();
    close(); // the run_reset event says so in a toast of its own
    if (startLesson) actions.beginLesson();
  });
  // A refusal while we wait is the answer to our start: show it where the choice was made.
  store.on('error', (msg) => {
    if (!pending) return;
    finish();
    explain();
    say(msg.message || msg.code);
  });

  return {
    open,
    close,
    toggle: () => (box.hidden ? open() : close()),
    get isOpen() {
      return !box.hidden;
    },
  };
}

// "Your own run": while this page watches a run of its own, the header says so, with one
// button back to the class run (the own run goes on a minute without a viewer, then stops).
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
