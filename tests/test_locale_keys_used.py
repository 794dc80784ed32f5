"""Every line of every locale file is used: each key (the English line) is a text the product
writes somewhere, read without a browser from the source itself. A text is a written string
of the page's modules (a template's `${...}` standing for any value), a text or an attribute
of the page's HTML, a string the server writes (an f-string's `{...}` standing for any value)
or a string of the scene's content. A key's `{placeholders}` stand for any value in turn, so
"Check {field}: {message}" is used by `t('Check {field}: {message}', ...)` and by a template
written `Check ${field}: ${message}`. A line no text matches is dead: the page can never show
it, and a translator would keep it up for nothing."""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest

from app.engine.hardware import DATASHEETS
from app.routes.locale import LANGS, LOCALES_DIR

ROOT = Path(__file__).resolve().parents[1]
HOLE = "\x00"  # a value filled in where the text is made
PLACEHOLDER = re.compile(r"\{(\w+)\}")
SPACE = re.compile(r"\s+")


def _tidy(text: str) -> str:
    return SPACE.sub(" ", text).strip()


def js_strings(src: str) -> list[str]:
    """The written strings of a JS module: '...', "..." and `...` (a `${}` read as a hole).
    Comments and regular expressions are skipped well enough for reading strings."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "'\"`":
            text, i = _js_literal(src, i, out)
            out.append(text)
            continue
        i += 1
    return out


def _js_literal(src: str, i: int, out: list[str]) -> tuple[str, int]:
    """The string starting at src[i] and the index after it; the strings written inside its
    `${}`s go to out."""
    quote, j, buf = src[i], i + 1, []
    n = len(src)
    while j < n and src[j] != quote:
        if src[j] == "\\" and j + 1 < n:
            buf.append(src[j + 1])
            j += 2
            continue
        if quote == "`" and src.startswith("${", j):
            depth, j = 1, j + 2
            while j < n and depth:
                if src[j] in "'\"`":
                    inner, j = _js_literal(src, j, out)
                    out.append(inner)
                    continue
                depth += {"{": 1, "}": -1}.get(src[j], 0)
                j += 1
            buf.append(HOLE)
            continue
        if quote != "`" and src[j] == "\n":
            break  # not a string after all (a regular expression's quote)
        buf.append(src[j])
        j += 1
    return "".join(buf), j + 1


def py_strings(src: str) -> list[str]:
    """The strings a Python module writes: constants, and f-strings with a hole per value."""
    out: list[str] = []
    tree = ast.parse(src)
    parts = {
        id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values
    }
    specs = {
        id(n.format_spec)
        for n in ast.walk(tree)
        if isinstance(n, ast.FormattedValue) and n.format_spec
    }
    for node in ast.walk(tree):
        if id(node) in parts or id(node) in specs:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            out.append("".join(_f_part(v) for v in node.values))
    return out


def _f_part(v: ast.expr) -> str:
    """An f-string's part: its text, or a hole (and the % a percentage's format writes)."""
    if isinstance(v, ast.Constant):
        return v.value
    spec = v.format_spec if isinstance(v, ast.FormattedValue) else None
    tail = spec.values[-1] if spec and spec.values else None
    percent = isinstance(tail, ast.Constant) and str(tail.value).endswith("%")
    return HOLE + ("%" if percent else "")


class _Texts(HTMLParser):
    ATTRS = {"title", "aria-label", "placeholder", "alt", "content", "value", "data-title"}

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.texts += [v for k, v in attrs if k in self.ATTRS and v]

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def html_strings(src: str) -> list[str]:
    parser = _Texts()
    parser.feed(src)
    return parser.texts + js_strings(src)  # the inline scripts' strings too


def json_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *json_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return []


@cache
def texts() -> frozenset[str]:
    """Every text the product writes, tidied."""
    found: list[str] = []
    for path in (ROOT / "static").rglob("*"):
        if "vendor" in path.parts or not path.is_file():
            continue
        if path.suffix == ".js":
            found += js_strings(path.read_text(encoding="utf-8"))
        elif path.suffix == ".html":
            found += html_strings(path.read_text(encoding="utf-8"))
    for path in (ROOT / "app").rglob("*.py"):
        found += py_strings(path.read_text(encoding="utf-8"))
    for path in (ROOT / "scenes").rglob("*.json"):
        if LOCALES_DIR in path.parents:
            continue
        found += json_strings(json.loads(path.read_text(encoding="utf-8")))
    return frozenset(t for t in map(_tidy, found + made_at_run_time()) if t)


@cache
def server_texts() -> frozenset[str]:
    """The server's f-strings (a hole for each value), which the page puts into its
    language as they arrive (lang.js tr())."""
    found = [
        s
        for path in (ROOT / "app").rglob("*.py")
        for s in py_strings(path.read_text(encoding="utf-8"))
    ]
    return frozenset(
        t for t in map(_tidy, found) if HOLE in t and len(re.sub(r"[\W\x00]", "", t)) >= 6
    )


def made_at_run_time() -> list[str]:
    """Texts made from tables as the server runs: each datasheet's source line, and what
    pydantic says of a value the edge refuses (an integer that is not one, a bound passed)."""
    from typing import Annotated

    from pydantic import Field, TypeAdapter, ValidationError

    out = [sheet.source for sheet in DATASHEETS.values()]
    cases = [
        (int, "x"),
        (int, 1.5),
        (float, "x"),
        (Annotated[float, Field(allow_inf_nan=False)], float("inf")),
        (Annotated[int, Field(ge=1)], 0),
        (Annotated[int, Field(gt=1)], 0),
        (Annotated[int, Field(le=1)], 2),
    ]
    for kind, bad in cases:
        with pytest.raises(ValidationError) as refused:
            TypeAdapter(kind).validate_python(bad)
        out += [e["msg"] for e in refused.value.errors()]
    return out


def _pattern(key: str) -> re.Pattern[str]:
    """A key as a pattern over texts: each {placeholder} one hole, one {name} or any written
    value (never the rest of a template: "Step {n}" is not "Step ${n} of ${total}")."""
    parts = PLACEHOLDER.split(_tidy(key))
    fixed = [re.escape(p) for p in parts[::2]]
    return re.compile(r"(?:\x00|\{\w+\}|[^\x00]+?)".join(fixed) if len(fixed) > 1 else fixed[0])


def _holed(text: str) -> re.Pattern[str]:
    """A server's f-string as a pattern over lines: a hole any value, and the % after a
    percentage's hole optional (a key's {share} holds "40%" whole)."""
    parts = [re.escape(p) for p in text.split(HOLE)]
    parts[1:] = [("%?" + p[1:]) if p.startswith("%") else p for p in parts[1:]]
    return re.compile(".+?".join(parts))


def unused(keys, written: frozenset[str], server: frozenset[str] = frozenset()) -> list[str]:
    """The keys no written text matches: neither the text as the key's pattern (a template
    or an f-string that fills the key's placeholders) nor the key as one of the server's
    f-strings (the server's line as it arrives, its values filled in)."""
    holed = [_holed(text) for text in server]
    out = []
    for key in keys:
        tidy = _tidy(key)
        if tidy in written:
            continue
        pattern = _pattern(key)
        if any(pattern.fullmatch(text) for text in written):
            continue
        if not any(text.fullmatch(tidy) for text in holed):
            out.append(key)
    return sorted(out)


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_every_locale_line_is_used(lang: str) -> None:
    dead = {
        path.name: unused(json.loads(path.read_text(encoding="utf-8")), texts(), server_texts())
        for path in sorted((LOCALES_DIR / lang).glob("*.json"))
    }
    dead = {name: keys for name, keys in dead.items() if keys}
    assert not dead, f"{LANGS[lang]} lines the product never writes: {dead}"


def test_the_check_reads_what_the_product_writes() -> None:
    src = (
        "const a = t('Check {field}: {message}'); "
        "const b = `Step ${n + f({x: 1})} of ${m}`; // 'no'\n"
        "const c = `${t('Done.')} `;"
    )
    assert js_strings(src) == [
        "Check {field}: {message}",
        f"Step {HOLE} of {HOLE}",
        "Done.",
        f"{HOLE} ",
    ]
    assert py_strings("x = f'Fault on GPU {g}: {what}'\ny = 'plain'\nz = f'{s:.0%} of it'") == [
        f"Fault on GPU {HOLE}: {HOLE}",
        "plain",
        f"{HOLE}% of it",
    ]
    written = frozenset([f"Step {HOLE} of {HOLE}", "Check {field}: {message}", "loss"])
    keys = [
        "Step {step} of {total}",
        "Check {field}: {message}",
        "loss",
        "never written",
        "Step {n}",
    ]
    assert unused(keys, written) == ["Step {n}", "never written"]
    # A server's line as it arrives: its f-string's holes filled, a percentage with its %.
    server = frozenset([f"Data-bound: it takes {HOLE}% of the step.", f"must be at most {HOLE}"])
    keys = [
        "Data-bound: it takes {share} of the step.",
        "must be at most 1e16",
        "must be at least 1",
    ]
    assert unused(keys, frozenset(), server) == ["must be at least 1"]
