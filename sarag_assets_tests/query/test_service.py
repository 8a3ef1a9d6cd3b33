"""`sarag serve` as a user starts it: a real uvicorn process over the home the real pipeline built,
asked over real HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from sarag_assets.core import publication

REPO = Path(__file__).resolve().parents[2]
KEY = "test-key-1234"
START_GUARD_S = 300  # only against a service that never comes up


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    def __init__(self, home_root: Path, *, api_key: str | None = None, extra_env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_key = api_key
        env = {**os.environ, "HF_HUB_OFFLINE": "1", **(extra_env or {}),
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        env.pop("SARAG_API_KEY", None)
        argv = [sys.executable, "-m", "sarag_assets.cli", "serve", "--home", str(home_root), "--port", str(self.port)]
        if api_key:
            argv += ["--api-key", api_key]
        self.process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_GUARD_S
        while True:
            assert self.process.poll() is None, self.process.stdout.read().decode(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the service never answered"
            try:
                if requests.get(self.url + "/api/health", timeout=5).status_code in (200, 503):
                    break
            except requests.ConnectionError:
                pass
            time.sleep(0.2)

    def headers(self) -> dict:
        return {"X-API-Key": self.api_key} if self.api_key else {}

    def post(self, path: str, body: dict, **kwargs) -> requests.Response:
        return requests.post(self.url + path, json=body, headers=self.headers(), timeout=120, **kwargs)

    def get(self, path: str) -> requests.Response:
        return requests.get(self.url + path, headers=self.headers(), timeout=120)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.process.stdout.close()


@pytest.fixture(scope="package")
def service(built_home):
    running = Service(built_home.root, api_key=KEY)
    yield running
    running.stop()


def test_health_names_the_published_state_and_needs_no_key(service, built_home):
    health = requests.get(service.url + "/api/health", timeout=30).json()
    state = publication.current(built_home)
    assert health["status"] == "ok" and health["published_state"] == state.id
    assert health["conversations"] == state.counts["conversations"]


def test_a_damaged_state_is_reported_without_the_servers_paths(tmp_path):
    from sarag_assets_tests.conftest import publish_as_is

    root = tmp_path / "secret-server-folder" / "home"
    publish_as_is(root, bytes(range(256)) * 400)  # a published warehouse copy that is not a DuckDB file
    running = Service(root)
    try:
        health = requests.get(running.url + "/api/health", timeout=30)
        assert health.status_code == 503 and health.json()["status"] == "not ready"
        detail = health.json()["detail"]
        assert "cannot be read" in detail and "sarag materialize" in detail
        assert "secret-server-folder" not in detail and str(tmp_path) not in detail
        searched = running.post("/api/search", {"query": "printer"})
        assert searched.status_code == 503 and "secret-server-folder" not in searched.text
    finally:
        running.stop()


def test_server_paths_are_hidden_but_a_relative_home_leaves_words_alone(tmp_path):
    from sarag_assets.service.app import _one_line
    from sarag_assets.settings import Home

    relative = Home(Path("data"))
    assert _one_line(ValueError("no column named metadata in the database"), relative) == \
        "no column named metadata in the database"
    inside = str(Path("data").resolve() / "published" / "x.duckdb")
    assert _one_line(ValueError(f"cannot open {inside}"), relative) == "cannot open <home>/published/x.duckdb"
    absolute = Home(tmp_path / "h")
    assert _one_line(ValueError(f"{tmp_path}/h/notes.txt is gone"), absolute) == "<home>/notes.txt is gone"


def test_every_api_route_wants_the_key(service):
    for path, body in (("/api/search", {"query": "printer"}), ("/api/ask", {"query": "printer"}),
                       ("/api/sql", {"statement": "SELECT 1"})):
        for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
            refused = requests.post(service.url + path, json=body, headers=headers, timeout=30)
            assert refused.status_code == 401 and "API key" in refused.json()["detail"]
    assert requests.get(service.url + "/api/conversations/x", timeout=30).status_code == 401
    bearer = requests.post(service.url + "/api/sql", json={"statement": "SELECT 1 AS one"},
                           headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert bearer.status_code == 200 and bearer.json()["rows"] == [[1]]


def test_search_hits_say_what_a_support_engineer_needs(service, built_home, generated_queries):
    query = next(q for q in generated_queries if len(q["turns"]) == 1)
    found = service.post("/api/search", {"query": query["turns"], "k": 5})
    assert found.status_code == 200, found.text
    data = found.json()
    assert data["published_state"] == publication.current(built_home).id
    hits = data["hits"]
    assert [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
    assert set(query["gold"]) & {h["dialogue_id"] for h in hits}
    top = hits[0]
    assert not top["weak"] and top["strength"] >= 3
    assert top["source_file"] and top["source_format"] and top["landed_at"]
    assert "channels" not in top or top["channels"] is None  # fusion details only with explain
    explained = service.post("/api/search", {"query": query["turns"], "k": 5, "explain": True}).json()
    assert explained["hits"][0]["channels"]


def test_a_question_nothing_matches_is_flagged_weak(service):
    hits = service.post("/api/search", {"query": "how do I knit a scarf with circular needles", "k": 5}).json()["hits"]
    assert hits and all(h["weak"] for h in hits)


def test_a_hit_holding_a_value_the_question_names_is_not_weak(service):
    product = service.post("/api/sql", {"statement": "SELECT product, count(*) FROM conversation_table WHERE product "
                                                     "IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1"}).json()
    name = product["rows"][0][0]
    # about knitting, but naming a product of the home: its holders stand out on that value
    hits = service.post("/api/search", {"query": f"how do I knit a scarf, asks {name}", "k": 10}).json()["hits"]
    holding = [h for h in hits if any(m["value"] == name for m in h["matched"])]
    assert holding and not any(h["weak"] for h in holding)
    assert all(h["weak"] for h in hits if not h["matched"] and h["strength"] is not None and h["strength"] < 3)


def test_a_hit_opens_into_its_redacted_conversation(service, built_home):
    hit = service.post("/api/search", {"query": "my router keeps dropping the connection", "k": 1}).json()["hits"][0]
    opened = service.get(f"/api/conversations/{hit['dialogue_id']}")
    assert opened.status_code == 200
    conversation = opened.json()
    assert conversation["dialogue_id"] == hit["dialogue_id"] and conversation["turns"]
    assert [t["turn_index"] for t in conversation["turns"]] == sorted(t["turn_index"] for t in conversation["turns"])
    state = publication.current(built_home)
    from sarag_assets.query.sql import run_select
    stored = run_select(state.warehouse, f"SELECT text FROM current_dialogues WHERE dialogue_id = "
                                         f"'{hit['dialogue_id']}' ORDER BY turn_index").rows
    assert [t["text"] for t in conversation["turns"]] == [r[0] for r in stored]  # the stored, redacted text
    assert [t["accepted"] for t in conversation["turns"]] == [False] * len(stored)  # no generated answer is marked
    fields = run_select(state.warehouse, f"SELECT source_fields FROM conversation_table WHERE dialogue_id = "
                                         f"'{hit['dialogue_id']}'").rows[0][0]
    assert conversation["fields"] == json.loads(fields) and set(conversation["fields"]) == {"domain", "channel"}
    missing = service.get("/api/conversations/no-such-conversation")
    assert missing.status_code == 404 and "no-such-conversation" in missing.json()["detail"]


def test_ask_cites_conversations_that_open(service):
    answer = service.post("/api/ask", {"query": "my printer jams on every page, what fixed it?"})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["citations"]
    # the fixes offered, best first, each with its outcome and the conversations it comes from
    assert data["fixes"] and (not data["supported"] or any(f["outcome"] != "failed" for f in data["fixes"]))
    for fix in data["fixes"]:
        assert fix["outcome"] in ("confirmed", "not_recorded", "failed") and fix["text"][:30] in data["answer"]
        assert set(fix["dialogue_ids"]) <= {c["dialogue_id"] for c in data["citations"]}
    for citation in data["citations"]:
        assert service.get(f"/api/conversations/{citation['dialogue_id']}").status_code == 200


def test_sql_is_read_only_and_bounded_over_http(service, built_home):
    counted = service.post("/api/sql", {"statement": "SELECT count(*) FROM conversation_table"}).json()
    assert counted["rows"] == [[publication.current(built_home).counts["conversations"]]]
    for statement in ("DROP TABLE raw_dialogues", "PRAGMA database_list", "SELECT * FROM read_csv('/etc/passwd')",
                      "SELECT name, setting FROM pg_catalog.pg_settings", "SELECT repeat('x', 300000000)"):
        refused = service.post("/api/sql", {"statement": statement})
        assert refused.status_code == 400, (statement, refused.text)
        detail = refused.json()["detail"]
        assert "\n" not in detail and str(built_home.root) not in detail
        assert len(refused.content) < 1_000
    many = service.post("/api/sql", {"statement": "SELECT range FROM range(5000)"}).json()
    assert len(many["rows"]) == 1000 and many["truncated"]


def test_bad_requests_are_400_or_422_never_500(service):
    for body in ({}, {"query": "x", "k": 0}, {"query": "   "}, {"query": []}, {"query": [{"text": " "}]},
                 {"query": "x" * 30_000}, {"query": 7}):
        response = service.post("/api/search", body)
        assert response.status_code in (400, 422), (body, response.status_code, response.text)
    assert service.get("/api/conversations/%00").status_code == 404


@pytest.mark.parametrize("path, body", [
    ("/api/search", {"query": "\ud800"}), ("/api/search", {"query": [{"speaker": "\udfff", "text": "printer"}]}),
    ("/api/search", {"query": "ok", "k": "\ud800"}), ("/api/ask", {"query": "printer \udfff jams"}),
    ("/api/sql", {"statement": "SELECT '\ud800'"}),
])
def test_a_lone_surrogate_in_a_request_is_a_422_not_a_500(service, path, body):
    # JSON may spell a lone surrogate ("\ud800"); UTF-8 cannot, so echoing it back in the error broke the 422
    response = service.post(path, body)
    assert response.status_code == 422, response.text
    assert "\\ud" not in response.text and response.json()["detail"][0]["loc"][0] == "body"  # where, not what


def raw_post(service, path: str, body: bytes, timeout: float = 30) -> requests.Response:
    return requests.post(service.url + path, data=body, timeout=timeout,
                         headers={**service.headers(), "Content-Type": "application/json"})


@pytest.mark.parametrize("path, body", [
    ("/api/search", b'{"query": "printer", "k": NaN}'), ("/api/search", b'{"query": "printer", "k": Infinity}'),
    ("/api/ask", b'{"query": "printer", "k": -Infinity}'), ("/api/sql", b'{"statement": NaN}'),
    ("/api/search", b'{"query": "printer", "k": "10"}'), ("/api/ask", b'{"query": "printer", "k": true}')])
def test_a_number_json_does_not_have_or_a_k_that_is_no_integer_is_a_422(service, path, body):
    response = raw_post(service, path, body)
    assert response.status_code == 422, response.text
    [problem] = response.json()["detail"]
    assert problem["loc"][-1] in ("k", "statement") and problem["msg"]


def test_a_422_names_where_and_what_and_never_echoes_the_input(service):
    response = service.post("/api/search", {"query": "x" * 30_000 + "MARKER", "k": 3})
    assert response.status_code == 422
    assert "MARKER" not in response.text and len(response.content) < 1_000
    problem = response.json()["detail"][0]
    assert problem["loc"][:2] == ["body", "query"] and "at most 20000 characters" in problem["msg"]


def test_a_body_over_the_size_limit_is_refused_unread_and_health_answers_meanwhile(service):
    from concurrent.futures import ThreadPoolExecutor

    huge = json.dumps({"query": [{"speaker": "user", "text": "printer " * 2_000}] * 600}).encode()  # ~10 MB
    assert len(huge) > 9_000_000

    def chunks():
        for start in range(0, len(huge), 65_536):
            yield huge[start:start + 65_536]

    with ThreadPoolExecutor(4) as senders:
        declared = [senders.submit(raw_post, service, "/api/search", huge) for _ in range(2)]
        streamed = senders.submit(raw_post, service, "/api/search", chunks())  # no Content-Length
        # a request held up behind the parsing of another's body would miss this hang guard
        healths = [requests.get(service.url + "/api/health", timeout=10).status_code for _ in range(5)]
        refused = [future.result() for future in declared + [streamed]]
    assert healths == [200] * 5
    for response in refused:
        assert response.status_code == 413 and len(response.content) < 200
        assert response.json()["detail"] == "the request body is larger than 1,000,000 bytes (setting max_request_bytes)"
    # the limit is the body's, whatever it holds: just under it, an invalid request is a plain 422
    assert raw_post(service, "/api/search", json.dumps({"query": " " * 900_000}).encode()).status_code == 422


def test_a_client_sending_its_body_slowly_holds_up_no_one(service):
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as slow:
        slow.sendall(f"POST /api/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"X-API-Key: {KEY}\r\nContent-Length: 500000\r\n\r\n{{\"query\": \"".encode())
        assert requests.get(service.url + "/api/health", timeout=10).status_code == 200
        assert service.post("/api/search", {"query": "printer jams", "k": 2}).status_code == 200


def test_the_openapi_description_lists_every_route(service):
    spec = requests.get(service.url + "/openapi.json", timeout=30).json()
    assert {"/api/health", "/api/search", "/api/ask", "/api/sql", "/api/conversations/{dialogue_id}"} <= set(spec["paths"])


def test_schemathesis_finds_no_server_error_and_no_schema_violation(service):
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis.generation import GenerationMode
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    schema = schemathesis.openapi.from_url(service.url + "/openapi.json")
    assert schema.raw_schema["components"]["securitySchemes"]  # /docs can send the key
    failures, calls, refused = [], 0, set()
    # valid requests (answered, never a 5xx, the answer as described) and invalid ones (refused with a 4xx)
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for operation in schema.get_all_operations():
            operation = operation.ok()

            @settings(max_examples=25, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case):
                nonlocal calls
                calls += 1
                # a SELECT the schema admits may still be refused (a write, a syntax error): 400 is the answer
                excluded = [positive_data_acceptance] if case.path == "/api/sql" else []
                try:
                    case.call_and_validate(headers=service.headers(), timeout=120, excluded_checks=excluded)
                    if mode == GenerationMode.NEGATIVE:
                        refused.add(case.path)
                except Exception as exc:  # noqa: BLE001 - collected, reported together below
                    failures.append(f"{mode.value} {case.method} {case.formatted_path} {json.dumps(case.body)[:200]}"
                                    f": {str(exc)[:400]}")

            try:
                check()
            except Unsatisfiable:  # nothing in the request can be made invalid (health takes no input, an id
                # is any string)
                assert mode == GenerationMode.NEGATIVE and operation.path in (
                    "/api/health", "/api/conversations/{dialogue_id}"), operation.path
    assert calls >= 100 and not failures, "\n".join(failures[:5])
    assert {"/api/search", "/api/ask", "/api/sql"} <= refused  # invalid bodies were sent to every POST route


def chromium(*flags: str):
    """Debian's headless Chromium driven by Selenium (skipped where it is not installed, but not in CI)."""
    import shutil

    binary, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (binary and driver_path):
        assert not os.environ.get("CI"), "CI must run the browser test: .ci/run installs chromium and chromium-driver"
        pytest.skip("needs Debian's chromium and chromium-driver (apt install chromium chromium-driver; .ci/run "
                    "installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as ChromeService

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000", *flags):
        options.add_argument(flag)
    return webdriver.Chrome(service=ChromeService(executable_path=driver_path), options=options)


def test_a_support_engineer_asks_in_the_browser(service, generated_queries):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser = chromium()
    wait = WebDriverWait(browser, 120)
    try:
        browser.get(service.url + "/")
        assert "published state" in wait.until(lambda b: b.find_element(By.ID, "state").text or None)
        browser.find_element(By.ID, "api-key").send_keys(KEY)
        question = next(q for q in generated_queries if len(q["turns"]) == 1)["turns"][0]["text"]
        box = browser.find_element(By.ID, "question")
        box.send_keys(question)
        box.send_keys(Keys.CONTROL, Keys.ENTER)  # the keyboard is enough
        hits = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#hits .hit") or None)
        assert len(hits) == 10
        assert all(h.find_element(By.TAG_NAME, "h3").text for h in hits)
        assert any(h.find_elements(By.CSS_SELECTOR, ".badge.ok") for h in hits)  # "resolved", not "not resolved"

        second = hits[1]
        second_id = second.get_attribute("data-id")
        second.send_keys(Keys.ENTER)  # a focused hit opens on Enter
        opened = wait.until(lambda b: (t := b.find_element(By.ID, "conversation").text) and second_id in t and t)
        assert len(browser.find_elements(By.CSS_SELECTOR, "#conversation .turn")) >= 2
        assert browser.switch_to.active_element.get_attribute("id") == "conv-title"  # the reader is taken there
        assert "channel: " in browser.find_element(By.ID, "conversation-fields").text  # the record's own fields

        browser.find_element(By.ID, "answer-button").send_keys(Keys.ENTER)  # the keyboard again
        links = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#answer .answer a[data-cite]") or None)
        # each fix's outcome label shows, with the conversations it comes from
        labels = browser.find_elements(By.CSS_SELECTOR, "#outcomes .outcome")
        assert labels and all(re.search(r"(confirmed|not_recorded|failed) \(conv-", x.text) for x in labels)
        for n in range(len(links)):  # every citation opens the conversation it cites
            link = browser.find_elements(By.CSS_SELECTOR, "#answer .answer a[data-cite]")[n]
            target = link.get_attribute("data-id")
            link.send_keys(Keys.ENTER)
            wait.until(lambda b: b.find_element(By.ID, "conversation-id").text.startswith(target + " "))
        assert opened

        box.clear()
        box.send_keys("how do I knit a scarf with circular needles", Keys.CONTROL, Keys.ENTER)
        wait.until(lambda b: "weak match" in b.find_element(By.ID, "status").text or None)
        weak = browser.find_elements(By.CSS_SELECTOR, "#hits .hit")
        assert weak and all(h.find_elements(By.CSS_SELECTOR, ".badge.weak") for h in weak)
        assert browser.find_element(By.ID, "answer").text == ""  # the earlier question's answer is gone
        assert browser.find_element(By.ID, "conversation").text.startswith("Select a result")  # and its conversation
        if os.environ.get("README_SCREENSHOT"):  # the README's picture shows the first question again
            box.clear()
            box.send_keys(question, Keys.CONTROL, Keys.ENTER)
            wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#hits .badge.weak")) < len(weak) or None)
            browser.find_element(By.ID, "answer-button").send_keys(Keys.ENTER)
            wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#answer .answer a[data-cite]") or None)
        screenshot = os.environ.get("README_SCREENSHOT")  # not SARAG_*: the home fixture clears those
        if screenshot:  # the README's picture, taken from this home
            browser.find_element(By.ID, "hits").find_elements(By.CSS_SELECTOR, ".hit")[0].click()
            time.sleep(1)
            browser.save_screenshot(screenshot)
    finally:
        browser.quit()


def test_the_api_docs_render_with_the_network_cut_off(service, tmp_path):
    """/docs is Swagger UI from files the service ships, not a CDN: with every host but this one unresolvable,
    the browser still lists the routes."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser = chromium("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
    try:
        with contextlib.suppress(WebDriverException):  # chromedriver raises on some pages that do not load
            browser.get("https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css")
        assert "ERR_NAME_NOT_RESOLVED" in browser.page_source  # the cut is real: a CDN does not answer
        browser.get(service.url + "/docs")
        paths = WebDriverWait(browser, 120).until(
            lambda b: [e.text for e in b.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")] or None)
        assert {"/api/search", "/api/ask", "/api/sql", "/api/health"} <= set(paths)
        assert browser.find_elements(By.CSS_SELECTOR, ".btn.authorize")  # the API key can be given there
        screenshot = Path(os.environ.get("README_SCREENSHOT_DOCS") or tmp_path / "docs.png")
        assert browser.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 10_000
    finally:
        browser.quit()


@pytest.mark.slow
def test_conversation_ids_holding_colons_hashes_and_slashes_open_and_are_cited(home, instance, defs, tmp_path):
    from urllib.parse import quote

    from sarag_assets.core.ingest.landing import copy_into_inbox
    from sarag_assets.orchestration.runner import land_and_process
    from sarag_assets_tests.conftest import write_jsonl

    def fixed(dialogue_id, opening):
        return {"dialogue_id": dialogue_id, "turns": [
            {"speaker": "customer", "text": opening},
            {"speaker": "agent", "text": "Calibrate the ESCs from the app, then restart the drone.", "accepted": True},
            {"speaker": "customer", "text": "That fixed it, thanks!"}]}

    odd = ["ZD:4711", "a#b", "forum/thread/42"]
    write_jsonl(tmp_path / "odd.jsonl", [
        fixed(odd[0], "My Zephyr Z9 drone motors beep three times and it will not arm."),
        fixed(odd[1], "Zephyr Z9: the motors beep three times, then nothing, it won't arm."),
        fixed(odd[2], "The motors of my Zephyr Z9 beep three times and the drone refuses to arm."),
        {"dialogue_id": "plain-1", "turns": [{"speaker": "customer", "text": "How do I change my billing address?"},
                                             {"speaker": "agent", "text": "Under Account, then Billing."}]}])
    copy_into_inbox(home, tmp_path / "odd.jsonl")
    assert not land_and_process(defs, instance).failed
    running = Service(home.root)
    try:
        answer = running.post("/api/ask", {"query": "Zephyr Z9 motors beep three times and it won't arm"}).json()
        assert answer["supported"], answer
        assert set(odd) <= {c["dialogue_id"] for c in answer["citations"]}
        for citation in answer["citations"]:  # what the page opens when a citation is clicked
            opened = running.get("/api/conversations/" + quote(citation["dialogue_id"], safe=""))
            assert opened.status_code == 200 and opened.json()["dialogue_id"] == citation["dialogue_id"]
        assert running.get("/api/conversations/forum/thread/42").json()["dialogue_id"] == "forum/thread/42"
    finally:
        running.stop()


def test_a_busy_port_is_one_line_before_the_model_loads(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = subprocess.run([sys.executable, "-m", "sarag_assets.cli", "serve", "--home", str(tmp_path / "h"),
                                  "--port", str(port)], capture_output=True, text=True, timeout=120)
    assert started.returncode == 2
    assert started.stderr.strip().splitlines() == [
        f"sarag: error: cannot listen on 127.0.0.1:{port}: Address already in use (another `sarag serve`? "
        "choose another --port)"]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_service_leaves_no_process_behind(built_home, stop):
    """systemd and docker stop with SIGTERM: every child process (the SQL workers, multiprocessing's resource
    tracker when there is one) ends with the service (before, they were re-parented to PID 1 and lived on,
    ~200 MB each)."""
    import psutil

    running, children = Service(built_home.root), []
    try:
        assert running.post("/api/sql", {"statement": "SELECT 1 AS one"}).json()["rows"] == [[1]]
        children = psutil.Process(running.process.pid).children(recursive=True)
        commands = [" ".join(child.cmdline()) for child in children]
        assert any("--multiprocessing-fork" in c for c in commands), commands  # the SQL worker(s)
        assert json.loads((built_home.root / "serve.json").read_text())["pid"] == running.process.pid
        running.process.send_signal(stop)
        running.process.wait(timeout=START_GUARD_S)
        assert not (built_home.root / "serve.json").exists()  # the CLI is not sent to a stopped service
        _, alive = psutil.wait_procs(children, timeout=START_GUARD_S)  # only a guard: leaked ones never end
        assert not alive, [" ".join(p.cmdline()) for p in alive]
    finally:
        running.stop()
        for child in children:  # what a failed run left behind
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()


def sarag_cli(*argv: str, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **env,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "sarag_assets.cli", *argv], env=env, capture_output=True, text=True,
                          timeout=START_GUARD_S)


def test_search_and_ask_use_a_service_running_on_the_home(built_home, generated_queries):
    question = next(q for q in generated_queries if len(q["turns"]) == 1)["turns"][0]["text"]
    running = Service(built_home.root, api_key=KEY)
    try:
        for command in ("search", "ask"):
            served = sarag_cli(command, "--home", str(built_home.root), question, SARAG_API_KEY=KEY)
            assert served.returncode == 0, served.stderr
            assert served.stdout.splitlines()[-1].endswith(f"; answered by the sarag serve at {running.url})")
            # without the key the service refuses: the same answer, from this process
            alone = sarag_cli(command, "--home", str(built_home.root), question, SARAG_API_KEY="")
            assert alone.stdout.splitlines()[:-1] == served.stdout.splitlines()[:-1]
            assert "answered by" not in alone.stdout
    finally:
        running.stop()
    after = sarag_cli("search", "--home", str(built_home.root), question, SARAG_API_KEY=KEY)
    assert after.returncode == 0 and "answered by" not in after.stdout  # stopped: answered in process


def test_a_service_file_left_by_a_dead_process_is_not_trusted(tmp_path):
    from sarag_assets.service import discovery

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "serve.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": gone.pid,
                                                      "home": str(tmp_path.resolve())}))
    assert discovery.running_service(tmp_path) is None
    discovery.announce(tmp_path, "http://127.0.0.1:9")  # this process, alive
    assert discovery.running_service(tmp_path) == "http://127.0.0.1:9"
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "serve.json").write_bytes((tmp_path / "serve.json").read_bytes())
    assert discovery.running_service(copy) is None  # a copied home is not the one the service reads
    discovery.withdraw(tmp_path)
    assert not (tmp_path / "serve.json").exists()
