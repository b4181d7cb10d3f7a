// A location of a document that is not a PDF (a section, a slide, a sheet range) shown as the
// text conversion extracted from it: its markdown read line by line into headings, paragraphs,
// list items and tables. Every piece of the document goes in as a text node, never as HTML.

import { el } from "./dom.js";
import { highlightQuote } from "./highlight.js";

const HEADING = /^(#{1,6})\s+(.*)$/;
const ITEM = /^(\s*)(?:[-*+]|(\d+[.)]))\s+(.*)$/;
const RULE = /^\|(?:\s*:?-{3,}:?\s*\|)+$/; // a table's | --- | --- | line
const FENCE = /^\s*(```|~~~)/;

/** Fills `container` with the location's `markdown`; the text pieces a quote is searched in:
 * {items: elements, strings: their texts}. */
export function renderLocation(container, markdown) {
  const items = [];
  const strings = [];
  const add = (node, text) => {
    items.push(node);
    strings.push(text);
    return node;
  };
  const nodes = [];
  let table = null; // {head, body} of the table being read
  let fence = null;
  for (const line of markdown.split("\n")) {
    if (fence) {
      if (FENCE.test(line)) {
        add(fence, fence.textContent);
        fence = null;
      } else fence.textContent += `${fence.textContent ? "\n" : ""}${line}`;
      continue;
    }
    if (table && !line.startsWith("|")) table = null;
    if (FENCE.test(line)) {
      fence = el("pre", { class: "viewer-code" });
      nodes.push(fence);
    } else if (line.startsWith("|")) {
      if (!table) {
        table = { head: el("thead"), body: el("tbody") };
        nodes.push(el("div", { class: "viewer-table" }, el("table", {}, table.head, table.body)));
      }
      if (RULE.test(line.replace(/\s+/g, "")) && !table.head.rows.length) {
        // The rows above the rule are the table's header: their cells become header cells.
        for (const row of [...table.body.rows]) {
          for (const td of [...row.cells]) {
            const th = el("th", { scope: "col", text: td.textContent });
            items[items.indexOf(td)] = th;
            td.replaceWith(th);
          }
          table.head.append(row);
        }
      } else {
        table.body.append(el("tr", {}, ...cells(line).map((text) => add(el("td", { text }), text))));
      }
    } else if (HEADING.test(line)) {
      const [, hashes, text] = line.match(HEADING);
      nodes.push(add(el(`h${Math.min(hashes.length + 2, 6)}`, { class: "viewer-heading-line", text }), text));
    } else if (ITEM.test(line)) {
      const [, indent, number, rest] = line.match(ITEM);
      // The marker is kept in the text: a quote of a numbered item carries its number.
      const text = `${number ? `${number} ` : "• "}${rest}`;
      const depth = Math.min(Math.floor(indent.replace(/\t/g, "  ").length / 2), 6);
      nodes.push(add(el("p", { class: "viewer-item", "data-depth": depth, text }), text));
    } else if (line.trim()) {
      nodes.push(add(el("p", { class: "viewer-line", text: line }), line));
    }
  }
  if (fence) add(fence, fence.textContent);
  container.replaceChildren(...nodes);
  return { items, strings };
}

function cells(line) {
  // "| a | b \| c |" -> ["a", "b | c"]: a cell's own bar is escaped by conversion.
  const inner = line.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "");
  return inner.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function folded(text) {
  return text.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
}

/** Marks `quote` in a rendered location: "row" when the quote is a table row (the whole row is
 * marked), else "full", "partial" or "none" as highlightQuote says. */
export function highlightLocation(container, { items, strings }, quote) {
  if (quote.trim().startsWith("|")) {
    const wanted = folded(cells(quote).join(" "));
    for (const row of container.querySelectorAll("tr")) {
      const texts = [...row.cells].map((c) => c.textContent);
      if (!wanted || folded(texts.join(" ")) !== wanted) continue;
      row.classList.add("quote-row");
      for (const cell of row.cells) cell.replaceChildren(el("mark", { class: "quote-mark", text: cell.textContent }));
      return "row";
    }
  }
  return highlightQuote(items, strings, quote);
}
