"""`sarag serve`: the query module over HTTP (FastAPI), and the support engineers' web page. No Dagster.

The service keeps one opened home (`query.engine.Sarag`) and answers from its last published state. A
watcher thread looks at `<home>/published/CURRENT` every `check_every_s`; when a newer state is
published it opens it beside the old one (sharing the loaded model), warms it, and swaps it in. Requests
in flight finish on the state they started with; every answer names its state. Nothing published yet, or
a state that cannot be opened, is a 503 with the reason, never a traceback.

With an API key (``--api-key`` or SARAG_API_KEY), every /api route but /api/health wants it as
``X-API-Key: <key>`` or ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, BeforeValidator, Field, StringConstraints
from starlette.exceptions import HTTPException as StarletteHTTPException

from sarag_assets.query.strength import is_weak
from sarag_assets.service.body_limit import BodyLimit
from sarag_assets.settings import Home

log = logging.getLogger("sarag.serve")

MAX_K = 50
MAX_ASK_K = 10
MAX_TURNS = 200
MAX_TEXT = 20_000
_CELLS = ("problem", "resolution", "resolved")


# ---- request and response shapes (the OpenAPI description) ----------------------------------------------


# Something besides white space, spelled out: `\S` means other sets in Python, Rust (pydantic) and the
# JSON Schema's readers, and the query module strips exactly Python's white space.
_SAID = "[^" + "".join(f"\\u{c:04x}" for c in range(0x10000) if chr(c).isspace()) + "]"


class Turn(BaseModel):
    speaker: str = Field("user", max_length=100, description="'user' for the asker, 'agent' for a helper, or a name")
    text: str = Field(..., min_length=1, max_length=MAX_TEXT, pattern=_SAID)


def _json_integer(value: Any) -> Any:
    """JSON's integer (10, or 10.0 as JSON Schema allows), not "10" or true, which pydantic's lax mode takes."""
    if isinstance(value, (bool, str)):
        raise ValueError(f"a JSON integer is expected, not a {'boolean' if isinstance(value, bool) else 'string'}")
    return value


Count = Annotated[int, BeforeValidator(_json_integer)]
Question = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT, pattern=_SAID)]
Conversation = Annotated[list[Turn], Field(min_length=1, max_length=MAX_TURNS)]


class QueryIn(BaseModel):
    """A question, or a whole conversation (oldest turn first; its last turn is what is asked now)."""

    query: Question | Conversation = Field(..., description="a question, or a conversation as a list of turns")

    def as_query(self):
        return self.query if isinstance(self.query, str) else [t.model_dump() for t in self.query]


class SearchIn(QueryIn):
    k: Count = Field(10, ge=1, le=MAX_K, description="how many past conversations")
    # strict: JSON Schema's boolean is true or false, not 0 or "yes" (its integer does take 18.0)
    explain: bool = Field(False, strict=True,
                          description="add each channel's rank and score (how the ranking was fused)")


class AskIn(QueryIn):
    # the page, the CLI and the Python API answer from the 5 closest conversations; so does the API
    k: Count = Field(5, ge=1, le=MAX_ASK_K, description="how many past conversations the answer reads")


class Matched(BaseModel):
    column: str
    value: str


class Hit(BaseModel):
    dialogue_id: str
    rank: int
    strength: float | None = Field(description="standard deviations by which the conversation stands out for this "
                                               "query (null: the corpus is too small to tell)")
    weak: bool = Field(description="true when the conversation does not stand out from the rest: a weak match")
    problem: str | None
    resolution: str | None
    resolved: bool | None = Field(description="whether the asker confirmed a fix (null: the table does not say)")
    matched: list[Matched]
    source_file: str | None
    source_format: str | None
    started_at: datetime | None
    landed_at: datetime | None
    cells: dict[str, str]
    channels: dict[str, dict[str, float]] | None = Field(None, description="with explain: rank and score per channel")


class SearchOut(BaseModel):
    published_state: str
    notes: list[str]
    mentioned: list[Matched] = Field(default_factory=list, description="values of the table the question names")
    hits: list[Hit]


class Citation(BaseModel):
    id: str
    dialogue_id: str


class FixOut(BaseModel):
    text: str
    outcome: Literal["confirmed", "not_recorded", "failed"]
    dialogue_ids: list[str]


class AskOut(BaseModel):
    published_state: str
    answer: str
    supported: bool
    generated_by: str
    citations: list[Citation]
    notes: list[str]
    fixes: list[FixOut] = Field(default_factory=list, description="the fixes offered, best first, with outcomes")


class SqlIn(BaseModel):
    statement: str = Field(..., min_length=1, max_length=MAX_TEXT, pattern=_SAID, description="one read-only SELECT")


class SqlOut(BaseModel):
    published_state: str
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool


class ConversationTurn(BaseModel):
    turn_index: int
    role: str
    speaker: str
    text: str
    ts: datetime | None
    accepted: bool = False  # the source marks it as the accepted answer


class ConversationOut(BaseModel):
    published_state: str
    dialogue_id: str
    source_file: str | None
    source_format: str | None
    started_at: datetime | None
    landed_at: datetime | None
    cells: dict[str, str]
    fields: dict[str, str] = Field(default_factory=dict, description="the record's own fields as the source gave "
                                                                    "them (a forum's category, a ticket's queue)")
    turns: list[ConversationTurn]


class HealthOut(BaseModel):
    status: Literal["ok", "not ready"]
    published_state: str | None
    published_at: str | None
    conversations: int | None
    detail: str | None = None


class ErrorOut(BaseModel):
    detail: str


ERRORS = {400: {"model": ErrorOut, "description": "the request cannot be answered as asked"},
          401: {"model": ErrorOut, "description": "a missing or wrong API key"},
          413: {"model": ErrorOut, "description": "a request body over the size limit (setting max_request_bytes)"},
          503: {"model": ErrorOut, "description": "nothing published yet, or the state cannot be read"}}


# ---- the opened home -------------------------------------------------------------------------------------


class Engines:
    """The engine over the last published state, swapped for a new one when a newer state is published."""

    def __init__(self, home: Home, *, check_every_s: float = 2.0):
        self.home = home
        self.check_every_s = check_every_s
        self._engine = None
        self._problem: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._sql = None
        self.refresh()

    def start(self) -> None:
        if self._watcher is None and self.check_every_s > 0:
            self._watcher = threading.Thread(target=self._watch, name="sarag-published-state", daemon=True)
            self._watcher.start()

    def isolated_sql(self):
        """The child processes SQL statements run in (started at the first statement), so that one DuckDB
        cannot interrupt is ended, not left running on a thread of the service."""
        from sarag_assets.query.sql import IsolatedSql

        with self._lock:
            if self._sql is None:
                self._sql = IsolatedSql()
            return self._sql

    def stop(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        if self._sql is not None:
            self._sql.close()
        if self._engine is not None:
            self._engine.close()

    def _watch(self) -> None:
        while not self._stop.wait(self.check_every_s):
            self.refresh()

    def refresh(self) -> bool:
        """Open the newest published state if it is not the one served. True when it swapped."""
        from sarag_assets.core import publication
        from sarag_assets.query.engine import HomeNotReady, Sarag

        with self._lock:  # one opening at a time; requests do not take this lock
            old = self._engine
            try:
                state = publication.current(self.home)
                if state is None:
                    raise HomeNotReady("nothing is published in this home yet: run `sarag materialize`")
                if self._engine is not None and self._engine.publication.id == state.id:
                    return False
                fresh = Sarag(self.home, embedder=old.embedder if old is not None else None)
                fresh.retrieve("warm up", 1)  # loads the model and the vectors before it serves anyone
            except Exception as exc:  # noqa: BLE001 - the reason is served, the old state kept
                self._problem = _one_line(exc, self.home)
                if old is not None:
                    log.warning("keeping published state %s: %s", old.publication.id, self._problem)
                return False
            self._engine, self._problem = fresh, None
        if old is not None:  # requests that took it finish first
            closer = threading.Timer(60, old.close)
            closer.daemon = True  # a stopping service does not wait for it
            closer.start()
        log.info("serving published state %s", fresh.publication.id)
        return True

    def engine(self):
        engine = self._engine
        if engine is None:
            raise HTTPException(503, self._problem or "nothing is published yet")
        return engine

    @property
    def problem(self) -> str | None:
        return self._problem


def _one_line(exc: BaseException, home: Home) -> str:
    """The reason, in one line, without the server's paths (whoever asks sees `<home>` instead)."""
    from sarag_assets.query.damage import damaged_store

    message = damaged_store(exc) or (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    # only absolute paths: a relative home such as the default "data" is also a word in messages
    shown = {str(home.root.resolve())} | ({str(home.root)} if home.root.is_absolute() else set())
    for path in sorted(shown, key=len, reverse=True):
        message = message.replace(path, "<home>")
    return message


# ---- the app ---------------------------------------------------------------------------------------------


def create_app(home: Home, *, api_key: str | None = None, check_every_s: float = 2.0,
               announce_url: str | None = None) -> FastAPI:
    """The app; with `announce_url`, it tells the CLI where it listens while it runs (service/discovery.py)."""
    from sarag_assets.service.api_docs import serve_offline_docs
    from sarag_assets.service.page import PAGE
    from sarag_assets.settings import Settings

    max_body = Settings.load(home.root).max_request_bytes
    engines = Engines(home, check_every_s=check_every_s)
    app = FastAPI(title="sarag", version=_version(), description=(
        "Past support conversations, searched and answered from the last published state of a sarag home."),
        lifespan=_lifespan(engines, home, announce_url), docs_url=None, redoc_url=None)
    app.add_middleware(BodyLimit, max_bytes=max_body)
    serve_offline_docs(app)
    app.state.engines = engines

    # declared as security schemes, so that the API's description (and /docs) knows the key
    key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="the service's API key")
    bearer = HTTPBearer(auto_error=False, description="the service's API key as a bearer token")

    # defaults, not Annotated: the annotations are strings (PEP 563) and these schemes are local names
    def authorized(key: str | None = Security(key_header),
                   token: HTTPAuthorizationCredentials | None = Security(bearer)) -> None:
        given = key or (token.credentials if token is not None else "") or ""
        if not hmac.compare_digest(given.encode(), api_key.encode()):
            raise HTTPException(401, "a missing or wrong API key (X-API-Key or Authorization: Bearer)")

    guarded = [Depends(authorized)] if api_key else []

    @app.exception_handler(StarletteHTTPException)  # FastAPI's and Starlette's (BodyLimit's 413)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError):
        # FastAPI's own handler echoes the input back: megabytes of it, or a NaN or a lone surrogate that
        # JSON cannot encode (a 500 for the asker's mistake). Where and what is wrong is enough.
        return JSONResponse({"detail": [_problem(error) for error in exc.errors()]}, status_code=422)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return PAGE.replace("__AUTH__", "true" if api_key else "false")

    @app.get("/api/health", response_model=HealthOut, responses={503: {"model": HealthOut}})
    def health():
        engine = engines._engine
        if engine is None:
            body = HealthOut(status="not ready", published_state=None, published_at=None, conversations=None,
                             detail=engines.problem)
            return JSONResponse(body.model_dump(), status_code=503)
        state = engine.publication
        return HealthOut(status="ok", published_state=state.id, published_at=state.published_at,
                         conversations=len(engine.rows), detail=engines.problem)

    @app.post("/api/search", response_model=SearchOut, dependencies=guarded, responses=ERRORS)
    def search(body: SearchIn) -> SearchOut:
        engine = engines.engine()
        result = _answering(lambda: engine.retrieve(body.as_query(), body.k), home)
        ids = result.ids()
        origins = _answering(lambda: engine.origins(ids), home)
        strength = engine.match_strength(result.query_vector, ids)
        hits = [_hit(h, origins.get(h.dialogue_id, {}), strength.get(h.dialogue_id), body.explain)
                for h in result.hits]
        mentioned = [Matched(column=e.column, value=str(e.value)) for e in result.query.entities]
        return SearchOut(published_state=result.published_state, notes=result.query.notes, mentioned=mentioned,
                         hits=hits)

    @app.post("/api/ask", response_model=AskOut, dependencies=guarded, responses=ERRORS)
    def ask(body: AskIn) -> AskOut:
        engine = engines.engine()
        answer = _answering(lambda: engine.answer(body.as_query(), k=body.k), home)
        of = answer.evidence.conversations()
        citations = [Citation(id=c, dialogue_id=of.get(c, c)) for c in answer.citations]
        return AskOut(published_state=engine.publication.id, answer=answer.text, supported=answer.supported,
                      generated_by=answer.generated_by, citations=citations, notes=answer.notes,
                      fixes=[FixOut(**f.as_dict()) for f in answer.fixes])

    @app.post("/api/sql", response_model=SqlOut, dependencies=guarded, responses=ERRORS)
    def sql(body: SqlIn) -> SqlOut:
        engine = engines.engine()
        result = _answering(lambda: engine.sql(body.statement, runner=engines.isolated_sql().run), home)
        return SqlOut(published_state=engine.publication.id, columns=result.columns,
                      rows=[[_plain(v) for v in row] for row in result.rows], truncated=result.truncated)

    # `:path`: a conversation id may hold a slash ("forum/thread/42"), sent encoded or not
    @app.get("/api/conversations/{dialogue_id:path}", response_model=ConversationOut, dependencies=guarded,
             responses={**ERRORS, 404: {"model": ErrorOut, "description": "no current conversation of that id"}})
    def conversation(dialogue_id: str) -> ConversationOut:
        engine = engines.engine()
        found = _answering(lambda: engine.conversation(dialogue_id), home)
        if found is None:
            raise HTTPException(404, f"no conversation {dialogue_id!r} in published state {engine.publication.id}")
        return ConversationOut(published_state=engine.publication.id, dialogue_id=dialogue_id,
                               source_file=found.get("source_file"), source_format=found.get("source_format"),
                               started_at=found.get("started_at"), landed_at=found.get("landed_at"),
                               cells=found["row"], fields=found.get("fields") or {},
                               turns=[ConversationTurn(**t) for t in found["turns"]])

    return app


def _lifespan(engines: Engines, home: Home, announce_url: str | None):
    from contextlib import asynccontextmanager

    from sarag_assets.service import discovery

    @asynccontextmanager
    async def lifespan(app):
        engines.start()
        if announce_url:
            try:
                discovery.announce(home.root, announce_url)
            except OSError as exc:  # a home this service may only read: the CLI answers in its own process
                log.warning("the CLI will not find this service: cannot write %s (%s)", discovery.FILE, exc)
        try:
            yield
        finally:
            if announce_url:
                discovery.withdraw(home.root)
            engines.stop()

    return lifespan


def _answering(call, home: Home):
    """Run a query call; what the asker got wrong is a 400 with the one-line reason."""
    from sarag_assets.query.engine import StateRetired, query_errors

    try:
        return call()
    except StateRetired:  # the service could not open the newest state for a while: not the asker's fault
        raise HTTPException(503, "the published state being served was retired and the newest one could "
                                 "not be opened yet; see /api/health") from None
    except query_errors() as exc:
        raise HTTPException(400, _one_line(exc, home)) from None


def _hit(hit, origin: dict, strength: float | None, explain: bool) -> Hit:
    row = hit.row
    resolved = row.get("resolved")
    return Hit(
        dialogue_id=hit.dialogue_id, rank=hit.rank, strength=None if strength is None else round(strength, 2),
        weak=is_weak(strength, hit.matched_columns),
        problem=row.get("problem"), resolution=row.get("resolution"),
        resolved=None if resolved is None else str(resolved).strip().lower() in ("true", "yes", "1"),
        matched=[Matched(column=m["column"], value=str(m["value"])) for m in hit.matched_columns],
        source_file=origin.get("source_file"), source_format=origin.get("source_format"),
        started_at=origin.get("started_at"), landed_at=origin.get("landed_at"),
        cells={k: v for k, v in row.items() if k not in _CELLS},
        channels=hit.channels if explain else None)


def _problem(error: dict) -> dict:
    """One validation error as where and what, without the input (nor the 60-KB white-space pattern)."""
    message = "should hold something besides white space" if error["type"] == "string_pattern_mismatch" \
        else str(error.get("msg", "invalid"))
    where = [part if isinstance(part, int) else str(part) for part in error.get("loc", ())]
    return {"loc": [_encodable(part) for part in where], "msg": _encodable(message[:300]), "type": error["type"]}


def _encodable(value):
    """`value` made encodable as UTF-8 (a lone surrogate in a key the asker sent becomes its escape)."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(value, str) else value


def _plain(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    return str(value)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sarag")
    except PackageNotFoundError:
        return "0"


def serve(home: Home, *, host: str = "127.0.0.1", port: int = 8765, api_key: str | None = None,
          check_every_s: float = 2.0) -> None:
    import uvicorn

    started = time.perf_counter()
    local = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host, f"[{host}]" if ":" in host else host)
    app = create_app(home, api_key=api_key, check_every_s=check_every_s, announce_url=f"http://{local}:{port}")
    log.info("opened %s in %.1f s", home.root, time.perf_counter() - started)
    uvicorn.run(app, host=host, port=port, log_level="warning")
