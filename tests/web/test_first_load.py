"""The page's first load weighs at most 400 KB as the browser receives it (gzip-compressed).

A real headless Chromium opens the page on a real server and every request it makes until the
network goes quiet is counted: body bytes as they came over the wire (compressed where the
server compressed them) plus response headers, exactly what the browser downloaded.
"""

from __future__ import annotations

LIMIT = 400_000


def test_first_load_is_at_most_400_kb_compressed(browser, server, web):
    ctx = browser.new_context(viewport={"width": 800, "height": 600})
    page = ctx.new_page()
    finished = []
    page.on("requestfinished", lambda r: finished.append(r))
    try:
        page.goto(f"{server.url}/")
        page.wait_for_function(
            "window.trainingRun && window.trainingRun.stageReady && window.trainingRun.frames > 0",
            timeout=120_000,
        )
        page.wait_for_load_state("networkidle")
        wire = 0
        decoded = 0
        by_url = {}
        for r in finished:
            sizes = r.sizes()
            got = sizes["responseBodySize"] + sizes["responseHeadersSize"]
            wire += got
            by_url[r.url] = got
            body = r.response().body() if r.response() else b""
            decoded += len(body)
        biggest = sorted(by_url.items(), key=lambda kv: -kv[1])[:5]
        print(f"first load: {wire:,} bytes on the wire, {decoded:,} decoded", len(finished))
        assert wire <= LIMIT, f"{wire:,} bytes on the wire; biggest: {biggest}"
        # Compression is doing the work: far fewer bytes came than the page holds.
        assert wire < decoded / 2.5
        # three.js came as the minified build, gzip-compressed.
        minified = "/static/vendor/three/build/three.module.min.js"
        three = [r for r in finished if r.url.endswith(minified)]
        assert three, "the minified three.js was not loaded"
        headers = three[0].response().headers
        assert headers.get("content-encoding") == "gzip"
        assert not any(r.url.endswith("/three.core.js") for r in finished)
    finally:
        ctx.close()


def test_minified_three_exports_every_name_the_page_uses():
    """The minified three.js keeps only what the page uses (static/vendor/minify-three.sh);
    a name used in static/js but missing from it would be undefined in the browser."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "static"
    build = (root / "vendor/three/build/three.module.min.js").read_text()
    tail = build[build.rindex("export{") :]
    exported = set(re.findall(r"as ([A-Za-z_$][\w$]*)", tail[: tail.index("}")]))
    used: set[str] = set()
    sources = [*root.joinpath("js").rglob("*.js")]
    sources += [*root.joinpath("vendor/three/examples/jsm").rglob("*.min.js")]
    for path in sources:
        text = path.read_text()
        used |= set(re.findall(r"\bTHREE\.([A-Za-z_]\w*)", text))
        for names in re.findall(r"import\s*\{([^}]*)\}\s*from\s*['\"]three['\"]", text):
            used |= {n.split(" as ")[0].strip() for n in names.split(",") if n.strip()}
    missing = sorted(used - exported)
    assert len(used) > 20
    assert not missing, f"run `bash static/vendor/minify-three.sh`: the build lacks {missing}"
