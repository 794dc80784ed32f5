"""The words of the page in each language it speaks (`scenes/locales/<lang>/<area>.json`).

Each area file is one JSON object: a key (the English text, as the code names it) mapped to
the text in that language (or, for a count, its forms by plural category). English is a file
like the others. A key with `{name}` placeholders takes values ("chapter {n} of {total}");
for text the server made in English it is also a pattern that finds its words
(docs/languages.md).

    GET /api/locale/de    every area of German merged into one object
    GET /api/locale/en    the English lines whose words differ from their key (t() shows a
                          key it has no words for, so the rest need not travel)
"""

from __future__ import annotations

import json
from functools import cache
from typing import Literal

from fastapi import APIRouter, HTTPException

from app.paths import SCENES_DIR

router = APIRouter(prefix="/api/locale", tags=["locale"])

LOCALES_DIR = SCENES_DIR / "locales"
LANGS: dict[str, str] = {"en": "English", "de": "Deutsch", "es": "Español"}
Lang = Literal["en", "de", "es"]


# A count's forms, by Intl.PluralRules category, where a language has more than English's two.
FORMS = ("zero", "one", "two", "few", "many", "other")


def _words(text: object) -> bool:
    """A text, or {category: text} with an "other" (docs/languages.md, t())."""
    if isinstance(text, dict):
        return "other" in text and all(k in FORMS and _words(v) for k, v in text.items())
    return isinstance(text, str) and bool(text.strip())


@cache
def catalogue(lang: str) -> dict[str, str | dict[str, str]]:
    """Every area of one language merged; a key two areas share must mean the same."""
    words: dict[str, str] = {}
    folder = LOCALES_DIR / lang
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        area = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(area, dict):
            raise ValueError(f"{path}: a locale file is one JSON object of text -> text")
        for key, text in area.items():
            if not _words(text):
                raise ValueError(
                    f"{path}: {key!r} needs a non-empty text, or its forms by count"
                    f" ({', '.join(FORMS)}; 'other' always)"
                )
            if key in words and words[key] != text:
                raise ValueError(f"{path}: {key!r} differs from another area's {words[key]!r}")
            words[key] = text
    return words


@router.get("/{lang}", summary="The page's words in one language")
def get_locale(lang: Lang) -> dict[str, str | dict[str, str]]:
    try:
        words = catalogue(lang)
    except ValueError as err:  # a broken locale file: say which, keep the server up
        raise HTTPException(status_code=500, detail=str(err)) from err
    if lang == "en":  # the page shows a key whose words it is not sent: send what differs
        return {key: text for key, text in words.items() if text != key}
    return words
