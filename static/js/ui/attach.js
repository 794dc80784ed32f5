// An attached run (`trainingrun watch`): a real PyTorch job reporting its steps. While no job
// reports, a box in the middle of the page says the server is waiting and how to attach one
// (the server's own words, from the `attach_status` message). Once a job is attached
// (`hello.measured`), the page says everywhere that its numbers were measured on the user's
// cluster, not simulated: the tagline and a badge by the stats (the HUD says it over the step's
// times); the probe panel and the model lens, which only the built-in model has, step aside.

import { t } from '../i18n/lang.js';
import { el } from './format.js';

export function mountAttach(store) {
  const box = el(
    'section',
    { class: 'attach-wait', id: 'attach-wait', role: 'status', 'aria-live': 'polite', hidden: true },
  );
  const title = el('h2', { text: t('Waiting for a run to attach') });
  box.append(title);
  const message = el('p', { class: 'attach-message' });
  const command = el('code', { class: 'attach-command' });
  box.append(message, command);
  document.body.append(box);

  const badge = el('div', { class: 'stat attach-badge', id: 'attach-badge', hidden: true, title: '' });
  badge.append(el('span', { class: 'k', text: t('every number') }), el('span', { class: 'v', text: t('measured on your cluster') }));
  document.querySelector('.topbar .stats')?.append(badge);

  const tagline = document.querySelector('.topbar .tagline');
  const taglineText = tagline?.textContent ?? '';
  const probe = document.querySelector('.probe-panel');

  function renderStatus(msg) {
    const waiting = Boolean(msg?.waiting);
    const attachedBefore = Boolean(store.state.hello?.measured);
    // A job that went quiet keeps its picture: the box then sits low and small.
    box.hidden = !waiting;
    box.classList.toggle('attach-quiet', waiting && attachedBefore);
    // Nothing attached yet: the panels of a run have nothing to show.
    document.body.classList.toggle('attach-waiting', waiting && !attachedBefore);
    if (!waiting) return;
    if (attachedBefore) {
      // Small, out of the way: only that the job went quiet, its picture stays.
      title.textContent = t('The job has stopped reporting');
      message.textContent = (msg.message ?? '').split(' Waiting for a run to attach')[0];
      command.hidden = true;
      return;
    }
    title.textContent = t('Waiting for a run to attach');
    // The box's title already says it is waiting: the message goes on from there.
    const text = (msg.message ?? '').replace(/^Waiting for a run to attach:\s*/, '');
    const at = text.indexOf('torchrun ');
    const words = at > 0 ? text.slice(0, at).replace(/,?\s*e\.g\.\s*$/, ', for example:') : text;
    message.textContent = words.charAt(0).toUpperCase() + words.slice(1);
    command.textContent = at > 0 ? text.slice(at) : '';
    command.hidden = at <= 0;
  }

  function renderHello(hello) {
    const measured = Boolean(hello?.measured);
    badge.hidden = !measured;
    document.body.classList.toggle('attached-run', measured);
    if (measured) document.body.classList.remove('attach-waiting');
    if (probe) probe.hidden = measured;
    // Only a change is written: the line read at the start may be in another language already.
    const line = measured ? t('A real PyTorch job, measured on your cluster') : taglineText;
    if (tagline && tagline.textContent !== line) tagline.textContent = line;
    if (measured) {
      const a = hello.attached ?? {};
      const v = { ranks: a.world_size, n: a.nodes, hosts: (a.hosts ?? []).join(', '), backend: a.backend, device: a.device };
      badge.title = t(['{ranks} ranks on {n} machine ({hosts}), {backend} on {device}', '{ranks} ranks on {n} machines ({hosts}), {backend} on {device}'], v, a.nodes);
    }
  }

  store.on('attach_status', renderStatus);
  store.on('hello', (msg) => {
    renderHello(msg);
    // A job attaching: the waiting box goes as soon as its picture arrives.
    if (msg?.measured) box.hidden = true;
  });
  store.on('snapshot', (msg) => {
    if (msg?.status?.state !== 'waiting') {
      box.hidden = true;
    } else if (store.state.hello?.measured) {
      // A page that joins after the job went quiet gets its picture but no status message:
      // ask for it.
      fetch('/api/attach')
        .then((r) => (r.ok ? r.json() : null))
        .then((status) => status && renderStatus(status))
        .catch(() => {});
    }
  });
  renderHello(store.state.hello);
}
