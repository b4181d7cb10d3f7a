// The transcript's messages: a question, and an answer as it streams in, then with its citation
// markers and source chips, the quoted passage, and Copy and Retry under it.

import { $, announce, el } from "./dom.js";
import { fileName, isUrl, shownName, labelOf } from "./names.js";
import { headerOf, rowTable } from "./rows.js";
import { openViewer } from "./viewer.js";

/** Scrolls the transcript to its end when it is near it already, or always with `force`. */
export function scrollToEnd(force = false) {
  const transcript = $("transcript");
  const near = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 120;
  if (force || near) transcript.scrollTop = transcript.scrollHeight;
}

/** Shows or hides the welcome and its suggested questions. */
export function showWelcome(visible) {
  $("welcome").hidden = !visible;
}

/** The question, as the user wrote it, at the end of the transcript. */
export function addUserMessage(text) {
  showWelcome(false);
  $("transcript").append(el("article", { class: "msg user" },
    el("h3", { class: "visually-hidden", text: "You said" }),
    el("p", { class: "text", text })));
  scrollToEnd(true);
}

const count = new Intl.NumberFormat("en");

/** "1,204 tokens in (800 from cache), 312 out · about $0.0084", or "" for no model call. */
export function usageText(usage) {
  if (!usage || !(usage.input_tokens || usage.output_tokens)) return "";
  const cached = usage.cache_read_tokens ? ` (${count.format(usage.cache_read_tokens)} from cache)` : "";
  const units = usage.rerank_search_units;
  const reranked = units ? `, ${count.format(units)} rerank ${units === 1 ? "query" : "queries"}` : "";
  const tokens = `${count.format(usage.input_tokens)} tokens in${cached}, ${count.format(usage.output_tokens)} out${reranked}`;
  if (usage.cost_usd === null || usage.cost_usd === undefined) return `${tokens} · cost unknown (no price for this model)`;
  const cost = usage.cost_usd < 0.01 ? usage.cost_usd.toFixed(4) : usage.cost_usd.toFixed(2);
  return `${tokens} · about $${cost}`;
}

/** One answer in the transcript; `onRetry(view)` asks its question again. */
export class AnswerView {
  constructor({ question = "", onRetry = () => {} } = {}) {
    this.question = question;
    this.onRetry = onRetry;
    this.text = "";
    this.citations = [];
    this.pendingCitations = [];
    this.searches = 0;
    this.steps = el("ol", { class: "step-list" });
    this.stepsSummary = el("summary", { text: "Working…" });
    this.stepsBox = el("details", { class: "steps", open: true }, this.stepsSummary, this.steps);
    this.typing = el("div", { class: "typing", role: "img", "aria-label": "docchat is writing" },
      el("span"), el("span"), el("span"));
    this.answer = el("div", { class: "answer" });
    this.chips = el("div", { class: "chips", role: "group", "aria-label": "Sources", hidden: true });
    this.quote = el("figure", { class: "quote", id: `quote-${crypto.randomUUID()}`, hidden: true });
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

  finish(citations, usage = null) {
    this.citations = citations;
    // What the answer's model calls used and cost, last among the steps (closed by default).
    const used = usageText(usage);
    if (used) this.steps.append(el("li", { class: "usage", text: used }));
    this.setTyping(false);
    this.root.setAttribute("aria-busy", "false");
    this.stepsBox.open = false;
    const found = this.searches === 1 ? "1 search" : `${this.searches} searches`;
    const passages = this.sources().length;
    const quotes = passages < citations.length ? ` (${citations.length} quotes)` : "";
    this.stepsSummary.textContent = this.searches
      ? `${found} · ${passages} cited ${passages === 1 ? "passage" : "passages"}${quotes}`
      : "Answered";
    this.renderAnswer();
    this.renderChips();
    this.footer.replaceChildren(answerTools(this));
  }

  byNumber(number) {
    return this.citations.find((c) => c.number === number);
  }

  /** The cited passages in the order first cited, each its citations: one per quote taken. */
  sources() {
    const passages = new Map();
    for (const c of this.citations) passages.set(c.number, [...(passages.get(c.number) || []), c]);
    return [...passages.values()];
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
      ...this.sources().map((quotes) => this.citationButton(quotes[0], null, "chip")));
    this.chips.hidden = false;
  }

  citationButton(citation, label, kind) {
    const title = shownName(citation.title);
    const where = `${title}, ${pagesOf(this.quotesOf(citation))}`;
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
      el("bdi", { class: "chip-title", text: title }),
      el("span", { class: "chip-page", text: pagesOf(this.quotesOf(citation), "p. ", "pp. ") }));
    return button;
  }

  quotesOf(citation) {
    return this.citations.filter((c) => c.number === citation.number);
  }

  openCitation(citation, button) {
    // The quote shows under the answer, and the document opens at it.
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
    // Every quote the answer took from the passage, each a quoted table row under its table's
    // header rows, so its numbers say which year.
    const quotes = this.quotesOf(citation);
    this.quote.replaceChildren(
      close,
      ...quotes.map((q) => {
        const row = rowTable(headerOf(q), q.quote);
        return row ? el("blockquote", { class: "quote-row" }, row) : el("blockquote", { text: q.quote });
      }),
      el("figcaption", {},
        el("span", { class: "quote-number", text: `[${citation.number}] ` }),
        el("cite", {}, el("bdi", { text: shownName(citation.title) })),
        el("span", { class: "quote-page", text: ` · ${pagesOf(quotes)}` }),
        citation.source ? el("span", { class: "quote-source" }, " · ", sourceOf(citation)) : null));
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
    this.footer.replaceChildren(el("p", { class: "note", text: "Stopped." }), answerTools(this));
  }
}

function sourceOf(citation) {
  // A synced web page links to where it lives, beside the viewer docchat opens it in.
  const name = el("bdi", { text: shownName(fileName(citation.source)) });
  if (!isUrl(citation.source)) return name;
  return el("a", { class: "quote-origin", href: citation.source, target: "_blank", rel: "noopener noreferrer",
    title: "Open where it lives" }, name);
}

function pagesOf(quotes, one = "page ", many = "pages ") {
  // Where a passage's quotes are: the section, slide or sheet range other formats' citations
  // name, or the PDF pages, each once.
  const labels = [...new Set(quotes.map(labelOf).filter(Boolean))];
  if (labels.length) return labels.join(", ");
  const pages = [...new Set(quotes.map((q) => q.page))];
  return `${pages.length > 1 ? many : one}${pages.join(", ")}`;
}

function answerText(view) {
  // The answer with its citation markers, and what each passage it cites says there.
  const sources = view.sources().map((quotes) => {
    const [c] = quotes;
    return `[${c.number}] ${shownName(c.title)}, ${pagesOf(quotes)}: ${quotes.map((q) => `“${q.quote}”`).join(" … ")}`;
  });
  return sources.length ? `${view.text.trim()}\n\nSources:\n${sources.join("\n")}\n` : `${view.text.trim()}\n`;
}

async function copyAnswer(view, button) {
  try {
    await navigator.clipboard.writeText(answerText(view));
    button.textContent = "Copied";
    announce("Answer copied.");
  } catch (_) {
    button.textContent = "Copy failed";
    announce("The answer could not be copied: the browser refused the clipboard.");
  }
  setTimeout(() => { button.textContent = "Copy"; }, 2000);
}

function answerTools(view) {
  // The buttons under a finished or stopped answer.
  const tools = el("div", { class: "answer-tools", role: "group", "aria-label": "Answer actions" });
  if (view.text) {
    const copy = el("button", { type: "button", class: "button ghost copy", "data-action": "copy",
      "aria-label": "Copy the answer", text: "Copy" });
    copy.addEventListener("click", () => copyAnswer(view, copy));
    tools.append(copy);
  }
  tools.append(el("button", { type: "button", class: "button ghost retry", "data-action": "retry",
    "aria-label": "Ask the same question again", text: "Retry", onclick: () => view.onRetry(view) }));
  return tools;
}
