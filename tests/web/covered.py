"""What a panel covers, measured in the page: the pieces a chapter or a tour stop draws in
the scene (the test hook's `figure`, each with its screen box) against every panel that
shows."""

# Every panel that shows (the story's card, the tour's box and the labs among them), each
# with its name and box: `panels`, in a function's body.
PANELS = """
  const shown = (el) => {
    if (!el || el.closest('[hidden]')) return false;
    const s = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 0 && r.height > 0;
  };
  const name = (el) => el.id ? `#${el.id}` : `.${[...el.classList].join('.')}`;
  const panels = [...document.querySelectorAll(
    'section.panel, #field-panel, .presenter-bar > *, .presenter-row > *, .topbar, #legend,'
    + ' #colour-key, .tour-box, .story-box, .lab-panel, .card, .overlay-box, .toast'
  )].filter(shown).map((el) => {
    const r = el.getBoundingClientRect();
    return { name: name(el), l: r.left, t: r.top, r: r.right, b: r.bottom };
  });
"""

# The panels over a box on screen ({left, top, right, bottom}), by name.
PANELS_OVER_JS = (
    "(part) => {"
    + PANELS
    + """
  return panels.filter((p) => part.left < p.r - 1 && p.l < part.right - 1
    && part.top < p.b - 1 && p.t < part.bottom - 1).map((p) => p.name);
}"""
)

# Every piece drawn in the scene against every panel that shows: a piece more than half under
# one, or more than half off screen, is hidden.
PIECES_HIDDEN_JS = (
    "() => {"
    + PANELS
    + """
  const W = innerWidth, H = innerHeight;
  const area = (a) => Math.max(0, a.r - a.l) * Math.max(0, a.b - a.t);
  const meet = (a, b) => ({
    l: Math.max(a.l, b.l), t: Math.max(a.t, b.t), r: Math.min(a.r, b.r), b: Math.min(a.b, b.b),
  });
  const hits = [];
  const pieces = window.trainingRun.figure.filter((p) => p.rect);
  for (const p of pieces) {
    const box = { l: p.rect.left, t: p.rect.top, r: p.rect.right, b: p.rect.bottom };
    const on = meet(box, { l: 0, t: 0, r: W, b: H });
    const all = area(box);
    if (!all) continue;
    if (area(on) / all < 0.5) { hits.push(`${p.name} off screen`); continue; }
    for (const q of panels) {
      const f = area(meet(on, q)) / area(on);
      if (f > 0.5) hits.push(`${p.name} under ${q.name} (${Math.round(f * 100)}%)`);
    }
  }
  // ... and no word of the card's stage grid is cut short.
  for (const c of document.querySelectorAll('#story-figure .sf-cell')) {
    if (c.scrollWidth > c.clientWidth + 1) hits.push(`cell '${c.textContent}' cut`);
  }
  return { pieces: pieces.length, hits: [...new Set(hits)] };
}"""
)
