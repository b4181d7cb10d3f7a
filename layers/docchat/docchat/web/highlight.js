// The cited quote found in pdf.js's text layer and marked, ignoring case, white space,
// punctuation and line-break hyphens (the answer's quote comes from the indexed text, not from
// pdf.js's). Every letter or digit of the page remembers which text item and offset it came from.
// A quoted table row is found cell by cell: a PDF draws a table's cells as separate text items,
// often column by column, so the row's text is nowhere in one piece; its cells are found on one
// line of the page, left to right.

import { el } from "./dom.js";
import { rowCells } from "./rows.js";

function searchable(text) {
  const chars = [];
  let offset = 0;
  for (const char of text) {
    for (const folded of char.normalize("NFKC").toLowerCase()) {
      if (/[\p{L}\p{N}]/u.test(folded)) chars.push({ folded, offset, length: char.length });
    }
    offset += char.length;
  }
  return chars;
}

function folded(text) {
  return searchable(text).map((c) => c.folded).join("");
}

function pageChars(strings) {
  const page = [];
  strings.forEach((text, item) => {
    for (const c of searchable(text)) page.push({ ...c, item });
  });
  return page;
}

/** Marks `quote` in the text layer's `divs` (whose texts are `strings`): "full", "partial" or "none". */
export function highlightQuote(divs, strings, quote) {
  const page = pageChars(strings);
  const haystack = page.map((c) => c.folded).join("");
  const cells = rowCells(quote);
  if (cells) {
    const found = highlightRow(divs, strings, page, haystack, cells);
    if (found !== "none") return found;
  }
  const words = quote.split(/\s+/).filter((w) => w && w !== "|");
  // The whole quote, or else its longest beginning of at least four words.
  for (let count = words.length; count >= Math.min(4, words.length); count -= 1) {
    const needle = folded(words.slice(0, count).join(" "));
    if (needle.length < 8 && count < words.length) break;
    // Every page character folds to exactly one string position, so an index is a char index.
    const at = needle ? haystack.indexOf(needle) : -1;
    if (at < 0) continue;
    markRanges(divs, strings, [page.slice(at, at + needle.length)]);
    return count === words.length ? "full" : "partial";
  }
  return "none";
}

// --- a table row ------------------------------------------------------------------------------

function highlightRow(divs, strings, page, haystack, cells) {
  // Each cell with letters or digits, as a needle; "$", "—" and empty cells have nothing to find.
  const needles = cells.map(folded).filter(Boolean);
  if (!needles.length) return "none";
  const boxes = new Map(); // item -> its box on the page
  const box = (item) => {
    if (!boxes.has(item)) boxes.set(item, divs[item] ? divs[item].getBoundingClientRect() : null);
    return boxes.get(item);
  };
  const found = needles.map((needle) => occurrences(page, haystack, needle, box, strings));
  // The row is where its first findable cell (its label, mostly) has the most of the others
  // beside it, on its line and to its right, in order.
  let best = [];
  for (let first = 0; first < found.length && best.length < 2; first += 1) {
    for (const anchor of found[first]) {
      const row = [anchor];
      for (const later of found.slice(first + 1)) {
        const last = row[row.length - 1];
        const next = later.find((o) => o.x > last.x && onLine(o, anchor));
        if (next) row.push(next);
      }
      if (row.length > best.length) best = row;
    }
  }
  if (best.length < Math.min(2, needles.length)) return "none";
  markRanges(divs, strings, best.map((o) => o.chars));
  return best.length === needles.length ? "full" : "partial";
}

function occurrences(page, haystack, needle, box, strings) {
  // Where `needle` stands as a whole word or number ("9" not inside "1,948"), with its place.
  const found = [];
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) {
    const end = at + needle.length;
    if (!apart(page, at) || !apart(page, end)) continue;
    const chars = page.slice(at, end);
    const first = chars[0];
    const lines = [...new Set(chars.map((c) => c.item))].map(box).filter(Boolean);
    const start = box(first.item);
    if (!start || !lines.length) continue;
    const share = strings[first.item].length ? first.offset / strings[first.item].length : 0;
    found.push({ chars, lines, x: start.left + share * start.width });
  }
  return found.sort((a, b) => a.x - b.x);
}

function apart(page, at) {
  // Whether page characters at-1 and at are in different words: other items, or something
  // that is no letter or digit between them.
  if (at <= 0 || at >= page.length) return true;
  const before = page[at - 1];
  const after = page[at];
  return before.item !== after.item || before.offset + before.length < after.offset;
}

function onLine(occurrence, anchor) {
  // A cell is on the row's line when its middle is within one of the label's lines (a wrapped
  // label has its numbers beside its first or its last line).
  return occurrence.lines.some((cell) => {
    const middle = (cell.top + cell.bottom) / 2;
    return anchor.lines.some((line) => middle >= line.top && middle <= line.bottom);
  });
}

// --- marking ----------------------------------------------------------------------------------

function markRanges(divs, strings, runs) {
  const spans = new Map(); // item -> [[start, end), ...] in its text
  for (const chars of runs) {
    const mine = new Map();
    for (const c of chars) {
      const span = mine.get(c.item);
      if (span) span[1] = c.offset + c.length;
      else mine.set(c.item, [c.offset, c.offset + c.length]);
    }
    for (const [item, span] of mine) spans.set(item, [...(spans.get(item) || []), span]);
  }
  for (const [item, ranges] of spans) {
    const div = divs[item];
    const text = strings[item];
    if (!div) continue;
    const nodes = [];
    let at = 0;
    for (const [start, end] of ranges.sort((a, b) => a[0] - b[0])) {
      if (start < at) continue;
      nodes.push(document.createTextNode(text.slice(at, start)),
        el("mark", { class: "quote-mark", text: text.slice(start, end) }));
      at = end;
    }
    nodes.push(document.createTextNode(text.slice(at)));
    div.replaceChildren(...nodes);
  }
}
