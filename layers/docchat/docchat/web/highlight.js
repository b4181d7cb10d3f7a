// The cited quote found in pdf.js's text layer and marked, ignoring case, white space,
// punctuation and line-break hyphens (the answer's quote comes from the indexed text, not from
// pdf.js's). Every letter or digit of the page remembers which text item and offset it came from.

import { el } from "./dom.js";

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

/** Marks `quote` in the text layer's `divs` (whose texts are `strings`): "full", "partial" or "none". */
export function highlightQuote(divs, strings, quote) {
  const page = [];
  strings.forEach((text, item) => {
    for (const c of searchable(text)) page.push({ ...c, item });
  });
  const haystack = page.map((c) => c.folded).join("");
  const words = quote.split(/\s+/).filter(Boolean);
  // The whole quote, or else its longest beginning of at least four words.
  for (let count = words.length; count >= Math.min(4, words.length); count -= 1) {
    const needle = searchable(words.slice(0, count).join(" ")).map((c) => c.folded).join("");
    if (needle.length < 8 && count < words.length) break;
    // Every page character folds to exactly one string position, so an index is a char index.
    const at = needle ? haystack.indexOf(needle) : -1;
    if (at < 0) continue;
    markRange(divs, strings, page.slice(at, at + needle.length));
    return count === words.length ? "full" : "partial";
  }
  return "none";
}

function markRange(divs, strings, chars) {
  const spans = new Map(); // item -> [start, end) in its text
  for (const c of chars) {
    const span = spans.get(c.item);
    if (span) span[1] = c.offset + c.length;
    else spans.set(c.item, [c.offset, c.offset + c.length]);
  }
  for (const [item, [start, end]] of spans) {
    const div = divs[item];
    const text = strings[item];
    if (!div) continue;
    div.replaceChildren(
      document.createTextNode(text.slice(0, start)),
      el("mark", { class: "quote-mark", text: text.slice(start, end) }),
      document.createTextNode(text.slice(end)));
  }
}
