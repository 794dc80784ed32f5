"""The page's words made by t() (static/js/i18n/lang.js), checked without a browser: every
module that makes text with t() names its key as written English (a string, or the [one,
other] forms of a count), so the key can be read here; every such key has words in every
language the page speaks, with the same placeholders as the English, and a count's two forms
both have theirs (or the language gives its own forms under the English "other")."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from app.routes.locale import LANGS, catalogue

ROOT = Path(__file__).resolve().parents[1]
STATIC_JS = ROOT / "static" / "js"
IMPORTS_T = re.compile(r"import\s*\{[^}]*\bt\b[^}]*\}\s*from\s*'[\w./]*(?:i18n/)?lang\.js'")
CALL = re.compile(r"(?<![\w.$])t\(")
HOLE = re.compile(r"\{(\w+)\}")


def _literal(src: str, i: int) -> tuple[str, int]:
    """The JS string literal starting at src[i] and the index after it."""
    quote = src[i]
    if quote not in "'\"`":
        raise ValueError(f"not a written string: {src[i : i + 40]!r}")
    out, j = [], i + 1
    while src[j] != quote:
        if src[j] == "\\":
            out.append(src[j + 1])
            j += 2
            continue
        if quote == "`" and src.startswith("${", j):
            raise ValueError(f"a key with ${{}} in it: {src[i : j + 20]!r}")
        out.append(src[j])
        j += 1
    return "".join(out), j + 1


def _key(src: str, i: int) -> list[str]:
    """The key of a t( call whose argument starts at src[i]: one string, or [one, other]."""
    while src[i].isspace():
        i += 1
    if src[i] != "[":
        return [_literal(src, i)[0]]
    forms, i = [], i + 1
    while True:
        while src[i].isspace() or src[i] == ",":
            i += 1
        if src[i] == "]":
            break
        text, i = _literal(src, i)
        forms.append(text)
    if len(forms) != 2:
        raise ValueError(f"a count's forms must be [one, other]: {forms}")
    return forms


def keys_in_code() -> dict[str, list[str]]:
    """Every t() key in the page's modules -> where it is used ('file:line')."""
    found: dict[str, list[str]] = {}
    pages = sorted(STATIC_JS.parent.glob("*.html"))  # their inline modules
    for path in sorted(STATIC_JS.rglob("*.js")) + pages:
        src = path.read_text(encoding="utf-8")
        if not IMPORTS_T.search(src):
            continue
        for m in CALL.finditer(src):
            line = src.count("\n", 0, m.start()) + 1
            where = f"{path.relative_to(ROOT)}:{line}"
            try:
                forms = _key(src, m.end())
            except ValueError as err:
                pytest.fail(f"{where}: t() needs its English written out: {err}")
            found.setdefault("\0".join(forms), []).append(where)
    return found


def test_the_page_makes_words_with_t() -> None:
    keys = keys_in_code()
    modules = {w.split(":")[0] for ws in keys.values() for w in ws}
    # The step sentence, the failure toast, the loss chart and the field's tag at least.
    assert {"static/js/ui/announce.js", "static/js/ui/overlays.js"} <= modules, modules
    assert {"static/js/ui/chart.js", "static/js/scene/field/panel.js"} <= modules, modules
    assert "static/sheet.html" in modules, modules


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_key_has_words_in_every_language(lang: str) -> None:
    words = catalogue(lang)
    missing, holes = [], []
    for key, where in sorted(keys_in_code().items()):
        forms = key.split("\0")  # a count: both forms, or the language's own under "other"
        if isinstance(words.get(forms[-1]), dict):
            said = {forms[-1]: list(words[forms[-1]].values())}
        elif all(form in words for form in forms):
            said = {form: [words[form]] for form in forms}
        else:
            missing.append(f"{' / '.join(map(repr, forms))} ({where[0]})")
            continue
        for form, texts in said.items():
            holes += [f"{form!r} -> {text!r}" for text in texts if _holes(text) != _holes(form)]
    assert not missing, f"no {LANGS[lang]} words for: " + "; ".join(missing)
    assert not holes, "placeholders differ from the English: " + "; ".join(holes)


def _holes(text: str) -> set[str]:
    return set(HOLE.findall(text))


def test_the_check_reads_keys_and_refuses_what_it_cannot_read() -> None:
    src = "t('a {n} b', { n }); t(['{n} GPU', \"{n} GPUs\"], { n }, n); t(`x`)"
    assert [_key(src, m.end()) for m in CALL.finditer(src)] == [
        ["a {n} b"],
        ["{n} GPU", "{n} GPUs"],
        ["x"],
    ]
    with pytest.raises(ValueError, match="written string"):
        _key("t(name)", 2)
    with pytest.raises(ValueError, match=r"\$\{\}"):
        _key("t(`step ${n}`)", 2)


# The page's own HTML is put into its language once, before it mounts (translate.js
# `localize`): each text and title, label and placeholder outside translate="no" is a key.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
LEFT_ALONE = {"script", "style", "noscript", "code", "pre", "kbd", "textarea"}
TITLES = {"title", "aria-label", "placeholder", "alt", "aria-description", "data-tip"}
UNITS = set("ms s µs us ns min h d B KB MB GB TB PB k M x W kW MW".split()) | {
    "GB/s", "TB/s", "Gb/s", "FLOP", "FLOPs", "TFLOP/s", "PFLOP/s", "EFLOP/s",
}  # fmt: skip


class _PageText(HTMLParser):
    """The texts `localize` looks up in a page: (text, 'page:line')."""

    def __init__(self, name: str) -> None:
        super().__init__(convert_charrefs=True)
        self.name, self.open, self.found = name, [], []
        self.skipping = 0  # how many open elements leave their inside alone

    def handle_starttag(self, tag, attrs) -> None:
        a = dict(attrs)
        alone = tag in LEFT_ALONE or a.get("translate") == "no"
        if not (self.skipping or alone):
            for k in TITLES & set(a):
                self._add(a[k])
            if tag == "input" and a.get("type") in ("button", "submit") and a.get("value"):
                self._add(a["value"])
        if tag not in VOID:
            self.open.append(alone)
            self.skipping += alone

    def handle_endtag(self, tag) -> None:
        if tag not in VOID and self.open:
            self.skipping -= self.open.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self._add(data)

    def _add(self, text: str) -> None:
        core = " ".join(text.split())
        words = re.findall(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ/]*", core)
        if core and any(w not in UNITS for w in words):
            self.found.append((core, f"{self.name}:{self.getpos()[0]}"))


def keys_in_pages() -> list[tuple[str, str]]:
    found = []
    for path in sorted(STATIC_JS.parent.glob("*.html")):
        parser = _PageText(f"static/{path.name}")
        parser.feed(path.read_text(encoding="utf-8"))
        found += parser.found
    return found


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_text_of_the_pages_html_has_words_in_every_language(lang: str) -> None:
    words = catalogue(lang)
    found = keys_in_pages()
    assert len(found) > 80, len(found)  # the pages' headings, buttons, panels and help
    missing = [f"{text!r} ({where})" for text, where in found if text not in words]
    assert not missing, f"no {LANGS[lang]} words for the page's HTML: " + "; ".join(missing)


def test_the_pages_html_is_read_as_localize_reads_it() -> None:
    parser = _PageText("x")
    parser.feed(
        '<p title="Pause">Run <kbd>Space</kbd> now<br>again</p>'
        '<b translate="no">Once <i>upon</i></b>'
        '<input type="button" value="Go"><span>12.5 ms</span><img alt="A ring">'
    )
    assert [t for t, _ in parser.found] == ["Pause", "Run", "now", "again", "Go", "A ring"]
