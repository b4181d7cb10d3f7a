// A quoted table row: the page text writes a table as markdown pipe rows, one row per line
// ("| Total net sales | 177,866 | 232,887 | 280,522 |"), and a citation of a row carries its
// table's header rows (`table_header`). Shown as a small table; its cells found in the viewer.

import { el } from "./dom.js";

const BAR = /(?<!\\)\|/;
const DELIMITER = /^\|(?:\s*:?-{3,}:?\s*\|)+$/;

/** The cells of a markdown table row (`| a | b |`), as printed; null when `line` is no row. */
export function rowCells(line) {
  const text = (line || "").trim();
  if (text.length < 2 || !text.startsWith("|") || !text.endsWith("|") || DELIMITER.test(text)) return null;
  return text.split(BAR).slice(1, -1).map((cell) => cell.trim().replaceAll("\\|", "|"));
}

/** A citation's table header rows: a quoted sentence's citation has none, and no field. */
export function headerOf(citation) {
  return "table_header" in citation ? citation.table_header : [];
}

/** A table of a quoted row under its header rows; null when the quote is no row. */
export function rowTable(header, row) {
  const cells = rowCells(row);
  if (!cells) return null;
  const heads = (header || []).map(rowCells).filter(Boolean);
  const line = (tag, values) => el("tr", {}, ...values.map((text) => el(tag, { text })));
  return el("table", { class: "quote-table" },
    heads.length ? el("thead", {}, ...heads.map((h) => line("th", h))) : null,
    el("tbody", {}, line("td", cells)));
}
