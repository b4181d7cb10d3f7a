// Document names and titles as the page shows them.
//
// A name or title may hold Unicode's bidirectional controls: "report\u202Egnp.pdf" (U+202E,
// right-to-left override) reads as "reportfdp.png". Each control is shown as a visible escape,
// "report<U+202E>gnp.pdf", rather than removed: a stripped name would look harmless and differ
// silently from the file's real name, while the escape tells the reader what the name holds and
// keeps two such names apart. The names sent back to the server (uploads, deletes, the file the
// viewer downloads) are the originals; only what is shown is escaped. The CLI does the same
// (docchat/cli/display.py).

// Unicode's Bidi_Control characters: ALM, LRM, RLM, the embeddings and overrides, the isolates;
// and the characters that take no room, with which "rep\u200Bort.pdf" looks like "report.pdf":
// zero width space, non-joiner and joiner, word joiner, the invisible operators, the Mongolian
// vowel separator, the zero width no-break space.
const BIDI_CONTROLS =
  /[\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;

/** `text` with every bidirectional control and zero-width character shown as <U+XXXX>. */
export function shownName(text) {
  return String(text).replace(BIDI_CONTROLS,
    (c) => `<U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`);
}

/** Whether a document's source is a web page's URL (a synced site's, `docchat sync`). */
export function isUrl(source) {
  return /^https?:\/\//i.test(source || "");
}

/** The last part of a path or S3 key, as stored (not escaped); a web page's address without
 * its scheme ("docs.example.org/guide.html"), its escapes read. */
export function fileName(source) {
  if (isUrl(source)) {
    const bare = source.replace(/^https?:\/\//i, "");
    try {
      return decodeURI(bare);
    } catch {
      return bare;
    }
  }
  return source.split(/[\\/]/).pop();
}

/** The file name a document is listed by: the API's, or a synced page's address. */
export function docFileName(doc) {
  return isUrl(doc.source) ? fileName(doc.source) : doc.file_name || fileName(doc.source);
}

/** A document's title for display, or its file name when it has none. */
export function docTitle(doc) {
  return shownName(doc.title || fileName(doc.source));
}

/** A citation's location label ("Slide 2: Results"), or "" for a PDF page, whose citation
 * leaves the field out. */
export function labelOf(citation) {
  return "label" in citation ? citation.label : "";
}
