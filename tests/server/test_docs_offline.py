"""The API docs work offline: /docs loads Swagger UI from the app's own vendored copy, never
from a CDN, and every file the page asks for is served by the app."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.paths import STATIC_DIR
from app.settings import Settings
from app.web.app import create_app

CONTENT_TYPES = {
    ".js": ("text/javascript", "application/javascript"),
    ".css": ("text/css",),
    ".png": ("image/png",),
}


class _Assets(HTMLParser):
    """The URLs a page makes the browser fetch: scripts, stylesheets, icons, images."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("script", "img") and a.get("src"):
            self.urls.append(a["src"])
        if tag == "link" and a.get("href"):
            self.urls.append(a["href"])


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    # Not entered as a context manager: the lifespan (the training worker) is not needed here.
    run_dir = tmp_path_factory.mktemp("docs") / "run"
    return TestClient(create_app(Settings(run_dir=run_dir)), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def docs_page(client: TestClient) -> str:
    r = client.get("/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    return r.text


def test_docs_page_names_no_other_host(docs_page: str) -> None:
    assert "http://" not in docs_page and "https://" not in docs_page
    parser = _Assets()
    parser.feed(docs_page)
    assert len(parser.urls) >= 3, parser.urls  # stylesheet, icon, script
    for url in parser.urls:
        assert url.startswith("/") and not url.startswith("//"), url
    # Swagger UI would otherwise fetch a validity badge from validator.swagger.io.
    assert '"validatorUrl": null' in docs_page


def test_every_docs_asset_is_served(client: TestClient, docs_page: str) -> None:
    parser = _Assets()
    parser.feed(docs_page)
    kinds = set()
    for url in parser.urls:
        r = client.get(url)
        assert r.status_code == 200, url
        suffix = Path(url).suffix
        kinds.add(suffix)
        assert r.headers["content-type"].split(";")[0] in CONTENT_TYPES[suffix], url
        assert len(r.content) > 100, url
    assert kinds == {".js", ".css", ".png"}
    bundle = client.get("/static/vendor/swagger-ui/swagger-ui-bundle.js").text
    assert "SwaggerUIBundle" in bundle


def test_vendored_swagger_ui_carries_its_licence_and_version() -> None:
    folder = STATIC_DIR / "vendor" / "swagger-ui"
    assert "Apache License" in (folder / "LICENSE").read_text()
    version = (folder / "VERSION").read_text().strip()
    script = (STATIC_DIR / "vendor" / "vendor-swagger.sh").read_text()
    assert f'VERSION="{version}"' in script


def test_openapi_still_served_and_cdn_pages_gone(client: TestClient) -> None:
    spec = client.get("/openapi.json")
    assert spec.status_code == 200
    assert {"/api/health", "/api/run"} <= set(spec.json()["paths"])
    assert "/docs" not in spec.json()["paths"]
    assert client.get("/redoc").status_code == 404
