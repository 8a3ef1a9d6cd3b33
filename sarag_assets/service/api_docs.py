"""The API's browsable description (`/docs`) from Swagger UI files shipped in a package, not a CDN: the
service is often where nothing but the users' browsers reach it."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC = "/docs-static"


def serve_offline_docs(app: FastAPI, *, docs_url: str = "/docs") -> None:
    """Add `docs_url` to an app created with ``docs_url=None``: Swagger UI from fastapi-offline's copy."""
    files = resources.files("fastapi_offline") / "static"
    app.mount(STATIC, StaticFiles(directory=str(files)), name="docs-static")

    @app.get(docs_url, include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title=f"{app.title} - API",
                                   swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{STATIC}/swagger-ui.css",
                                   swagger_favicon_url=f"{STATIC}/favicon.png")
