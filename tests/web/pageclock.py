"""The page's clock at a rate a test sets: `context.add_init_script(page_clock(0.25))` before
the page loads, then `page.evaluate("window.__clockRate(4)")` at any moment. Every timer of
the scene and the story reads performance.now, so a quarter of real time lets a screenshot
catch a moment that lasts a fraction of a second (a software-rendered frame at 1920x1080
takes about that long), and four times real time plays a long animation through quickly;
what the page measures is still measured on its own clock."""

from __future__ import annotations

_JS = """((rate) => {
  const now = performance.now.bind(performance);
  let real = now(), page = real;
  performance.now = () => page + (now() - real) * rate;
  window.__clockRate = (r) => { const t = now(); page += (t - real) * rate; real = t; rate = r; };
})(%s);"""


def page_clock(rate: float = 1.0) -> str:
    return _JS % float(rate)
