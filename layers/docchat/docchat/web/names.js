// Document names and titles as the page shows them.

/** The last part of a path or S3 key. */
export function fileName(source) {
  return source.split(/[\\/]/).pop();
}

/** A document's title, or its file name when it has none. */
export function docTitle(doc) {
  return doc.title || fileName(doc.source);
}
