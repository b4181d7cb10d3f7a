// Uploads from the page: straight to the API (local), or to the documents bucket with a
// presigned URL (cloud), listed in the documents panel while they travel.

import { api } from "./api.js";
import { config } from "./config.js";
import { announce } from "./dom.js";
import { awaitPipeline, refreshDocs, showUploadError, trackUpload, untrackUpload } from "./documents.js";
import { errorText, unreachable } from "./errors.js";
import { shownName } from "./names.js";

/** Sends one chosen file; a failure is shown above the list, never thrown. */
export async function uploadFile(file) {
  const key = trackUpload(file.name);
  const name = shownName(file.name);
  try {
    const limit = config.max_upload_bytes;
    if (limit && file.size > limit) {
      throw new Error(`the file is larger than the ${Math.round(limit / 1048576)} MB an upload may have`);
    }
    if (config.upload === "presigned") await uploadToBucket(file);
    else await uploadDirect(file);
    announce(`${name} uploaded; indexing has started.`);
  } catch (error) {
    const message = unreachable(error) ? "the server could not be reached" : error.message;
    showUploadError(`Could not upload ${name}: ${message}`);
  } finally {
    untrackUpload(key);
    await refreshDocs();
  }
}

async function uploadDirect(file) {
  // The file's real name goes to the server; only what the page shows is escaped.
  const response = await api(`documents?filename=${encodeURIComponent(file.name)}`, {
    method: "POST",
    // A PDF as one; any other type as bytes (the server reads the type from the name).
    headers: { "Content-Type": /\.pdf$/i.test(file.name) ? "application/pdf" : "application/octet-stream" },
    body: file,
  });
  if (!response.ok) throw new Error(await errorText(response));
}

async function uploadToBucket(file) {
  const response = await api("documents/upload-url", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ filename: file.name, size: file.size }),
  });
  if (!response.ok) throw new Error(await errorText(response));
  const ticket = await response.json();
  const put = await fetch(ticket.url, { method: ticket.method, headers: ticket.headers, body: file });
  if (!put.ok) throw new Error(`the bucket refused the file (HTTP ${put.status})`);
  awaitPipeline(ticket.doc_id, file.name);
}
