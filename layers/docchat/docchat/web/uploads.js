// Uploads from the page: straight to the API (local), or to the documents bucket with a
// presigned URL (cloud), into the collection the panel shows, listed there while they travel.

import { api } from "./api.js";
import { chosenCollection } from "./collections.js";
import { config } from "./config.js";
import { announce } from "./dom.js";
import { awaitPipeline, refreshDocs, showUploadError, showUploaded, trackUpload, untrackUpload } from "./documents.js";
import { errorText, unreachable } from "./errors.js";
import { shownName } from "./names.js";

/** Sends one chosen file; a failure is shown above the list, never thrown. */
export async function uploadFile(file) {
  // The collection shown when the file was chosen, even if another is chosen meanwhile.
  const collection = chosenCollection();
  const key = trackUpload(file.name);
  const name = shownName(file.name);
  try {
    const limit = config.max_upload_bytes;
    if (limit && file.size > limit) {
      throw new Error(`the file is larger than the ${Math.round(limit / 1048576)} MB an upload may have`);
    }
    if (config.upload === "presigned") await uploadToBucket(file, collection);
    else await uploadDirect(file, collection);
    announce(`${name} uploaded; indexing has started.`);
  } catch (error) {
    const message = unreachable(error) ? "the server could not be reached" : error.message;
    showUploadError(`Could not upload ${name}: ${message}`);
  } finally {
    untrackUpload(key);
    await refreshDocs();
  }
}

async function uploadDirect(file, collection) {
  // The file's real name goes to the server; only what the page shows is escaped.
  const query = `filename=${encodeURIComponent(file.name)}&collection=${encodeURIComponent(collection)}`;
  const response = await api(`documents?${query}`, {
    method: "POST",
    // A PDF as one; any other type as bytes (the server reads the type from the name).
    headers: { "Content-Type": /\.pdf$/i.test(file.name) ? "application/pdf" : "application/octet-stream" },
    body: file,
  });
  if (!response.ok) throw new Error(await errorText(response));
  // Listed at once as the server answered (QUEUED): a list read that fails or lags must not
  // leave the panel without it, idle, for the 30 s between reads of a list with nothing busy.
  showUploaded(await response.json());
}

async function uploadToBucket(file, collection) {
  const response = await api("documents/upload-url", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ filename: file.name, size: file.size, collection }),
  });
  if (!response.ok) throw new Error(await errorText(response));
  const ticket = await response.json();
  const put = await fetch(ticket.url, { method: ticket.method, headers: ticket.headers, body: file });
  if (!put.ok) throw new Error(`the bucket refused the file (HTTP ${put.status})`);
  awaitPipeline(ticket.doc_id, file.name, collection);
}
