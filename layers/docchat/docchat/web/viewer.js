// The document viewer: a citation opens its PDF inside the page, at the cited page, with the
// quoted sentence highlighted in pdf.js's text layer. Any other document (Word, PowerPoint,
// Excel, HTML, Markdown, text) is never handed to pdf.js: the viewer shows the cited location's
// extracted text (GET /documents/{id}/pages/{n}), named by its label, the quote marked in it. pdf.js comes from static/vendor/pdfjs/
// (pdfjs-dist, bundled at build time: `make vendor` in layers/docchat); it is imported on the
// first citation opened, so the page starts without it. Nothing is fetched from anywhere else:
// no CDN, no fonts, no wasm decoders.

import { api } from "./api.js";
import { $, announce, el } from "./dom.js";
import { DocumentGone, errorText, unreachable } from "./errors.js";
import { highlightQuote } from "./highlight.js";
import { fileName, shownName, labelOf } from "./names.js";
import { headerOf, rowCells, rowTable } from "./rows.js";
import { highlightLocation, renderLocation } from "./textview.js";

const VENDOR = new URL("vendor/pdfjs/", import.meta.url);
const VIEWER_MAX_SCALE = 2;
const VIEWER_CACHE = 3; // documents kept open, newest last

const viewer = {
  pdfjs: null, // the import of pdf.js, once asked for
  documents: new Map(), // doc_id -> Promise of a PDFDocumentProxy
  opening: 0, // bumped on every open and close: a late page must not replace a newer one
  citation: null,
  located: false, // the citation's document is not a PDF: its locations are shown as text
  page: 1,
  pages: 0,
  opener: null,
  renderTask: null,
  textLayer: null,
  nodes: null,
};

function loadPdfjs() {
  if (!viewer.pdfjs) {
    viewer.pdfjs = import(new URL("pdf.min.mjs", VENDOR).href).then((lib) => {
      lib.GlobalWorkerOptions.workerSrc = new URL("pdf.worker.min.mjs", VENDOR).href;
      return lib;
    }).catch((error) => {
      viewer.pdfjs = null; // let a later click try again
      throw new Error(`the document viewer could not load (${error.message})`);
    });
  }
  return viewer.pdfjs;
}

// --- the dialog ---------------------------------------------------------------------------------

function viewerNodes() {
  if (viewer.nodes) return viewer.nodes;
  const title = el("h2", { id: "viewer-title", class: "viewer-title", tabindex: "-1" });
  const where = el("span", { id: "viewer-where", class: "viewer-where" });
  const prev = el("button", { type: "button", class: "icon-button viewer-prev", "aria-label": "Previous page",
    title: "Previous page", text: "‹", onclick: () => turnTo(viewer.page - 1) });
  const next = el("button", { type: "button", class: "icon-button viewer-next", "aria-label": "Next page",
    title: "Next page", text: "›", onclick: () => turnTo(viewer.page + 1) });
  const close = el("button", { type: "button", class: "icon-button viewer-close", "aria-label": "Close the document",
    title: "Close (Esc)", text: "×", onclick: closeViewer });
  const status = el("p", { id: "viewer-status", class: "viewer-status", role: "status", "aria-live": "polite" });
  const quote = el("blockquote", { class: "viewer-quote" });
  const canvas = el("canvas", { class: "viewer-canvas", "aria-hidden": "true" });
  const text = el("div", { class: "textLayer" });
  const sheet = el("div", { class: "viewer-page" }, canvas, text);
  const article = el("article", { class: "viewer-text", hidden: true });
  const scroll = el("div", { class: "viewer-scroll", tabindex: "0", role: "document", "aria-labelledby": "viewer-where" },
    sheet, article);
  const root = el("div", { id: "viewer", class: "viewer", role: "dialog", "aria-modal": "true",
    "aria-labelledby": "viewer-title", "aria-describedby": "viewer-status", hidden: true },
  el("header", { class: "viewer-bar" },
    el("div", { class: "viewer-heading" }, title, where),
    el("div", { class: "viewer-nav" }, prev, next, close)),
  status, quote, scroll);
  const scrim = el("div", { class: "viewer-scrim", hidden: true, onclick: closeViewer });
  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closeViewer();
    } else if (event.key === "Tab") {
      keepFocusInside(root, event);
    }
  });
  document.body.append(scrim, root);
  document.addEventListener("keydown", (event) => {
    // Escape closes the viewer wherever focus went (a click on the page can take it to the body).
    if (event.key === "Escape" && !root.hidden) closeViewer();
  });
  viewer.nodes = { root, scrim, title, where, prev, next, status, quote, scroll, sheet, canvas, text, article };
  return viewer.nodes;
}

function keepFocusInside(root, event) {
  // The rest of the page is inert while the viewer is open; this keeps Tab from the browser's UI.
  const focusable = [...root.querySelectorAll("button:not([disabled]), [tabindex='0']")];
  if (!focusable.length) return;
  const first = focusable[0];
  const last = focusable[focusable.length - 1];
  if (event.shiftKey && document.activeElement === first) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}

function setBackgroundInert(inert) {
  for (const node of document.querySelectorAll("body > :not(.viewer):not(.viewer-scrim):not(script)")) {
    if (inert) node.setAttribute("inert", "");
    else node.removeAttribute("inert");
  }
}

function setViewerStatus(text, state) {
  const { root, status } = viewerNodes();
  status.textContent = text;
  root.dataset.state = state;
}

/** Opens the viewer at `citation` (a chip or marker, `opener`, was clicked). */
export async function openViewer(citation, opener) {
  const nodes = viewerNodes();
  const opening = ++viewer.opening;
  viewer.citation = citation;
  viewer.opener = opener;
  viewer.page = citation.page;
  viewer.located = isLocated(citation);
  viewer.pages = 0;
  const title = shownName(citation.title);
  const at = viewer.located ? labelOf(citation) || `location ${citation.page}` : `page ${citation.page}`;
  nodes.title.textContent = title;
  nodes.where.textContent = viewer.located ? labelOf(citation) : `Page ${citation.page}`;
  nodes.root.dataset.view = viewer.located ? "text" : "pdf";
  nodes.sheet.hidden = viewer.located;
  nodes.article.hidden = !viewer.located;
  nodes.article.replaceChildren();
  delete nodes.root.dataset.kind;
  nameButtons(viewer.located ? "location" : "page");
  const table = rowTable(headerOf(citation), citation.quote);
  nodes.quote.classList.toggle("viewer-row", Boolean(table));
  nodes.quote.replaceChildren(table || citation.quote);
  nodes.root.dataset.docId = citation.doc_id;
  delete nodes.root.dataset.highlight;
  nodes.prev.disabled = true;
  nodes.next.disabled = true;
  clearPage();
  setViewerStatus(`Opening ${title} at ${at}…`, "loading");
  nodes.root.hidden = false;
  nodes.scrim.hidden = false;
  document.body.classList.add("viewer-open");
  setBackgroundInert(true);
  nodes.title.focus();
  try {
    if (viewer.located) {
      const pages = await locationCount(citation.doc_id);
      if (opening !== viewer.opening) return;
      viewer.pages = pages;
      await showLocation(citation.page, opening);
    } else {
      const pdf = await documentFor(citation.doc_id);
      if (opening !== viewer.opening) return;
      viewer.pages = pdf.numPages;
      await showPage(citation.page, opening);
    }
  } catch (error) {
    if (opening !== viewer.opening) return;
    const message = openFailure(error);
    setViewerStatus(message, "failed");
    announce(message);
  }
}

function isLocated(citation) {
  // A PDF's citations name a page and have no label; every other format's name a location.
  return Boolean(labelOf(citation)) || (Boolean(citation.source) && !/\.pdf$/i.test(fileName(citation.source)));
}

function nameButtons(unit) {
  const { prev, next } = viewerNodes();
  for (const [button, word] of [[prev, "Previous"], [next, "Next"]]) {
    button.setAttribute("aria-label", `${word} ${unit}`);
    button.title = `${word} ${unit}`;
  }
}

function openFailure(error) {
  // A deleted document is said in the reader's words; anything else with the reason.
  if (error instanceof DocumentGone) return error.message;
  return `Could not open the document: ${unreachable(error) ? "the server could not be reached" : error.message}`;
}

function closeViewer() {
  const nodes = viewerNodes();
  if (nodes.root.hidden) return;
  viewer.opening += 1;
  cancelRendering();
  nodes.root.hidden = true;
  nodes.scrim.hidden = true;
  document.body.classList.remove("viewer-open");
  setBackgroundInert(false);
  const opener = viewer.opener;
  viewer.opener = null;
  if (opener && opener.isConnected) opener.focus();
  else $("question").focus();
}

async function documentFor(docId) {
  if (!viewer.documents.has(docId)) {
    const loading = Promise.all([loadPdfjs(), pdfBytes(docId)])
      .then(([lib, data]) => lib.getDocument({ data, isEvalSupported: false, enableXfa: false }).promise);
    loading.catch(() => viewer.documents.delete(docId));
    viewer.documents.set(docId, loading);
    for (const [oldest, old] of viewer.documents) {
      if (viewer.documents.size <= VIEWER_CACHE) break;
      viewer.documents.delete(oldest);
      old.then((pdf) => pdf.destroy()).catch(() => {});
    }
  }
  return viewer.documents.get(docId);
}

async function pdfBytes(docId) {
  // GET /documents/{id}/file: the PDF itself (local), or JSON with a short-lived presigned S3 URL
  // (cloud), fetched without the API's Authorization header: its signature is the credential.
  const response = await api(`documents/${encodeURIComponent(docId)}/file`);
  if (response.status === 404 && await deleted(docId)) throw new DocumentGone();
  if (!response.ok) throw new Error(await errorText(response));
  const type = response.headers.get("Content-Type") || "";
  if (!type.includes("application/json")) return new Uint8Array(await response.arrayBuffer());
  const link = await response.json();
  const file = await fetch(link.url);
  if (!file.ok) throw new Error(`the documents bucket answered HTTP ${file.status}`);
  return new Uint8Array(await file.arrayBuffer());
}

async function deleted(docId) {
  // The file's 404 says the same for a deleted document and a missing file; the document's own
  // record tells them apart.
  return (await api(`documents/${encodeURIComponent(docId)}`)).status === 404;
}

function turnTo(number) {
  const opening = viewer.opening;
  const show = viewer.located ? showLocation : showPage;
  show(number, opening).catch((error) => {
    if (opening !== viewer.opening) return;
    const what = viewer.located ? "that location" : `page ${number}`;
    setViewerStatus(`Could not show ${what}: ${openFailure(error).replace(/^Could not open the document: /, "")}`, "failed");
  });
}

// --- a location of any other format: its extracted text, the quote marked ----------------------

async function locationCount(docId) {
  const response = await api(`documents/${encodeURIComponent(docId)}`);
  if (response.status === 404) throw new DocumentGone();
  if (!response.ok) throw new Error(await errorText(response));
  return (await response.json()).pages;
}

async function locationText(docId, number) {
  const response = await api(`documents/${encodeURIComponent(docId)}/pages/${number}`);
  if (response.status === 404 && await deleted(docId)) throw new DocumentGone();
  if (!response.ok) throw new Error(await errorText(response));
  return response.json();
}

async function showLocation(number, opening = viewer.opening) {
  const nodes = viewerNodes();
  const citation = viewer.citation;
  if (!citation || number < 1 || (viewer.pages && number > viewer.pages)) return;
  nodes.prev.disabled = true;
  nodes.next.disabled = true;
  const page = await locationText(citation.doc_id, number);
  if (opening !== viewer.opening) return;
  viewer.page = number;
  delete nodes.root.dataset.highlight;
  nodes.root.dataset.page = String(number);
  nodes.root.dataset.kind = page.kind;
  const label = page.label || `Location ${number}`;
  nodes.where.textContent = label;
  nodes.prev.disabled = number <= 1;
  nodes.next.disabled = number >= viewer.pages;
  const rendered = renderLocation(nodes.article, page.text);
  nodes.scroll.scrollTop = 0;
  const counted = `${label} (${number} of ${viewer.pages})`;
  if (!citation.quote) {
    setViewerStatus(`${counted}.`, "ready");
    return;
  }
  if (number !== citation.page) {
    setViewerStatus(`${counted}. The quote is in ${labelOf(citation) || `location ${citation.page}`}.`, "ready");
    return;
  }
  const found = highlightLocation(nodes.article, rendered, citation.quote);
  nodes.root.dataset.highlight = found;
  const said = {
    row: "the quoted row is highlighted",
    full: "the quote is highlighted",
    partial: "the start of the quote is highlighted",
    none: "the quote was not found in its text",
  }[found];
  setViewerStatus(`${counted}: ${said}.`, "ready");
  const first = nodes.article.querySelector("mark");
  if (first) first.scrollIntoView({ block: "center", inline: "nearest" });
}

// --- one page: canvas, text layer, highlight --------------------------------------------------

function cancelRendering() {
  if (viewer.renderTask) viewer.renderTask.cancel();
  if (viewer.textLayer) viewer.textLayer.cancel();
  viewer.renderTask = null;
  viewer.textLayer = null;
}

function clearPage() {
  cancelRendering();
  const { text, canvas } = viewerNodes();
  text.replaceChildren();
  canvas.width = 0;
  canvas.height = 0;
  // The last page's size must not hold the panel open wider than the screen it is now on.
  canvas.style.width = "0";
  canvas.style.height = "0";
}

async function showPage(number, opening = viewer.opening) {
  const nodes = viewerNodes();
  const citation = viewer.citation;
  if (!citation || number < 1 || (viewer.pages && number > viewer.pages)) return;
  viewer.page = number;
  clearPage();
  nodes.root.dataset.page = String(number);
  nodes.where.textContent = `Page ${number} of ${viewer.pages}`;
  nodes.prev.disabled = number <= 1;
  nodes.next.disabled = number >= viewer.pages;
  const [lib, pdf] = await Promise.all([loadPdfjs(), documentFor(citation.doc_id)]);
  const page = await pdf.getPage(number);
  if (opening !== viewer.opening) return;
  const width = Math.max(nodes.scroll.clientWidth - 16, 200);
  const viewport = page.getViewport({ scale: Math.min(VIEWER_MAX_SCALE, width / page.getViewport({ scale: 1 }).width) });
  const ratio = window.devicePixelRatio || 1;
  nodes.canvas.width = Math.floor(viewport.width * ratio);
  nodes.canvas.height = Math.floor(viewport.height * ratio);
  nodes.canvas.style.width = `${Math.floor(viewport.width)}px`;
  nodes.canvas.style.height = `${Math.floor(viewport.height)}px`;
  nodes.sheet.style.setProperty("--scale-factor", String(viewport.scale));
  nodes.sheet.style.setProperty("--total-scale-factor", String(viewport.scale));
  viewer.renderTask = page.render({
    canvasContext: nodes.canvas.getContext("2d"),
    viewport,
    transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : null,
  });
  viewer.textLayer = new lib.TextLayer({ textContentSource: page.streamTextContent(), container: nodes.text, viewport });
  const layer = viewer.textLayer;
  try {
    await Promise.all([viewer.renderTask.promise, layer.render()]);
  } catch (error) {
    if (error && error.name === "RenderingCancelledException") return;
    if (opening !== viewer.opening || layer !== viewer.textLayer) return;
    throw error;
  }
  if (opening !== viewer.opening || layer !== viewer.textLayer) return;
  if (!citation.quote) {
    setViewerStatus(`Page ${number} of ${viewer.pages}.`, "ready");
    return;
  }
  if (number !== citation.page) {
    setViewerStatus(`Page ${number} of ${viewer.pages}. The quote is on page ${citation.page}.`, "ready");
    return;
  }
  const found = highlightQuote(layer.textDivs, layer.textContentItemsStr, citation.quote);
  nodes.root.dataset.highlight = found;
  const said = (rowCells(citation.quote) ? {
    full: "the table row is highlighted",
    partial: "part of the table row is highlighted",
    none: "the table row was not found in the page's text",
  } : {
    full: "the quote is highlighted",
    partial: "the start of the quote is highlighted",
    none: "the quote was not found in the page's text",
  })[found];
  setViewerStatus(`Page ${number} of ${viewer.pages}: ${said}.`, "ready");
  const first = nodes.text.querySelector("mark");
  if (first) first.scrollIntoView({ block: "center", inline: "nearest" });
}

// --- a link to a page: …/#doc=<id>&page=<n>[&quote=<text>] (the MCP server's results link so) ---

function linkedPage() {
  const params = new URLSearchParams(location.hash.slice(1));
  const docId = params.get("doc");
  const page = Number(params.get("page"));
  if (!docId || !Number.isInteger(page) || page < 1) return null;
  return { doc_id: docId, page, quote: params.get("quote") || "", title: docId, source: "" };
}

/** Opens the page a link names; app.js calls it once the page may call the API, and the link's
 * changes call it again. */
export async function openLinkedPage() {
  const citation = linkedPage();
  if (!citation) return;
  try {
    const response = await api(`documents/${encodeURIComponent(citation.doc_id)}`);
    if (response.ok) {
      const record = await response.json();
      citation.title = record.title || citation.doc_id;
      citation.source = record.source; // its type says how the viewer shows it
    }
  } catch (_) { /* opening the document says what is wrong */ }
  openViewer(citation, null);
}

window.addEventListener("hashchange", openLinkedPage);
