// The documents panel: the chosen collection's documents with each one's status (polled while
// any is busy), files on their way in, deleting, the documents selected to ask about, and the
// panel's open state on a phone.

import { api } from "./api.js";
import { chosenCollection, mayWriteChosen } from "./collections.js";
import { config } from "./config.js";
import { $, announce, el, icon } from "./dom.js";
import { SignInRequired, errorText } from "./errors.js";
import { docFileName, docTitle, shownName } from "./names.js";

const POLL_BUSY_MS = 1000;
const POLL_IDLE_MS = 30000;
const FINAL = new Set(["INDEXED", "FAILED"]);
const TRASH = "M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3";
const STATUS_TEXT = {
  UPLOADING: "Uploading…",
  AWAITING: "Uploaded, waiting for the pipeline…",
  QUEUED: "Queued",
  CONVERTING: "Reading the document…",
  CHUNKING: "Splitting into passages…",
  EMBEDDING: "Embedding…",
  INDEXING: "Indexing…",
  INDEXED: "Ready",
  FAILED: "Failed",
  DELETING: "Deleting…",
};

const panel = {
  docs: [], // as GET /documents lists them
  uploading: new Map(), // local key -> {name, collection}, while the bytes travel
  awaiting: new Map(), // doc_id -> {name, collection}: in S3, waiting for the pipeline
  deleting: new Set(),
  selected: new Map(), // doc_id -> shown title: the documents a question may be asked about
  pollTimer: 0,
  listeners: [],
  selectionListeners: [],
};

/** Calls `listener` each time the list has been read again. */
export function onDocsChanged(listener) {
  panel.listeners.push(listener);
}

/** Calls `listener` when documents are selected or unselected. */
export function onSelectionChanged(listener) {
  panel.selectionListeners.push(listener);
}

/** The ids of the selected documents, in the order they were selected. */
export const selectedDocs = () => [...panel.selected.keys()];

/** Selects exactly `docIds` (a saved question's documents), titled by their ids until listed. */
export function selectDocs(docIds) {
  panel.selected = new Map(docIds.map((id) => [id, panel.selected.get(id) || id]));
  renderDocs();
  for (const listener of panel.selectionListeners) listener();
}

function toggleSelected(doc, on) {
  if (on) panel.selected.set(doc.doc_id, doc.title);
  else panel.selected.delete(doc.doc_id);
  for (const listener of panel.selectionListeners) listener();
}

/** How many documents the list holds (the chosen collection's, as last read). */
export const listedCount = () => panel.docs.length;

/** The shown titles of the indexed documents, each once. */
export function indexedTitles() {
  return [...new Set(panel.docs.filter((d) => d.status === "INDEXED").map(docTitle))];
}

/** A file on its way to the server, listed until `untrack(key)`, or until the list shows the
 * document the upload made (`before`: the versions of that name listed when it began). */
export function trackUpload(name) {
  const key = `upload-${crypto.randomUUID()}`;
  const shown = shownName(name);
  const before = new Set(panel.docs.filter((d) => listedName(d) === shown).map(versionOf));
  panel.uploading.set(key, { name, collection: chosenCollection(), before });
  renderDocs();
  return key;
}

/** The upload's bytes have been answered for: its own row goes at once. */
export function untrackUpload(key) {
  panel.uploading.delete(key);
  renderDocs();
}

const listedName = (doc) => shownName(docFileName(doc));
const versionOf = (doc) => `${doc.doc_id} ${doc.version}`;

/** Whether the list already shows the document an upload made: a version of its name that was
 * not listed when the upload began. A list read while the bytes were still being answered for
 * (a poll, the page shown again) holds the registry's QUEUED row for them; the upload's own
 * row beside it was a second row for one file, until the answer came (40 s on a busy server). */
function listedAlready({ name, before }) {
  const shown = shownName(name);
  return panel.docs.some((d) => listedName(d) === shown && !before.has(versionOf(d)));
}

/** The document an upload made, as the server answered it, listed until the list is read again. */
export function showUploaded(doc) {
  panel.docs = [...panel.docs.filter((d) => d.doc_id !== doc.doc_id), doc];
}

/** A file in the documents bucket that the pipeline has not registered yet. */
export function awaitPipeline(docId, name, collection) {
  panel.awaiting.set(docId, { name, collection });
}

/** Shows (or, with "", hides) an upload or delete failure above the list. */
export function showUploadError(text) {
  const box = $("upload-error");
  box.textContent = text;
  box.hidden = !text;
}

/** Opens or closes the panel (a drawer below 800px). */
export function setDocsOpen(open) {
  document.body.classList.toggle("docs-open", open);
  $("docs-toggle").setAttribute("aria-expanded", String(open));
  $("scrim").hidden = !open;
  if (open) $("docs").querySelector("h2").focus?.();
}

export const docsOpen = () => document.body.classList.contains("docs-open");

function docRow(doc) {
  const pick = el("input", { type: "checkbox", class: "doc-pick", "aria-label": `Ask about ${doc.title}`,
    title: "Ask about this document", onchange: (event) => toggleSelected(doc, event.target.checked) });
  const row = el("li", { class: "doc", "data-doc-id": doc.doc_id }, pick,
    el("div", { class: "doc-main" },
      el("bdi", { class: "doc-title" }),
      el("span", { class: "doc-sub" }, el("span", { class: "badge" }), el("span", { class: "doc-meta" })),
      el("p", { class: "doc-error" })));
  if (doc.deletable) {
    row.append(el("button", {
      type: "button", class: "icon-button delete", "aria-label": `Delete ${doc.title}`,
      title: "Delete", onclick: () => removeDocument(doc.doc_id),
    }, icon(TRASH)));
  }
  return row;
}

function updateRow(row, doc) {
  const status = doc.status;
  row.dataset.status = status;
  row.querySelector(".doc-title").textContent = doc.title;
  const meta = [];
  if (doc.pages) meta.push(`${doc.pages} ${doc.pages === 1 ? unitOf(doc) : `${unitOf(doc)}s`}`);
  // The same name uploaded again replaces the document's content: say which upload this is.
  if (doc.revision > 1) meta.push(`revision ${doc.revision}`);
  // The file's name is always beside the title (a title alone may be shared or generic), in an
  // isolate so that its writing direction cannot reorder the words after it.
  row.querySelector(".doc-meta").replaceChildren(
    ...(doc.name ? [el("bdi", { class: "doc-name", text: doc.name })] : []),
    meta.length ? `${doc.name ? " · " : ""}${meta.join(" · ")}` : "");
  const badge = row.querySelector(".badge");
  badge.textContent = status;
  badge.title = STATUS_TEXT[status] || status;
  badge.className = `badge status-${status.toLowerCase()}${FINAL.has(status) ? "" : " busy"}`;
  const error = row.querySelector(".doc-error");
  error.textContent = status === "FAILED" ? doc.error || "indexing failed" : "";
  error.hidden = status !== "FAILED";
  // Only an indexed document can be asked about.
  const pick = row.querySelector(".doc-pick");
  pick.hidden = status !== "INDEXED";
  pick.checked = panel.selected.has(doc.doc_id);
}

function rowsToShow() {
  const rows = panel.docs.map((d) => ({
    doc_id: d.doc_id,
    title: docTitle(d),
    name: shownName(docFileName(d)),
    pages: d.pages,
    revision: d.revision,
    status: panel.deleting.has(d.doc_id) ? "DELETING" : d.status,
    error: d.error,
    deletable: config.upload !== "none" && mayWriteChosen(),
  }));
  const known = new Set(panel.docs.map((d) => d.doc_id));
  const here = chosenCollection();
  for (const [docId, { name, collection }] of panel.awaiting) {
    if (!known.has(docId) && collection === here) rows.push({ doc_id: docId, title: shownName(name), name: shownName(name), status: "AWAITING" });
  }
  for (const [key, upload] of panel.uploading) {
    const { name, collection } = upload;
    if (collection !== here || listedAlready(upload)) continue;
    rows.push({ doc_id: key, title: shownName(name), name: shownName(name), status: "UPLOADING" });
  }
  return rows;
}

/** The list as `panel` has it, changing only the rows that changed. */
export function renderDocs() {
  const list = $("doc-list");
  const rows = rowsToShow();
  const existing = new Map([...list.children].map((li) => [li.dataset.docId, li]));
  let cursor = list.firstElementChild;
  for (const doc of rows) {
    let row = existing.get(doc.doc_id);
    if (!row || Boolean(row.querySelector(".delete")) !== Boolean(doc.deletable)) {
      // A row made again (an upload the pipeline has just registered gains its delete button)
      // goes where the old one was: past it, the cursor must not point at a removed row.
      if (row === cursor) cursor = cursor.nextElementSibling;
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
  const ready = panel.docs.filter((d) => d.status === "INDEXED").length;
  $("docs-count").textContent = `(${ready})`;
}

/** Stops reading the list again (the session ended). */
export function stopPolling() {
  clearTimeout(panel.pollTimer);
}

function unitOf(doc) {
  // What a document's "pages" are: PDF pages, or the locations another format is cut into.
  const suffix = (/\.[^.\\/]+$/.exec(doc.name || "") || [""])[0].toLowerCase();
  return { ".pptx": "slide", ".xlsx": "sheet range", ".pdf": "page" }[suffix] || (suffix ? "section" : "page");
}

/** Reads the chosen collection's list again, shows it, and polls again: every second while any
 * document is busy. */
export async function refreshDocs() {
  clearTimeout(panel.pollTimer);
  const collection = chosenCollection();
  try {
    const response = await api(`documents?collection=${encodeURIComponent(collection)}`,
      { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(await errorText(response));
    const listed = (await response.json()).documents;
    // Another collection was chosen meanwhile: its own read shows it.
    if (collection !== chosenCollection()) return;
    panel.docs = listed;
    for (const doc of panel.docs) panel.awaiting.delete(doc.doc_id);
    const present = new Set(panel.docs.map((d) => d.doc_id));
    for (const docId of panel.deleting) if (!present.has(docId)) panel.deleting.delete(docId);
    $("docs-error").hidden = true;
  } catch (error) {
    if (error instanceof SignInRequired) return;
    $("docs-error").textContent = `Could not load the documents: ${error.message}`;
    $("docs-error").hidden = false;
  }
  renderDocs();
  for (const listener of panel.listeners) listener();
  const busy = panel.docs.some((d) => !FINAL.has(d.status)) || panel.awaiting.size || panel.deleting.size;
  panel.pollTimer = setTimeout(refreshDocs, busy ? POLL_BUSY_MS : POLL_IDLE_MS);
}

async function removeDocument(docId) {
  const doc = panel.docs.find((d) => d.doc_id === docId);
  const title = doc ? docTitle(doc) : docId;
  if (!window.confirm(`Delete “${title}”? It will no longer be searched.`)) return;
  panel.deleting.add(docId);
  renderDocs();
  try {
    const response = await api(`documents/${encodeURIComponent(docId)}`, { method: "DELETE" });
    if (!response.ok) throw new Error(await errorText(response));
    announce(`${title} deleted.`);
    if (panel.selected.has(docId)) toggleSelected({ doc_id: docId }, false);
  } catch (error) {
    panel.deleting.delete(docId);
    showUploadError(`Could not delete ${title}: ${error.message}`);
  }
  await refreshDocs();
  $("question").focus();
}
