// One handler per chat event of docchat/answer/events.py, given the answer's view and the
// event's data; `done` returns true. tests/unit/test_events.py fails when an event type has no
// handler here, and tests/web/test_page_events.py when a field read here is not in what the
// server sends.

import { shownName } from "./names.js";

function describeTool(call) {
  const input = call.input || {};
  if (call.name === "search_documents") return `Searching the documents for “${input.query || ""}”`;
  if (call.name === "read_pages") return `Reading pages ${input.first_page}–${input.last_page} of ${input.doc_id}`;
  if (call.name === "list_documents") return "Listing the documents";
  return `Using ${call.name}`;
}

function describeSources(data) {
  const passages = data.passages || [];
  if (!passages.length) return "No passage matched";
  const titles = [...new Set(passages.map((p) => shownName(p.title)))];
  const pages = [...new Set(passages.map((p) => p.page_start))].sort((a, b) => a - b);
  const noun = passages.length === 1 ? "passage" : "passages";
  return `Found ${passages.length} ${noun} in ${titles.join(", ")} (pages ${pages.join(", ")})`;
}

export const EVENT_HANDLERS = {
  status(view, data) {
    if (data.stage === "waking_index") view.step(data.message);
    else view.step(data.mode === "extractive" ? "Looking for passages (no language model: answers quote the documents)" : "Thinking…");
  },
  tool_call(view, data) {
    if (data.name === "search_documents") view.searches += 1;
    view.setTyping(true);
    view.step(describeTool(data));
  },
  sources(view, data) {
    view.step(describeSources(data), "found");
  },
  delta(view, data) {
    view.delta(data.text);
  },
  citations(view, data) {
    view.pendingCitations = data.citations || [];
  },
  error(view, data) {
    throw new Error(data.message || "the answer failed.");
  },
  done(view, data) {
    view.finish(view.pendingCitations, data.usage);
    return true;
  },
};

/** Shows one `{type, data}` event in `view`; true once the answer is done. */
export function handleEvent(view, event) {
  // An event type this page does not know is skipped: a newer server must not break it.
  const handler = Object.hasOwn(EVENT_HANDLERS, event.type) ? EVENT_HANDLERS[event.type] : null;
  return handler ? handler(view, event.data) === true : false;
}
