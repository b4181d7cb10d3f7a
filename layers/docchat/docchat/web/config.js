// What the server tells the page (GET /config): how uploads work, how answers are written, and
// the limits of a chat request, which the page keeps to so that the API never refuses a question
// for its length.

import { api } from "./api.js";

// A server that does not send `limits` takes at least these (docchat/limits.py). The total is
// below the API's 100 000 characters to leave room; a server that sends its own total is taken
// at its word, since the page counts UTF-16 units and so never fewer characters than the server.
const LIMITS = {
  max_messages: 50,
  max_message_chars: 20000,
  max_total_chars: 90000,
  max_doc_ids: 100,
  max_title_chars: 120,
  max_feedback_chars: 2000,
};

/** The server's configuration, as read at start-up (defaults until then). */
export const config = { upload: "none", max_upload_bytes: 0, answers: "", limits: { ...LIMITS } };

/** Reads /config into `config`; a failure leaves the defaults (the documents call reports it). */
export async function loadConfig() {
  try {
    const response = await api("config");
    if (response.ok) {
      const read = await response.json();
      Object.assign(config, read, { limits: { ...LIMITS, ...(read.limits || {}) } });
    }
  } catch (_) { /* the defaults stand */ }
  return config;
}
