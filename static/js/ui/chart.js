// The loss chart: a 2D canvas of the real loss history, crisp on HiDPI screens. A rollback
// after a failure leaves the abandoned steps as a faded dead branch, with a red marker
// "rolled back to step N" where the run picked up again, and the abandoned range shaded and
// hatched as lost work ("5 steps lost"), which reads even when the loss is flat and the dead
// branch hides under the live line. The bands drawn are written to the canvas's
// data-lost-bands (JSON) for tests and tools.

import { join, num, t } from '../i18n/lang.js';

const COLORS = {
  default: {
    line: '#e8eef8', dead: 'rgba(232,238,248,0.22)', grid: 'rgba(160,180,210,0.16)', text: '#9fb0c8',
    fail: '#ff5c72', band: 'rgba(215,38,61,0.16)', hatch: 'rgba(255,92,114,0.38)',
  },
  projector: {
    line: '#ffffff', dead: 'rgba(255,255,255,0.3)', grid: 'rgba(255,255,255,0.25)', text: '#ffffff',
    fail: '#ff4d66', band: 'rgba(255,31,61,0.22)', hatch: 'rgba(255,77,102,0.55)',
  },
};

/** The abandoned ranges of steps to shade: [{fromStep, toStep, lost}], `fromStep` being the
 * step the run went back to and `toStep` the step it had reached (the failed one). Each
 * rollback's `restored` event says it (steps_lost counts the failed attempt too, so a failure
 * one step after a checkpoint still shows "1 step lost"); a rollback seen only in the history
 * (its event no longer kept) counts the abandoned steps the history shows. Exported for tests. */
export function lostBands(history, events = [], pendingRestore = null) {
  const bands = [];
  const seen = new Set();
  const add = (fromStep, toStep, lost) => {
    const key = `${fromStep}|${toStep}`;
    if (!(lost > 0) || seen.has(key)) return;
    seen.add(key);
    bands.push({ fromStep, toStep, lost });
  };
  for (const e of events ?? []) {
    const d = e?.kind === 'restored' ? e.detail : null;
    if (!d || (d.reason === 'resume' && !d.steps_lost)) continue;
    if (!Number.isFinite(d.restored_step) || !Number.isFinite(d.steps_lost)) continue;
    const failed = Number.isFinite(d.failed_step) ? d.failed_step : d.restored_step + d.steps_lost;
    add(d.restored_step, failed, d.steps_lost);
  }
  const told = new Set(bands.map((b) => b.fromStep));
  let reached = history.length ? history[0].step : 0; // highest step since the last rollback
  for (let i = 1; i < history.length; i++) {
    if (history[i].step <= history[i - 1].step) {
      const to = history[i].step - 1;
      if (!told.has(to)) add(to, reached, reached - to);
      reached = history[i].step;
    } else reached = Math.max(reached, history[i].step);
  }
  if (pendingRestore !== null && history.length && !told.has(pendingRestore)) {
    const last = history[history.length - 1].step;
    add(pendingRestore, last, last - pendingRestore);
  }
  return bands.sort((a, b) => a.fromStep - b.fromStep);
}

/** Split the history into the live timeline and dead branches, and find the rollbacks.
 * A point is dead when a later point (by seq) has the same or a lower step: the run went
 * back past it. Exported for tests. */
export function analyseHistory(history, pendingRestore = null) {
  const n = history.length;
  const dead = new Array(n).fill(false);
  // Right after a rollback, before any new step, the restored step is the "later point".
  let minAfter = pendingRestore ?? Infinity;
  for (let i = n - 1; i >= 0; i--) {
    if (history[i].step >= minAfter) dead[i] = true;
    minAfter = Math.min(minAfter, history[i].step);
  }
  const rollbacks = [];
  for (let i = 1; i < n; i++) {
    if (history[i].step <= history[i - 1].step) {
      rollbacks.push({ seq: history[i].seq, toStep: history[i].step - 1, fromStep: history[i - 1].step });
    }
  }
  return { dead, rollbacks };
}

function niceStep(raw) {
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

export function mountChart(store, canvas) {
  const ctx = canvas.getContext('2d');
  let queued = false;
  let cssW = 0;
  let cssH = 0;

  function resize() {
    const r = canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    cssW = Math.max(1, r.width);
    cssH = Math.max(1, r.height);
    canvas.width = Math.round(cssW * dpr);
    canvas.height = Math.round(cssH * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw();
  }

  function draw() {
    queued = false;
    const s = store.state;
    const theme = s.projector ? COLORS.projector : COLORS.default;
    const thick = s.projector ? 2 : 1;
    const font = s.projector ? 18 : 12;
    ctx.clearRect(0, 0, cssW, cssH);
    const hist = s.history;
    const pad = { l: font * 3.2, r: 10, t: 8, b: font * 1.9 };
    const w = cssW - pad.l - pad.r;
    const h = cssH - pad.t - pad.b;
    ctx.font = `${font}px system-ui, sans-serif`;
    ctx.fillStyle = theme.text;
    if (hist.length === 0) {
      ctx.fillText(t('waiting for the first step…'), pad.l, pad.t + h / 2);
      return;
    }
    let minStep = Infinity;
    let maxStep = -Infinity;
    let minLoss = Infinity;
    let maxLoss = -Infinity;
    for (const p of hist) {
      if (p.step < minStep) minStep = p.step;
      if (p.step > maxStep) maxStep = p.step;
      if (Number.isFinite(p.loss)) {
        if (p.loss < minLoss) minLoss = p.loss;
        if (p.loss > maxLoss) maxLoss = p.loss;
      }
    }
    minStep = Math.min(minStep, 0);
    if (maxStep <= minStep) maxStep = minStep + 1;
    if (!Number.isFinite(minLoss)) return;
    // Round tick values (0.5, 1, 2 ...) so the axis reads at a glance.
    const tick = niceStep((maxLoss - minLoss) / 4 || 0.1);
    const lo = Math.max(0, Math.floor(minLoss / tick) * tick);
    const hi = Math.max(lo + tick, Math.ceil(maxLoss / tick) * tick);
    const x = (step) => pad.l + ((step - minStep) / (maxStep - minStep)) * w;
    const y = (loss) => pad.t + (1 - (loss - lo) / (hi - lo)) * h;

    // Grid and axis labels.
    ctx.strokeStyle = theme.grid;
    ctx.lineWidth = 1;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    const ySteps = Math.round((hi - lo) / tick);
    for (let i = 0; i <= ySteps; i++) {
      const v = lo + tick * i;
      const yy = Math.round(y(v)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(pad.l, yy);
      ctx.lineTo(pad.l + w, yy);
      ctx.stroke();
      const decimals = Number.isInteger(tick) ? 0 : Number.isInteger(tick * 10) ? 1 : 2;
      ctx.fillText(num(v, decimals), pad.l - 6, yy);
    }
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    ctx.fillText(t('step {n}', { n: minStep }), pad.l, cssH - 4);
    ctx.textAlign = 'right';
    ctx.fillText(num(maxStep), pad.l + w, cssH - 4);

    const lr = s.lastRollback;
    const last = hist[hist.length - 1];
    const pending =
      lr && last && lr.afterSeq === last.seq && Number.isFinite(lr.restoredStep)
        ? lr.restoredStep
        : null;
    const { dead, rollbacks } = analyseHistory(hist, pending === null ? null : pending + 1);
    // Lost work first, behind everything: a shaded, hatched band over the abandoned steps.
    const bands = lostBands(hist, s.events, pending);
    canvas.dataset.lostBands = JSON.stringify(bands);
    ctx.save();
    ctx.beginPath();
    ctx.rect(pad.l, pad.t, w, h);
    ctx.clip();
    for (const b of bands.slice(-3)) {
      // Never thinner than a finger's width, however long the run has been going, and
      // whole even at the chart's right edge.
      const minW = 8 * thick;
      const x1 = Math.min(pad.l + w, Math.max(x(b.fromStep) + minW, x(b.toStep)));
      const x0 = Math.min(x(b.fromStep), x1 - minW);
      ctx.fillStyle = theme.band;
      ctx.fillRect(x0, pad.t, x1 - x0, h);
      ctx.strokeStyle = theme.hatch;
      ctx.lineWidth = 1.5 * thick;
      ctx.save();
      ctx.beginPath();
      ctx.rect(x0, pad.t, x1 - x0, h);
      ctx.clip();
      ctx.beginPath();
      for (let k = x0 - h; k < x1; k += 8 * thick) {
        ctx.moveTo(k, pad.t + h);
        ctx.lineTo(k + h, pad.t);
      }
      ctx.stroke();
      ctx.restore();
    }
    ctx.restore();
    // Dead branches next, so the live line is drawn on top of them.
    ctx.lineJoin = 'round';
    for (const wantDead of [true, false]) {
      ctx.strokeStyle = wantDead ? theme.dead : theme.line;
      ctx.lineWidth = (wantDead ? 1.5 : 2) * thick;
      ctx.beginPath();
      let pen = false;
      for (let i = 0; i < hist.length; i++) {
        const p = hist[i];
        const on = dead[i] === wantDead && Number.isFinite(p.loss);
        // A new segment starts where the step jumps back (a rollback) or the kind changes.
        const brk = i > 0 && p.step <= hist[i - 1].step;
        if (!on) {
          pen = false;
          continue;
        }
        if (!pen || brk) {
          const q = hist[i - 1];
          // A dead branch grows out of the last live point it left from.
          if (wantDead && q && !brk && !dead[i - 1] && Number.isFinite(q.loss)) {
            ctx.moveTo(x(q.step), y(q.loss));
            ctx.lineTo(x(p.step), y(p.loss));
          } else ctx.moveTo(x(p.step), y(p.loss));
        } else ctx.lineTo(x(p.step), y(p.loss));
        pen = true;
      }
      ctx.stroke();
    }

    // Rollback markers; a rollback with no step after it yet comes from the event itself.
    const marks = [...new Set([...rollbacks.map((r) => r.toStep), ...bands.map((b) => b.fromStep)])];
    if (pending !== null && !marks.includes(pending)) marks.push(pending);
    marks.sort((a, b) => a - b);
    ctx.strokeStyle = theme.fail;
    ctx.fillStyle = theme.fail;
    ctx.lineWidth = 1.5 * thick;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'top';
    // Screen readers (and tests) get the same story as the picture.
    const latest = hist[hist.length - 1];
    const said = [t('Loss over steps {from} to {to}; latest {loss} at step {step}.', { from: minStep, to: maxStep, loss: num(latest.loss, 3), step: latest.step })];
    if (marks.length) said.push(t('Rolled back to step {steps}.', { steps: marks.map((m) => num(m)).reduce((a, b) => t('{a}, step {b}', { a, b })) }));
    for (const b of bands) said.push(t(['{n} step lost after step {step}.', '{n} steps lost after step {step}.'], { n: b.lost, step: b.fromStep }, b.lost));
    canvas.setAttribute('aria-label', join(said));
    const shown = marks.slice(-3);
    shown.forEach((m, i) => {
      const xx = Math.round(x(m)) + 0.5;
      ctx.setLineDash([4 * thick, 3 * thick]);
      ctx.beginPath();
      ctx.moveTo(xx, pad.t);
      ctx.lineTo(xx, pad.t + h);
      ctx.stroke();
      ctx.setLineDash([]);
      // A small X on the marker, so it reads without colour too.
      const cy = pad.t + 6 + i * (font + 4);
      const r = font * 0.3;
      ctx.beginPath();
      ctx.moveTo(xx - r, cy - r + font / 2);
      ctx.lineTo(xx + r, cy + r + font / 2);
      ctx.moveTo(xx + r, cy - r + font / 2);
      ctx.lineTo(xx - r, cy + r + font / 2);
      ctx.stroke();
      const band = bands.find((b) => b.fromStep === m);
      // Words drawn on the canvas, in the page's language (and measured as they will be drawn).
      const label = band ? t(['rolled back to step {step}: {n} step lost', 'rolled back to step {step}: {n} steps lost'], { step: m, n: band.lost }, band.lost) : t('rolled back to step {step}', { step: m });
      const tw = ctx.measureText(label).width;
      const tx = xx + r + 4 + tw > pad.l + w ? xx - r - 4 - tw : xx + r + 4;
      // A dark backing so the words read over the live line.
      ctx.save();
      ctx.fillStyle = s.projector ? 'rgba(0,0,0,0.8)' : 'rgba(11,18,32,0.78)';
      ctx.fillRect(Math.max(pad.l, tx - 3), cy - 2, tw + 6, font + 4);
      ctx.restore();
      ctx.fillText(label, Math.max(pad.l, tx), cy);
    });
  }

  function queue() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(draw);
  }

  store.on('step', queue);
  store.on('snapshot', queue);
  store.on('change:lastRollback', queue);
  store.on('event', queue);
  store.on('change:projector', () => requestAnimationFrame(resize));
  new ResizeObserver(resize).observe(canvas);
  resize();
  return { draw: queue };
}
