"""The support engineers' page: one HTML document, a little JavaScript, no build step. It talks to the
service's own /api routes; every value shown is inserted as text, never as HTML."""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sarag: has anyone seen this before?</title>
<style>
  :root { --ink:#1d2433; --muted:#5b6475; --line:#d9dee8; --accent:#2457c5; --weak:#9a6700; --ok:#1a7f37;
          --bad:#b42318; --bg:#f6f7fb; }
  * { box-sizing: border-box; }
  body { margin:0; font:15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--ink);
         background:var(--bg); }
  header { background:#fff; border-bottom:1px solid var(--line); padding:12px 24px; display:flex;
           align-items:baseline; gap:16px; }
  header h1 { font-size:18px; margin:0; }
  header .state { color:var(--muted); font-size:13px; margin-left:auto; }
  main { display:grid; grid-template-columns:minmax(0,1fr) minmax(0,1fr); gap:20px; padding:20px 24px;
         max-width:1400px; margin:0 auto; }
  @media (max-width: 900px) { main { grid-template-columns:1fr; } }
  section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:16px; }
  label { font-weight:600; display:block; margin-bottom:6px; }
  textarea { width:100%; min-height:110px; font:inherit; padding:8px; border:1px solid var(--line);
             border-radius:6px; resize:vertical; }
  .hint { color:var(--muted); font-size:13px; margin:6px 0 10px; }
  .row { display:flex; gap:8px; align-items:center; flex-wrap:wrap; }
  button { font:inherit; padding:7px 14px; border-radius:6px; border:1px solid var(--accent);
           background:var(--accent); color:#fff; cursor:pointer; }
  button.secondary { background:#fff; color:var(--accent); }
  button:focus-visible, a:focus-visible, .hit:focus-visible { outline:3px solid #f5b700; outline-offset:2px; }
  input[type=password] { font:inherit; padding:6px; border:1px solid var(--line); border-radius:6px; }
  ol.hits { list-style:none; padding:0; margin:12px 0 0; }
  .hit { border:1px solid var(--line); border-radius:8px; padding:10px 12px; margin-bottom:10px; cursor:pointer; }
  .hit:hover { border-color:var(--accent); }
  .hit.selected { border-color:var(--accent); box-shadow:0 0 0 1px var(--accent); }
  .hit h3 { font-size:15px; margin:0 0 4px; }
  .meta { color:var(--muted); font-size:13px; }
  .badge { display:inline-block; font-size:12px; padding:1px 7px; border-radius:10px; margin-right:6px;
           border:1px solid currentColor; }
  .badge.ok { color:var(--ok); } .badge.open { color:var(--muted); } .badge.weak { color:var(--weak); }
  .fix { margin:4px 0; } .fix b { font-weight:600; }
  .matched { font-size:13px; color:var(--accent); }
  .answer { white-space:pre-wrap; background:#f2f5fc; border-radius:6px; padding:10px; margin-top:10px; }
  .turn { margin:8px 0; padding:8px 10px; border-radius:8px; max-width:92%; white-space:pre-wrap; }
  .turn.user { background:#eef2ff; } .turn.agent { background:#eefaf1; margin-left:auto; }
  .turn .who { font-size:12px; color:var(--muted); display:block; }
  .error { color:var(--bad); }
  .empty { color:var(--muted); }
</style>
</head>
<body>
<header><h1>sarag</h1><span>has anyone seen this before, and what fixed it?</span>
  <span class="state" id="state" aria-live="polite"></span></header>
<main>
  <section aria-labelledby="ask-label">
    <form id="ask-form">
      <label id="ask-label" for="question">Question or conversation</label>
      <textarea id="question" name="question" autofocus
        placeholder="My Helix VPN keeps disconnecting every few minutes"></textarea>
      <p class="hint">Paste a question, or a whole conversation as lines of <code>speaker: text</code>
        (the last line is what is asked now). Ctrl+Enter searches.</p>
      <div class="row">
        <button type="submit" id="search-button">Search</button>
        <button type="button" class="secondary" id="answer-button">Answer with citations</button>
        <span id="key-box" hidden><label for="api-key" style="display:inline">API key</label>
          <input type="password" id="api-key" autocomplete="off"></span>
      </div>
    </form>
    <div id="answer" aria-live="polite"></div>
    <div id="status" class="meta" aria-live="polite"></div>
    <ol class="hits" id="hits" aria-label="similar past conversations"></ol>
  </section>
  <section aria-labelledby="conv-title">
    <h2 id="conv-title" tabindex="-1" style="font-size:16px;margin-top:0">Conversation</h2>
    <div id="conversation" class="empty">Select a result to read its conversation (redacted).</div>
  </section>
</main>
<script>
const AUTH = __AUTH__;
const $ = (id) => document.getElementById(id);
if (AUTH) { $("key-box").hidden = false; $("api-key").value = sessionStorage.getItem("sarag-key") || ""; }

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

function readInput() {
  const text = $("question").value.trim();
  const lines = text.split(/\\n+/).map((l) => l.trim()).filter(Boolean);
  const turns = lines.map((l) => /^([^:]{1,40}):\\s+(.+)$/.exec(l)).filter(Boolean);
  if (lines.length > 1 && turns.length === lines.length)
    return { query: turns.map((m) => ({ speaker: m[1], text: m[2] })) };
  return { query: text };
}

async function api(path, body) {
  const headers = { "Content-Type": "application/json" };
  if (AUTH) { const key = $("api-key").value; sessionStorage.setItem("sarag-key", key); headers["X-API-Key"] = key; }
  const response = await fetch(path, body === undefined ? { headers } :
                               { method: "POST", headers, body: JSON.stringify(body) });
  const data = await response.json().catch(() => ({ detail: response.statusText }));
  if (!response.ok) throw new Error(typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail));
  return data;
}

const CONVERSATION_HINT = $("conversation").textContent;

function showState(id) { $("state").textContent = id ? "published state " + id : ""; }

function date(value) { return value ? new Date(value).toLocaleDateString() : null; }

// the conversation's own first time when the source gives one, else the day it landed, said as such
function when(c) { return c.started_at ? date(c.started_at) : c.landed_at ? "landed " + date(c.landed_at) : null; }

function citeLink(citation) {
  return el("a", { href: "#" + encodeURIComponent(citation.dialogue_id), "data-cite": citation.id,
                   "data-id": citation.dialogue_id,
                   onclick: (e) => { e.preventDefault(); openConversation(citation.dialogue_id); } }, citation.id);
}

// the answer's text, each id of its [citations] that the answer cites a link to its conversation; other
// bracketed text (a redaction placeholder such as [EMAIL]) stays text
function withCitations(text, citations) {
  const byId = new Map(citations.map((c) => [c.id, c]));
  const nodes = []; let last = 0;
  for (const m of text.matchAll(/\\[([^\\[\\]]+)\\]/g)) {
    const ids = m[1].split(",").map((id) => id.trim());
    if (!ids.every((id) => byId.has(id))) continue;
    nodes.push(text.slice(last, m.index), "[");
    ids.forEach((id, i) => { if (i) nodes.push(", "); nodes.push(citeLink(byId.get(id))); });
    nodes.push("]"); last = m.index + m[0].length;
  }
  nodes.push(text.slice(last));
  return nodes;
}

function renderHit(hit) {
  const badges = el("div", {},
    hit.resolved === true ? el("span", { class: "badge ok" }, "resolved") :
      hit.resolved === false ? el("span", { class: "badge open" }, "not resolved") :
      el("span", { class: "badge open" }, "outcome unknown"),
    hit.weak ? el("span", { class: "badge weak", title: "does not stand out from the other conversations" },
                  "weak match") : null);
  const where = [hit.source_file, when(hit)].filter(Boolean).join(" · ");
  const item = el("li", { class: "hit", tabindex: "0", role: "button", "data-id": hit.dialogue_id,
                          "aria-label": "open conversation " + hit.dialogue_id },
    el("h3", {}, hit.rank + ". " + (hit.problem || hit.dialogue_id)),
    badges,
    hit.resolution ? el("p", { class: "fix" },
      el("b", {}, hit.resolved === true ? "Fix that worked: " : "Suggested, not confirmed: "), hit.resolution) :
      el("p", { class: "fix meta" }, "No fix recorded."),
    hit.matched.length ? el("div", { class: "matched" },
      "matched " + hit.matched.map((m) => m.column + " = " + m.value).join(", ")) : null,
    el("div", { class: "meta" }, hit.dialogue_id + (where ? " · " + where : "")));
  const open = () => openConversation(hit.dialogue_id);
  item.addEventListener("click", open);
  item.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } });
  return item;
}

async function search(keepAnswer) {
  const input = readInput();
  if (!input.query.length) { $("question").focus(); return; }
  if (!keepAnswer) {  // an answer, and the conversation opened, belong to the question asked before
    $("answer").replaceChildren();
    $("conversation").className = "empty";
    $("conversation").replaceChildren(CONVERSATION_HINT);
  }
  $("status").textContent = "Searching…"; $("status").className = "meta";
  try {
    const data = await api("/api/search", { ...input, k: 10 });
    showState(data.published_state);
    const list = $("hits"); list.replaceChildren(...data.hits.map(renderHit));
    const weak = data.hits.length && data.hits.every((h) => h.weak);
    $("status").textContent = data.hits.length === 0 ? "No similar conversation." :
      (weak ? "Nothing matches well: every result is a weak match." : data.hits.length + " similar conversations.");
    for (const note of data.notes) $("status").append(el("div", {}, note));
  } catch (error) { $("status").textContent = error.message; $("status").className = "error"; }
}

async function answer() {
  const input = readInput();
  if (!input.query.length) { $("question").focus(); return; }
  const box = $("answer"); box.replaceChildren(el("p", { class: "meta" }, "Answering…"));
  try {
    const data = await api("/api/ask", { ...input, k: 5 });
    showState(data.published_state);
    const cites = el("div", { class: "meta" }, data.citations.length ? "Evidence: " : "No evidence cited.");
    data.citations.forEach((c, i) => { if (i) cites.append(", "); cites.append(citeLink(c)); });
    const outcomes = el("div", { class: "meta", id: "outcomes" }, ...(data.fixes || []).map((f, i) =>
      el("span", { class: "outcome " + f.outcome }, (i ? " · " : "Fixes: ") + f.outcome + " (" + f.dialogue_ids.join(", ") + ")")));
    box.replaceChildren(el("div", { class: "answer" }, ...withCitations(data.answer, data.citations), outcomes,
      el("div", { class: "meta" }, data.supported ? "Every statement is backed by the cited evidence." :
                                              "The evidence does not answer this.")), cites);
    search(true);
  } catch (error) { box.replaceChildren(el("p", { class: "error" }, error.message)); }
}

async function openConversation(id) {
  document.querySelectorAll(".hit").forEach((h) => h.classList.toggle("selected", h.dataset.id === id));
  const box = $("conversation"); box.className = ""; box.replaceChildren(el("p", { class: "meta" }, "Loading…"));
  try {
    const c = await api("/api/conversations/" + encodeURIComponent(id));
    const where = [c.source_file, c.source_format, when(c)].filter(Boolean);
    box.replaceChildren(
      el("p", { class: "meta", id: "conversation-id" }, c.dialogue_id + " · " + where.join(" · ")),
      el("p", { class: "meta", id: "conversation-fields" },
         Object.entries(c.fields || {}).map(([name, value]) => name + ": " + value).join(" · ")),
      ...c.turns.map((t) => el("div", { class: "turn " + (t.role === "user" ? "user" : "agent") },
                               el("span", { class: "who" }, t.speaker + " (" + t.role + ")"
                                  + (t.accepted ? " \u00b7 accepted answer" : "")), t.text)));
    $("conv-title").focus?.();
  } catch (error) { box.replaceChildren(el("p", { class: "error" }, error.message)); }
}

$("ask-form").addEventListener("submit", (e) => { e.preventDefault(); search(false); });
$("answer-button").addEventListener("click", answer);
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); search(false); }
});
api("/api/health").then((h) => showState(h.published_state)).catch(() => showState(null));
</script>
</body>
</html>
"""
