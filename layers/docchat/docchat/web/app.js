// docchat's page: plain JavaScript, no build step. The API keeps no state, so the conversation
// lives here and is sent whole with every question. Every text from the server or a document is
// put in the page with textContent, never as HTML.
"use strict";

const MAX_MESSAGES = 50;
const MAX_MESSAGE_CHARS = 20000;
const MAX_TOTAL_CHARS = 90000; // the API takes 100 000; leave room
const POLL_BUSY_MS = 1000;
const POLL_IDLE_MS = 30000;
const FINAL = new Set(["INDEXED", "FAILED"]);

const state = {
  config: { upload: "none", max_upload_bytes: 0, answers: "" },
  messages: [], // {role, content}
  docs: [],
  uploading: new Map(), // local key -> file name, while the bytes travel
  awaiting: new Map(), // doc_id -> file name: in S3, waiting for the pipeline to register it
  deleting: new Set(),
  running: null, // {controller, view} while an answer streams
  loaded: Promise.resolve(), // the config and the saved conversations read: a chat waits for it
  conversation: 0, // bumped by "new conversation", so a late answer cannot join the next one
  pollTimer: 0,
};

const $ = (id) => document.getElementById(id);

// Where saved conversations (conversations.js) join in: what a chat sends, when an answer is
// finished, when the page starts a new conversation, and once the page may call the API.
const chatHooks = {
  body: (body) => body,
  answered: () => {},
  cleared: () => {},
  ready: () => {},
};

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else if (value !== false && value != null) node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c != null));
  return node;
}

function announce(text) {
  const region = $("announce");
  region.textContent = "";
  // A fresh text node after a tick makes screen readers read a repeated message again.
  setTimeout(() => { region.textContent = text; }, 50);
}

async function errorText(response) {
  try {
    const body = await response.json();
    if (body && body.error && body.error.message) return body.error.message;
  } catch (_) { /* not JSON */ }
  return `the server answered HTTP ${response.status}`;
}

// `docchat serve --token`: every API call carries the server's token. The page asks for it
// once, when the server first answers with its own 401, and keeps it in this browser.
const TOKEN_KEY = "docchat-api-token";
const TOKEN_CHALLENGE = 'realm="docchat-serve"';

function challenged(response) {
  return response.status === 401 && (response.headers.get("WWW-Authenticate") || "").includes(TOKEN_CHALLENGE);
}

function tokenHeaders(refused = null) {
  if (refused && challenged(refused)) {
    const given = window.prompt("This docchat server needs its API token (the one given to docchat serve):");
    if (given) localStorage.setItem(TOKEN_KEY, given.trim());
  }
  const token = localStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}

// --- Server-Sent Events over fetch (EventSource cannot POST) -------------------------------

async function* sseEvents(response, signal) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      let type = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { type, data: JSON.parse(data.join("\n")) };
    }
  }
}

// --- the conversation -------------------------------------------------------------------------

function recentMessages() {
  // The newest messages that fit the API's limits, oldest first.
  const kept = [];
  let total = 0;
  for (let i = state.messages.length - 1; i >= 0; i -= 1) {
    const content = state.messages[i].content.slice(0, MAX_MESSAGE_CHARS);
    if (kept.length === MAX_MESSAGES || (kept.length && total + content.length > MAX_TOTAL_CHARS)) break;
    total += content.length;
    kept.unshift({ role: state.messages[i].role, content });
  }
  while (kept.length > 1 && kept[0].role !== "user") kept.shift();
  return kept;
}

function scrollToEnd(force = false) {
  const transcript = $("transcript");
  const near = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 120;
  if (force || near) transcript.scrollTop = transcript.scrollHeight;
}

function showWelcome(visible) {
  $("welcome").hidden = !visible;
}

function addUserMessage(text) {
  showWelcome(false);
  const article = el("article", { class: "msg user" },
    el("h3", { class: "visually-hidden", text: "You said" }),
    el("p", { class: "text", text }));
  $("transcript").append(article);
  scrollToEnd(true);
}

class AnswerView {
  constructor() {
    this.text = "";
    this.citations = [];
    this.searches = 0;
    this.steps = el("ol", { class: "step-list" });
    this.stepsSummary = el("summary", { text: "Working…" });
    this.stepsBox = el("details", { class: "steps", open: true }, this.stepsSummary, this.steps);
    this.typing = el("div", { class: "typing", role: "img", "aria-label": "docchat is writing" },
      el("span"), el("span"), el("span"));
    this.answer = el("div", { class: "answer" });
    this.chips = el("div", { class: "chips", role: "group", "aria-label": "Sources" });
    this.chips.hidden = true;
    this.quote = el("figure", { class: "quote", id: `quote-${crypto.randomUUID()}` });
    this.quote.hidden = true;
    this.footer = el("div", { class: "msg-footer" });
    this.root = el("article", { class: "msg assistant", "aria-busy": "true" },
      el("h3", { class: "visually-hidden", text: "docchat answered" }),
      this.stepsBox, this.typing, this.answer, this.chips, this.quote, this.footer);
    $("transcript").append(this.root);
    scrollToEnd(true);
  }

  step(text, kind = "") {
    this.steps.append(el("li", { class: kind, text }));
    this.stepsSummary.textContent = text;
    scrollToEnd();
  }

  setTyping(on) {
    this.typing.hidden = !on;
  }

  delta(text) {
    this.setTyping(false);
    this.text += text;
    this.answer.append(document.createTextNode(text));
    scrollToEnd();
  }

  finish(citations) {
    this.citations = citations;
    this.setTyping(false);
    this.root.setAttribute("aria-busy", "false");
    this.stepsBox.open = false;
    const found = this.searches === 1 ? "1 search" : `${this.searches} searches`;
    this.stepsSummary.textContent = this.searches
      ? `${found} · ${citations.length} cited ${citations.length === 1 ? "passage" : "passages"}`
      : "Answered";
    this.renderAnswer();
    this.renderChips();
    this.footer.replaceChildren(answerTools(this, () => retryAnswer(this)));
  }

  byNumber(number) {
    return this.citations.find((c) => c.number === number);
  }

  renderAnswer() {
    // Citation markers like [2] or [1, 3] become buttons that open the quoted passage.
    const parts = this.text.split(/(\[\d+(?:\s*,\s*\d+)*\])/);
    const nodes = parts.map((part) => {
      const numbers = /^\[(.+)\]$/.exec(part);
      if (!numbers) return document.createTextNode(part);
      const cited = numbers[1].split(",").map((n) => Number(n.trim())).filter((n) => this.byNumber(n));
      if (!cited.length) return document.createTextNode(part);
      return el("span", { class: "markers" },
        ...cited.map((n) => this.citationButton(this.byNumber(n), `${n}`, "marker")));
    });
    this.answer.replaceChildren(...nodes);
  }

  renderChips() {
    if (!this.citations.length) return;
    this.chips.replaceChildren(el("span", { class: "chips-label", text: "Sources" }),
      ...this.citations.map((c) => this.citationButton(c, null, "chip")));
    this.chips.hidden = false;
  }

  citationButton(citation, label, kind) {
    const where = `${citation.title}, page ${citation.page}`;
    const button = el("button", {
      type: "button",
      class: kind,
      "data-number": citation.number,
      "aria-expanded": "false",
      "aria-controls": this.quote.id,
      // A bare number says nothing to a screen reader; a chip's own text names the source.
      "aria-label": label ? `Source ${citation.number}: ${where}` : null,
      title: where,
      onclick: () => this.openCitation(citation, button),
    });
    if (label) button.textContent = label;
    else button.append(el("span", { class: "chip-number", text: citation.number }),
      el("span", { class: "chip-title", text: citation.title }),
      el("span", { class: "chip-page", text: `p. ${citation.page}` }));
    return button;
  }

  openCitation(citation, button) {
    // The quote shows under the answer, and the document opens at it (viewer.js).
    if (this.quote.hidden || this.quote.dataset.number !== String(citation.number)) this.toggleQuote(citation, button);
    openViewer(citation, button);
  }

  toggleQuote(citation, button) {
    const open = !this.quote.hidden && this.quote.dataset.number === String(citation.number);
    for (const b of this.root.querySelectorAll("[aria-controls]")) b.setAttribute("aria-expanded", "false");
    if (open) {
      this.quote.hidden = true;
      return;
    }
    const close = el("button", { type: "button", class: "quote-close", "aria-label": "Close the passage",
      text: "×", onclick: () => { this.quote.hidden = true; button.setAttribute("aria-expanded", "false"); button.focus(); } });
    this.quote.dataset.number = String(citation.number);
    this.quote.replaceChildren(
      close,
      el("blockquote", { text: citation.quote }),
      el("figcaption", {},
        el("span", { class: "quote-number", text: `[${citation.number}] ` }),
        el("cite", { text: citation.title }),
        el("span", { class: "quote-page", text: ` · page ${citation.page}` }),
        citation.source ? el("span", { class: "quote-source", text: ` · ${fileName(citation.source)}` }) : null));
    this.quote.hidden = false;
    for (const b of this.root.querySelectorAll(`[data-number="${citation.number}"]`)) {
      b.setAttribute("aria-expanded", "true");
    }
    this.quote.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  fail(message, retry) {
    this.setTyping(false);
    this.root.setAttribute("aria-busy", "false");
    this.root.classList.add("failed");
    this.stepsBox.open = false;
    this.stepsSummary.textContent = "The answer failed";
    const button = el("button", { type: "button", class: "button retry", text: "Retry", onclick: retry });
    this.footer.replaceChildren(el("div", { class: "alert", role: "alert" },
      el("strong", { text: "Something went wrong. " }), el("span", { class: "error-text", text: message }), button));
    scrollToEnd(true);
    return button;
  }

  stopped() {
    this.setTyping(false);
    this.root.setAttribute("aria-busy", "false");
    this.stepsBox.open = false;
    this.footer.replaceChildren(el("p", { class: "note", text: "Stopped." }), answerTools(this, () => retryAnswer(this)));
  }
}

function unreachable(error) {
  // fetch rejects with a TypeError ("Failed to fetch") when no HTTP answer came at all.
  return error instanceof TypeError && /fetch|network/i.test(error.message);
}

function fileName(source) {
  return source.split(/[\\/]/).pop();
}

function docTitle(doc) {
  return doc.title || fileName(doc.source);
}

function describeTool(call) {
  const input = call.input || {};
  if (call.name === "search_documents") return `Searching the documents for “${input.query || ""}”`;
  if (call.name === "read_pages") return `Reading pages ${input.first_page}–${input.last_page} of ${input.doc_id}`;
  if (call.name === "list_documents") return "Listing the documents";
  return `Using ${call.name}`;
}

function describeSources(data) {
  const passages = data.passages || [];
  if (!passages.length) return "No passage matched";
  const titles = [...new Set(passages.map((p) => p.title))];
  const pages = [...new Set(passages.map((p) => p.page_start))].sort((a, b) => a - b);
  const noun = passages.length === 1 ? "passage" : "passages";
  return `Found ${passages.length} ${noun} in ${titles.join(", ")} (pages ${pages.join(", ")})`;
}

function setRunning(running) {
  const send = $("send");
  send.textContent = running ? "Stop" : "Send";
  send.classList.toggle("stop", Boolean(running));
  send.setAttribute("aria-label", running ? "Stop the answer" : "Send the question");
}

function retryAnswer(view) {
  // The same question again, in place of this answer (only the newest answer has the button).
  if (state.running || !view.root.isConnected) return;
  if (state.messages.length && state.messages[state.messages.length - 1].role === "assistant") state.messages.pop();
  if (!state.messages.length || state.messages[state.messages.length - 1].content !== view.question) {
    state.messages.push({ role: "user", content: view.question });
  }
  view.root.remove();
  runAnswer();
}

async function runAnswer() {
  for (const old of document.querySelectorAll(".answer-tools .retry")) old.remove();
  const view = new AnswerView();
  view.question = state.messages[state.messages.length - 1].content;
  const controller = new AbortController();
  const conversation = state.conversation;
  state.running = { controller, view };
  setRunning(true);
  announce("Searching the documents…");
  let finished = false;
  try {
    // A question asked before the page has read the saved conversations would not be saved.
    await state.loaded;
    const response = await api("chat", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(chatHooks.body({ messages: recentMessages() })),
      signal: controller.signal,
    });
    if (!response.ok) throw new Error(await errorText(response));
    for await (const event of sseEvents(response, controller.signal)) {
      finished = handleEvent(view, event) || finished;
    }
    if (!finished) throw new Error("the connection closed before the answer was complete.");
    state.messages.push({ role: "assistant", content: view.text || "(no answer)" });
    chatHooks.answered();
    announce(`Answer complete${view.citations.length ? `, with ${view.citations.length} sources` : ""}.`);
  } catch (error) {
    if (conversation !== state.conversation) {
      // "New conversation" ended this answer; nothing of it belongs to the new one.
    } else if (controller.signal.aborted) {
      view.stopped();
      if (view.text) state.messages.push({ role: "assistant", content: view.text });
      else state.messages.pop();
    } else {
      const message = unreachable(error) ? "the server could not be reached. Check your connection and retry." : error.message;
      const retry = view.fail(message, () => {
        view.root.remove();
        runAnswer();
      });
      announce(`The answer failed: ${message}`);
      retry.focus();
    }
  } finally {
    if (state.running && state.running.controller === controller) state.running = null;
    setRunning(false);
  }
}

// One handler per chat event of docchat/answer/events.py, given its data; `done` returns true.
// tests/unit/test_events.py fails when an event type has no handler here, and
// tests/web/test_page_events.py when a field read here is not in what the server sends.
const EVENT_HANDLERS = {
  status(view, data) {
    if (data.stage === "waking_index") view.step(data.message);
    else view.step(data.mode === "extractive" ? "Looking for passages (no language model: answers quote the documents)" : "Thinking…");
  },
  tool_call(view, data) {
    if (data.name === "search_documents") view.searches += 1;
    view.setTyping(true);
    view.step(describeTool(data));
  },
  sources(view, data) {
    view.step(describeSources(data), "found");
  },
  delta(view, data) {
    view.delta(data.text);
  },
  citations(view, data) {
    view.pendingCitations = data.citations || [];
  },
  error(view, data) {
    throw new Error(data.message || "the answer failed.");
  },
  done(view) {
    view.finish(view.pendingCitations || []);
    return true;
  },
};

function handleEvent(view, event) {
  // An event type this page does not know is skipped: a newer server must not break it.
  const handler = Object.hasOwn(EVENT_HANDLERS, event.type) ? EVENT_HANDLERS[event.type] : null;
  return handler ? handler(view, event.data) === true : false;
}

function ask(question) {
  const text = question.trim();
  if (!text || state.running) return;
  // A question that failed and was not retried is dropped: the API wants turns to alternate.
  if (state.messages.length && state.messages[state.messages.length - 1].role === "user") {
    state.messages.pop();
    for (const old of document.querySelectorAll(".msg.failed .retry")) old.disabled = true;
  }
  state.messages.push({ role: "user", content: text });
  addUserMessage(text);
  runAnswer();
}

function clearTranscript() {
  state.conversation += 1;
  if (state.running) state.running.controller.abort();
  state.messages = [];
  for (const message of $("transcript").querySelectorAll(".msg")) message.remove();
}

function restoreMessages(messages) {
  // A saved conversation ({role, content, citations}) back in the transcript, as it was answered.
  clearTranscript();
  showWelcome(!messages.length);
  let question = "";
  for (const message of messages) {
    state.messages.push({ role: message.role, content: message.content });
    if (message.role === "user") {
      addUserMessage(message.content);
      question = message.content;
      continue;
    }
    const view = new AnswerView();
    view.question = question;
    view.stepsBox.hidden = true;
    view.delta(message.content);
    view.finish(message.citations || []);
    if (message.stopped) view.stopped();
  }
  // Retry asks the newest question again; older answers have no Retry, as while chatting.
  const retries = [...$("transcript").querySelectorAll(".answer-tools .retry")];
  for (const old of retries.slice(0, -1)) old.remove();
  if (!messages.length) renderSuggestions();
  scrollToEnd(true);
}

function newConversation() {
  clearTranscript();
  chatHooks.cleared();
  showWelcome(true);
  renderSuggestions();
  const question = $("question");
  question.value = "";
  autosize(question);
  question.focus();
  announce("New conversation started.");
}

// --- suggested questions from the document titles ----------------------------------------------

function suggestionsFor(titles) {
  const quoted = titles.map((t) => `“${t}”`);
  if (!titles.length) return [];
  if (titles.length === 1) {
    return [
      `What is ${quoted[0]} about?`,
      `What are the key points of ${quoted[0]}?`,
      `What does ${quoted[0]} say about exceptions?`,
    ];
  }
  const perTitle = quoted.slice(0, 3).map((t) => `What is ${t} about?`);
  return [...perTitle, `How do ${quoted[0]} and ${quoted[1]} differ?`].slice(0, 4);
}

function renderSuggestions() {
  const titles = [...new Set(state.docs.filter((d) => d.status === "INDEXED").map(docTitle))];
  const box = $("suggestions");
  const questions = suggestionsFor(titles);
  if (!questions.length) {
    const hint = state.config.upload === "none"
      ? "No document is indexed yet: add some with `docchat ingest`."
      : "No document is indexed yet: upload a PDF in the documents panel.";
    box.replaceChildren(el("p", { class: "note", text: hint }));
    return;
  }
  const current = [...box.querySelectorAll("button")].map((b) => b.textContent).join("|");
  if (current === questions.join("|")) return;
  box.replaceChildren(...questions.map((q) => el("button", {
    type: "button", class: "suggestion", text: q, onclick: () => ask(q),
  })));
}

// --- documents --------------------------------------------------------------------------------

const STATUS_TEXT = {
  UPLOADING: "Uploading…",
  AWAITING: "Uploaded, waiting for the pipeline…",
  QUEUED: "Queued",
  CONVERTING: "Reading the PDF…",
  CHUNKING: "Splitting into passages…",
  EMBEDDING: "Embedding…",
  INDEXING: "Indexing…",
  INDEXED: "Ready",
  FAILED: "Failed",
  DELETING: "Deleting…",
};

function docRow(doc) {
  const row = el("li", { class: "doc", "data-doc-id": doc.doc_id });
  row.append(
    el("div", { class: "doc-main" },
      el("span", { class: "doc-title" }),
      el("span", { class: "doc-sub" }, el("span", { class: "badge" }), el("span", { class: "doc-meta" })),
      el("p", { class: "doc-error" })));
  if (doc.deletable) {
    row.append(el("button", {
      type: "button", class: "icon-button delete", "aria-label": `Delete ${doc.title}`,
      title: "Delete", onclick: () => removeDocument(doc.doc_id),
    }, trashIcon()));
  }
  return row;
}

function trashIcon() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "16");
  svg.setAttribute("height", "16");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", "M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3");
  path.setAttribute("fill", "none");
  path.setAttribute("stroke", "currentColor");
  path.setAttribute("stroke-width", "2");
  path.setAttribute("stroke-linecap", "round");
  path.setAttribute("stroke-linejoin", "round");
  svg.append(path);
  return svg;
}

function updateRow(row, doc) {
  const status = doc.status;
  row.dataset.status = status;
  row.querySelector(".doc-title").textContent = doc.title;
  const meta = [];
  // The file's name is always beside the title: a title alone may be shared or generic.
  if (doc.name) meta.push(doc.name);
  if (doc.pages) meta.push(`${doc.pages} ${doc.pages === 1 ? "page" : "pages"}`);
  // The same name uploaded again replaces the document's content: say which upload this is.
  if (doc.revision > 1) meta.push(`revision ${doc.revision}`);
  row.querySelector(".doc-meta").textContent = meta.join(" · ");
  const badge = row.querySelector(".badge");
  badge.textContent = status;
  badge.title = STATUS_TEXT[status] || status;
  badge.className = `badge status-${status.toLowerCase()}${FINAL.has(status) ? "" : " busy"}`;
  const error = row.querySelector(".doc-error");
  error.textContent = status === "FAILED" ? doc.error || "indexing failed" : "";
  error.hidden = status !== "FAILED";
}

function rowsToShow() {
  const rows = state.docs.map((d) => ({
    doc_id: d.doc_id,
    title: docTitle(d),
    name: d.file_name || fileName(d.source),
    pages: d.pages,
    revision: d.revision,
    status: state.deleting.has(d.doc_id) ? "DELETING" : d.status,
    error: d.error,
    deletable: state.config.upload !== "none",
  }));
  const known = new Set(state.docs.map((d) => d.doc_id));
  for (const [docId, name] of state.awaiting) {
    if (!known.has(docId)) rows.push({ doc_id: docId, title: name, name, status: "AWAITING" });
  }
  for (const [key, name] of state.uploading) rows.push({ doc_id: key, title: name, name, status: "UPLOADING" });
  return rows;
}

function renderDocs() {
  const list = $("doc-list");
  const rows = rowsToShow();
  const existing = new Map([...list.children].map((li) => [li.dataset.docId, li]));
  let cursor = list.firstElementChild;
  for (const doc of rows) {
    let row = existing.get(doc.doc_id);
    if (!row || Boolean(row.querySelector(".delete")) !== Boolean(doc.deletable)) {
      if (row) row.remove();
      row = docRow(doc);
    }
    existing.delete(doc.doc_id);
    updateRow(row, doc);
    if (row !== cursor) list.insertBefore(row, cursor);
    else cursor = cursor.nextElementSibling;
  }
  for (const stale of existing.values()) stale.remove();
  $("docs-empty").hidden = rows.length > 0;
  const ready = state.docs.filter((d) => d.status === "INDEXED").length;
  $("docs-count").textContent = `(${ready})`;
}

async function refreshDocs() {
  clearTimeout(state.pollTimer);
  try {
    const response = await api("documents", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(await errorText(response));
    const body = await response.json();
    state.docs = body.documents;
    for (const doc of state.docs) state.awaiting.delete(doc.doc_id);
    const present = new Set(state.docs.map((d) => d.doc_id));
    for (const docId of state.deleting) if (!present.has(docId)) state.deleting.delete(docId);
    $("docs-error").hidden = true;
  } catch (error) {
    if (error instanceof SignInRequired) return;
    $("docs-error").textContent = `Could not load the documents: ${error.message}`;
    $("docs-error").hidden = false;
  }
  renderDocs();
  if (!state.messages.length) renderSuggestions();
  const busy = state.docs.some((d) => !FINAL.has(d.status)) || state.awaiting.size || state.deleting.size;
  state.pollTimer = setTimeout(refreshDocs, busy ? POLL_BUSY_MS : POLL_IDLE_MS);
}

function showUploadError(text) {
  const box = $("upload-error");
  box.textContent = text;
  box.hidden = !text;
}

async function uploadFile(file) {
  const key = `upload-${crypto.randomUUID()}`;
  state.uploading.set(key, file.name);
  renderDocs();
  try {
    const limit = state.config.max_upload_bytes;
    if (limit && file.size > limit) {
      throw new Error(`the file is larger than the ${Math.round(limit / 1048576)} MB an upload may have`);
    }
    if (state.config.upload === "presigned") await uploadToBucket(file);
    else await uploadDirect(file);
    announce(`${file.name} uploaded; indexing has started.`);
  } catch (error) {
    const message = unreachable(error) ? "the server could not be reached" : error.message;
    showUploadError(`Could not upload ${file.name}: ${message}`);
  } finally {
    state.uploading.delete(key);
    await refreshDocs();
  }
}

async function uploadDirect(file) {
  const response = await api(`documents?filename=${encodeURIComponent(file.name)}`, {
    method: "POST",
    headers: { "Content-Type": "application/pdf" },
    body: file,
  });
  if (!response.ok) throw new Error(await errorText(response));
}

async function uploadToBucket(file) {
  const response = await api("documents/upload-url", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ filename: file.name, size: file.size }),
  });
  if (!response.ok) throw new Error(await errorText(response));
  const ticket = await response.json();
  const put = await fetch(ticket.url, { method: ticket.method, headers: ticket.headers, body: file });
  if (!put.ok) throw new Error(`the bucket refused the file (HTTP ${put.status})`);
  state.awaiting.set(ticket.doc_id, file.name);
}

async function removeDocument(docId) {
  const doc = state.docs.find((d) => d.doc_id === docId);
  const title = doc ? docTitle(doc) : docId;
  if (!window.confirm(`Delete “${title}”? It will no longer be searched.`)) return;
  state.deleting.add(docId);
  renderDocs();
  try {
    const response = await api(`documents/${encodeURIComponent(docId)}`, { method: "DELETE" });
    if (!response.ok) throw new Error(await errorText(response));
    announce(`${title} deleted.`);
  } catch (error) {
    state.deleting.delete(docId);
    showUploadError(`Could not delete ${title}: ${error.message}`);
  }
  await refreshDocs();
  $("question").focus();
}

// --- sign-in (Cognito managed login, authorization code with PKCE) ----------------------------
// In the cloud stack every API route needs a Cognito ID token (the API Gateway authorizer has no
// OAuth scopes on its methods, so it takes the ID token). The page, its files and auth-config are
// open. Tokens live in sessionStorage: the sign-in redirect leaves the page, so the PKCE verifier
// must outlive it anyway, and a reload should not bounce through the sign-in page again; the
// storage belongs to this tab and origin only and ends with the tab. The page loads no third-party
// script and puts every server text in with textContent, which is what keeps them from other code.

const TOKENS_KEY = "docchat.tokens";
const PENDING_KEY = "docchat.signin";

const auth = { mode: "none", config: {}, tokens: null, refreshing: null };

class SignInRequired extends Error {
  constructor() {
    super("you are signed out: sign in again, then retry");
  }
}

function pageUrl() {
  // The page's own address without query or fragment: the client's callback and sign-out URL.
  return new URL(".", location.href).href;
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function tokenClaims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(part), (c) => c.charCodeAt(0))));
  } catch (_) {
    return {};
  }
}

async function signIn() {
  // RFC 7636: a verifier of 43-128 characters, its SHA-256 as the challenge; `state` ties the
  // answer to this request.
  const verifier = randomText(48);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const state = randomText(16);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ state, verifier }));
  const url = new URL(`${auth.config.domain}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: auth.config.client_id,
    redirect_uri: pageUrl(),
    scope: auth.config.scopes,
    state,
    code_challenge: base64url(digest),
    code_challenge_method: "S256",
  });
  location.assign(url.href);
}

async function tokenRequest(fields) {
  const response = await fetch(`${auth.config.domain}/oauth2/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.error_description || body.error || `the sign-in service answered HTTP ${response.status}`);
    // OAuth errors (invalid_grant...) come as HTTP 400 and are final; anything else may pass.
    error.refused = response.status === 400;
    throw error;
  }
  return body;
}

async function renewed() {
  // A refresh Cognito refuses ends the session; an outage or a network failure is only reported.
  try {
    await refreshTokens();
  } catch (error) {
    throw error.refused || error instanceof SignInRequired ? sessionEnded() : error;
  }
}

function keepTokens(body, refreshToken) {
  const lifetime = Number(body.expires_in || 3600) * 1000;
  // A refresh answers with new ID and access tokens only; the refresh token stays the same.
  auth.tokens = {
    id: body.id_token,
    refresh: body.refresh_token || refreshToken,
    expiresAt: Date.now() + lifetime,
    lifetime,
  };
  sessionStorage.setItem(TOKENS_KEY, JSON.stringify(auth.tokens));
}

function forgetTokens() {
  auth.tokens = null;
  sessionStorage.removeItem(TOKENS_KEY);
}

async function finishSignIn(params) {
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  sessionStorage.removeItem(PENDING_KEY);
  history.replaceState(null, "", pageUrl()); // the code is single-use: keep it out of the address bar
  if (params.has("error")) throw new Error(params.get("error_description") || params.get("error"));
  if (!pending || pending.state !== params.get("state")) {
    throw new Error("the answer from the sign-in page does not match this page's request");
  }
  keepTokens(await tokenRequest({
    grant_type: "authorization_code",
    client_id: auth.config.client_id,
    code: params.get("code"),
    redirect_uri: pageUrl(),
    code_verifier: pending.verifier,
  }));
}

function refreshTokens() {
  // One refresh at a time, shared by every call that needs it.
  if (!auth.refreshing) {
    const refresh = auth.tokens && auth.tokens.refresh;
    auth.refreshing = (refresh ? tokenRequest({
      grant_type: "refresh_token",
      client_id: auth.config.client_id,
      refresh_token: refresh,
    }) : Promise.reject(new SignInRequired()))
      .then((body) => keepTokens(body, refresh))
      .finally(() => { auth.refreshing = null; });
  }
  return auth.refreshing;
}

async function idToken() {
  if (!auth.tokens) throw sessionEnded();
  // Refresh shortly before the token expires (a tenth of its lifetime, at most a minute).
  const margin = Math.min(60000, auth.tokens.lifetime / 10);
  if (Date.now() >= auth.tokens.expiresAt - margin) await renewed();
  return auth.tokens.id;
}

async function api(path, options = {}) {
  // Every call to the API goes through here; never a presigned S3 URL (its signature is the
  // credential, and an Authorization header would break it).
  if (auth.mode !== "cognito") {
    const send = (refused) => fetch(path, {
      ...options, headers: { ...(options.headers || {}), ...tokenHeaders(refused) },
    });
    // The page asks again (three times at most) while the server refuses the token it was given.
    let response = await send();
    for (let asked = 0; challenged(response) && asked < 3; asked += 1) response = await send(response);
    return response;
  }
  const send = async () => fetch(path, {
    ...options, headers: { ...(options.headers || {}), Authorization: await idToken() },
  });
  let response = await send();
  if (response.status === 401) {
    // Expired or revoked before the page's clock said so: refresh once, then give up.
    await renewed();
    response = await send();
    if (response.status === 401) throw sessionEnded();
  }
  return response;
}

function sessionEnded() {
  forgetTokens();
  clearTimeout(state.pollTimer);
  showSignIn("Your session has ended. Sign in again to continue.");
  return new SignInRequired();
}

function showSignIn(text, { code = "", button = true } = {}) {
  $("app").hidden = true;
  $("account").hidden = true;
  $("signin").hidden = false;
  $("signin-text").textContent = text;
  $("signin-code").textContent = code;
  $("signin-code").hidden = !code;
  $("sign-in").hidden = !button;
  if (button) $("sign-in").focus();
}

function showApp() {
  $("signin").hidden = true;
  $("app").hidden = false;
  if (auth.mode === "cognito" && auth.tokens) {
    const claims = tokenClaims(auth.tokens.id);
    $("account-name").textContent = claims.email || claims["cognito:username"] || "";
    $("account").hidden = false;
  }
}

async function signOut() {
  const refresh = auth.tokens && auth.tokens.refresh;
  forgetTokens();
  clearTimeout(state.pollTimer);
  if (refresh) {
    // Revoking the refresh token ends what this tab could still renew; best effort.
    await fetch(`${auth.config.domain}/oauth2/revoke`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: refresh, client_id: auth.config.client_id }),
    }).catch(() => {});
  }
  // The managed login's own session (a cookie on its domain) ends at /logout, which sends the
  // browser back to the page.
  const url = new URL(`${auth.config.domain}/logout`);
  url.search = new URLSearchParams({ client_id: auth.config.client_id, logout_uri: pageUrl() });
  location.assign(url.href);
}

function iamHelp() {
  const region = auth.config.region || "<region>";
  return [
    `curl --aws-sigv4 "aws:amz:${region}:execute-api" \\`,
    '  --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \\',
    '  -H "x-amz-security-token: $AWS_SESSION_TOKEN" \\',
    `  ${pageUrl()}documents`,
  ].join("\n");
}

async function startAuth() {
  // True when the page may call the API now.
  try {
    const response = await fetch("auth-config", { headers: { Accept: "application/json" } });
    if (response.ok) auth.config = await response.json();
  } catch (_) { /* an older server: no sign-in */ }
  auth.mode = auth.config.mode || "none";
  if (auth.mode === "iam") {
    showSignIn(
      "This docchat's API takes only AWS IAM (SigV4) signed requests, which a web page cannot " +
      "sign. Call it with your AWS credentials instead (curl 7.75+, awscurl or an AWS SDK), for " +
      "example as below, or deploy the stack with ApiAuth=COGNITO to use this page.",
      { code: iamHelp(), button: false });
    return false;
  }
  if (auth.mode !== "cognito") return true;
  const params = new URLSearchParams(location.search);
  if (params.has("code") || params.has("error")) {
    try {
      await finishSignIn(params);
    } catch (error) {
      forgetTokens();
      showSignIn(`Sign-in did not complete: ${unreachable(error) ? "the sign-in service could not be reached" : error.message}. Try again.`);
      return false;
    }
  } else {
    auth.tokens = JSON.parse(sessionStorage.getItem(TOKENS_KEY) || "null");
  }
  if (!auth.tokens) {
    showSignIn("Sign in with your docchat account to ask your documents.");
    return false;
  }
  showApp();
  return true;
}

// --- layout and input -------------------------------------------------------------------------

function autosize(textarea) {
  textarea.style.height = "auto";
  textarea.style.height = `${Math.min(textarea.scrollHeight, 200)}px`;
}

function setDocsOpen(open) {
  document.body.classList.toggle("docs-open", open);
  $("docs-toggle").setAttribute("aria-expanded", String(open));
  $("scrim").hidden = !open;
  if (open) $("docs").querySelector("h2").focus?.();
}

async function loadConfig() {
  try {
    const response = await api("config");
    if (response.ok) state.config = await response.json();
  } catch (_) { /* the documents call reports the problem */ }
  const upload = state.config.upload;
  $("upload").hidden = upload === "none";
  const note = $("upload-note");
  note.hidden = upload !== "presigned";
  note.textContent = upload === "presigned"
    ? "Uploads go to the documents bucket; indexing takes a minute or two."
    : "";
  $("mode").textContent = state.config.answers === "extractive" ? "quotes only · no language model" : state.config.answers || "";
}

function init() {
  const question = $("question");
  $("ask").addEventListener("submit", (event) => {
    event.preventDefault();
    if (state.running) {
      state.running.controller.abort();
      return;
    }
    const text = question.value;
    if (!text.trim()) return;
    question.value = "";
    autosize(question);
    ask(text);
  });
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!state.running) $("ask").requestSubmit();
    }
  });
  question.addEventListener("input", () => autosize(question));
  $("new-chat").addEventListener("click", newConversation);
  $("file").addEventListener("change", async (event) => {
    const files = [...event.target.files];
    event.target.value = "";
    showUploadError("");
    await Promise.all(files.map(uploadFile));
  });
  $("docs-toggle").addEventListener("click", () => setDocsOpen(!document.body.classList.contains("docs-open")));
  $("scrim").addEventListener("click", () => setDocsOpen(false));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && document.body.classList.contains("docs-open")) {
      setDocsOpen(false);
      $("docs-toggle").focus();
    }
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !$("app").hidden) refreshDocs();
  });
  $("docs").querySelector("h2").tabIndex = -1;
  $("sign-in").addEventListener("click", signIn);
  $("sign-out").addEventListener("click", signOut);
  setRunning(false);
  startAuth().then((ready) => {
    if (!ready) return;
    // After the first call: a server that needs a token asks for it once.
    const configured = loadConfig();
    configured.then(refreshDocs);
    state.loaded = configured.then(chatHooks.ready).catch(() => {});
    question.focus();
    openLinkedPage();
  });
}

document.addEventListener("DOMContentLoaded", init);
