// Things laid over the scene: toasts (failures, refused controls, saves), the
// "Connection lost — reconnecting…" overlay and the no-WebGL message.

import { t, tr } from '../i18n/lang.js';
import { el } from './format.js';

const TOAST_MS = 6000;
const MAX_TOASTS = 4;

export function createOverlays(store) {
  const toasts = document.getElementById('toasts');
  const conn = document.getElementById('conn');
  const nowebgl = document.getElementById('nowebgl');

  function toast(message, kind = 'info', ms = TOAST_MS) {
    const node = el('div', { class: `toast toast-${kind}` }, el('span', { class: 'icon', 'aria-hidden': 'true' }), el('span', { text: message }));
    toasts.append(node);
    while (toasts.children.length > MAX_TOASTS) toasts.firstElementChild.remove();
    setTimeout(() => node.remove(), ms);
    return node;
  }

  // The engine reports a failure as gpu_failed, restored and gpu_replaced; people want one
  // sentence about it, so the three are gathered into a single toast.
  let pending = null;
  let flushTimer = null;
  function flushFailure() {
    if (!pending) return;
    const p = pending;
    pending = null;
    clearTimeout(flushTimer);
    const v = { gpu: p.gpu + 1, step: p.step, restored: p.restored, lost: p.lost }; // people count from 1
    const back = p.restored !== undefined;
    const msg = p.replaced
      ? back
        ? t(['GPU {gpu} failed at step {step} — rolled back to step {restored} ({lost} step lost), GPU replaced', 'GPU {gpu} failed at step {step} — rolled back to step {restored} ({lost} steps lost), GPU replaced'], v, p.lost)
        : t('GPU {gpu} failed at step {step}, GPU replaced', v)
      : back
        ? t(['GPU {gpu} failed at step {step} — rolled back to step {restored} ({lost} step lost)', 'GPU {gpu} failed at step {step} — rolled back to step {restored} ({lost} steps lost)'], v, p.lost)
        : t('GPU {gpu} failed at step {step}', v);
    toast(msg, 'failure', 9000);
  }

  function onEvent(e) {
    const d = e.detail ?? {};
    switch (e.kind) {
      case 'gpu_failed':
        flushFailure();
        pending = { gpu: d.gpu, step: e.step };
        flushTimer = setTimeout(flushFailure, 2500);
        break;
      case 'restored':
        // A checkpoint that diverged on its first step was marked bad and an older one is
        // loaded, or an attached job restarted from its checkpoint: no GPU failed.
        if (d.reason === 'diverged' || d.reason === 'restart') {
          toast(e.message || `Fell back to the checkpoint at step ${d.restored_step}`, 'warn', 9000);
          break;
        }
        if (!pending) pending = { gpu: '?', step: d.failed_step };
        // The engine counts the failed step as the one being attempted.
        if (Number.isFinite(d.failed_step)) pending.step = d.failed_step;
        pending.restored = d.restored_step;
        pending.lost = d.steps_lost;
        break;
      case 'gpu_replaced':
        if (pending) {
          pending.replaced = true;
          flushFailure();
        } else {
          toast(`GPU ${d.gpu + 1} replaced`, 'info');
        }
        break;
      case 'checkpoint_skipped':
        toast(e.message || t('A damaged checkpoint was skipped'), 'warn');
        break;
      case 'checkpoint_saved':
        if (d.reason === 'on_demand') toast(t('Checkpoint saved at step {step}', { step: d.step ?? e.step }), 'saved', 3500);
        break;
      case 'run_reset':
        toast(e.message || t('The run was reset'), 'info');
        break;
      case 'diverged':
        // The run has stopped itself: this stays up until someone acts.
        toast(e.message || t('The run diverged and stopped'), 'failure', 20000);
        break;
      case 'worker_failed':
        toast(e.message || t('The training process failed; retrying'), 'error', 9000);
        break;
      case 'checkpoint_failed':
      case 'record_failed':
        toast(e.message || t('Something could not be saved'), 'warn', 9000);
        break;
      case 'shard_rebuilt':
        toast(e.message || t('A damaged data shard was rebuilt'), 'info');
        break;
      case 'record_set_aside':
        toast(e.message || t('Earlier history was set aside'), 'warn', 12000);
        break;
      default:
        break;
    }
  }

  store.on('event', onEvent);
  // A viewer who joins after the server set a damaged record aside hears of it too, once.
  let setAsideTold = false;
  store.on('snapshot', (msg) => {
    const aside = (msg.events ?? []).filter((e) => e.kind === 'record_set_aside').pop();
    if (aside && !setAsideTold) onEvent(aside);
    setAsideTold = true;
  });
  store.on('error', (msg) => {
    const text = msg.message ? tr(msg.message) : msg.code || t('The server refused that');
    toast(t('Not done: {text}', { text }), 'error', 7000);
  });

  function renderConnection() {
    conn.hidden = store.state.connection !== 'lost';
  }
  store.on('change:connection', renderConnection);
  renderConnection();

  return {
    toast,
    showNoWebGL() {
      nowebgl.hidden = false;
      document.body.classList.add('no-webgl');
    },
  };
}
