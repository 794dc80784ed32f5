"""The locale files (scenes/locales/<lang>/<area>.json): each language, English too, has words
for the same lines, area by area; every placeholder of a pattern key is used in its text; two
areas never give one line different words; and the route serves them merged."""

from __future__ import annotations

import json
import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.routes import locale as locale_routes

LANGS = list(locale_routes.LANGS)
DIR = locale_routes.LOCALES_DIR
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def areas(lang: str) -> dict[str, dict[str, str]]:
    files = sorted((DIR / lang).glob("*.json"))
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in files}


def test_every_language_has_the_same_areas_and_lines() -> None:
    first = areas(LANGS[0])
    assert first, "no locale files"
    for lang in LANGS[1:]:
        other = areas(lang)
        assert sorted(other) == sorted(first), lang
        for area, words in first.items():
            missing = set(words) - set(other[area])
            extra = set(other[area]) - set(words)
            assert not missing and not extra, (lang, area, sorted(missing)[:5], sorted(extra)[:5])


def test_english_is_a_locale_file_like_the_others() -> None:
    """English has every area and line the other languages have; a line may say it otherwise
    than its key, with the same placeholders."""
    assert LANGS[0] == "en" and set(areas("en")) == {"labs", "page", "story", "tour"}


def test_english_words_that_differ_from_their_key_are_sent(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(locale_routes, "LOCALES_DIR", tmp_path)
    locale_routes.catalogue.cache_clear()
    try:
        (tmp_path / "en").mkdir()
        words = {"Loss": "Training loss", "Step {n}": "Step {n}"}
        (tmp_path / "en" / "page.json").write_text(json.dumps(words))
        app = FastAPI()
        app.include_router(locale_routes.router)
        assert TestClient(app).get("/api/locale/en").json() == {"Loss": "Training loss"}
    finally:
        locale_routes.catalogue.cache_clear()


def test_placeholders_are_kept_and_texts_are_not_empty() -> None:
    for lang in LANGS:
        for area, words in areas(lang).items():
            for key, text in words.items():
                assert isinstance(text, str) and text.strip(), (lang, area, key)
                assert set(PLACEHOLDER.findall(key)) == set(PLACEHOLDER.findall(text)), (
                    lang,
                    area,
                    key,
                    text,
                )


def test_two_areas_never_give_one_line_different_words() -> None:
    for lang in LANGS:
        seen: dict[str, tuple[str, str]] = {}
        for area, words in areas(lang).items():
            for key, text in words.items():
                if key in seen:
                    assert seen[key][1] == text, (lang, key, seen[key][0], area)
                seen[key] = (area, text)


def test_the_route_serves_each_language_merged() -> None:
    app = FastAPI()
    app.include_router(locale_routes.router)
    client = TestClient(app)
    for lang in LANGS:
        got = client.get(f"/api/locale/{lang}").json()
        merged = {k: v for words in areas(lang).values() for k, v in words.items()}
        if lang == "en":  # only the lines that say it otherwise than their key travel
            merged = {k: v for k, v in merged.items() if v != k}
        assert got == merged
    bad = client.get("/api/locale/xx")
    assert bad.status_code == 422 and "de" in bad.text


def test_a_count_may_give_its_forms_and_a_broken_entry_is_named(tmp_path, monkeypatch) -> None:
    """A language with more forms by count than English gives them as {category: text};
    anything else that is not a text is refused, naming the file and the line."""
    monkeypatch.setattr(locale_routes, "LOCALES_DIR", tmp_path)
    locale_routes.catalogue.cache_clear()
    try:
        (tmp_path / "pl").mkdir()
        forms = {"one": "{n} plik", "few": "{n} pliki", "many": "{n} plików", "other": "{n} pliku"}
        (tmp_path / "pl" / "page.json").write_text(json.dumps({"{n} files": forms}))
        assert locale_routes.catalogue("pl") == {"{n} files": forms}
        for bad in ({"one": "{n} plik"}, {"lots": "x", "other": "y"}, 3, " "):
            (tmp_path / "xx").mkdir(exist_ok=True)
            (tmp_path / "xx" / "page.json").write_text(json.dumps({"{n} files": bad}))
            locale_routes.catalogue.cache_clear()
            with pytest.raises(ValueError, match=r"page\.json: '\{n\} files' needs"):
                locale_routes.catalogue("xx")
    finally:
        locale_routes.catalogue.cache_clear()
