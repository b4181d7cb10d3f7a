// docchat's page, as native ES modules with no build step: this entry module wires the others
// together and to the page's controls. Each module holds one concern: auth.js (sign-in),
// api.js (the API client), config.js (GET /config), chat.js (the conversation and its scope),
// stream.js and events.js (the answer's events), messages.js (an answer on the page),
// collections.js (the collection picker), documents.js, uploads.js and sources.js (the documents
// panel), conversations.js (saved conversations), viewer.js and highlight.js (a cited PDF),
// dom.js, names.js and errors.js (shared helpers).

import { onSessionEnd, signIn, signOut, startAuth } from "./auth.js";
import {
  answering, ask, joinChat, newConversation, renderScope, renderSuggestions, stopAnswer, waitBeforeAsking,
} from "./chat.js";
import {
  loadCollections, mayWriteChosen, onCollectionChosen, showCount, wireCollections,
} from "./collections.js";
import { config, loadConfig } from "./config.js";
import { conversationHooks, startConversations } from "./conversations.js";
import { $, autosize } from "./dom.js";
import {
  docsOpen, listedCount, onDocsChanged, onSelectionChanged, refreshDocs, setDocsOpen, showUploadError,
  stopPolling,
} from "./documents.js";
import { refreshSources } from "./sources.js";
import { uploadFile } from "./uploads.js";
import { openLinkedPage } from "./viewer.js";

function showUpload() {
  // Into the collection the panel shows, when the server takes uploads and the user may write it.
  $("upload").hidden = config.upload === "none" || !mayWriteChosen();
}

function showConfig() {
  const upload = config.upload;
  showUpload();
  const note = $("upload-note");
  note.hidden = upload !== "presigned";
  note.textContent = upload === "presigned"
    ? "Uploads go to the documents bucket; indexing takes a minute or two."
    : "";
  $("mode").textContent = config.answers === "extractive" ? "quotes only · no language model" : config.answers || "";
  $("question").maxLength = config.limits.max_message_chars;
}

function wireComposer() {
  const question = $("question");
  $("ask").addEventListener("submit", (event) => {
    event.preventDefault();
    if (answering()) {
      stopAnswer();
      return;
    }
    const text = question.value;
    if (!text.trim()) return;
    question.value = "";
    autosize(question);
    ask(text);
  });
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!answering()) $("ask").requestSubmit();
    }
  });
  question.addEventListener("input", () => autosize(question));
  $("new-chat").addEventListener("click", newConversation);
}

/** The collections read again (their counts, and whether the chosen one is still readable),
 * then the chosen one's documents. */
async function reloadPanel() {
  await loadCollections();
  showUpload();
  renderScope();
  await refreshDocs();
}

function wirePanel() {
  $("file").addEventListener("change", async (event) => {
    const files = [...event.target.files];
    event.target.value = "";
    showUploadError("");
    await Promise.all(files.map(uploadFile));
  });
  $("docs-toggle").addEventListener("click", () => setDocsOpen(!docsOpen()));
  $("scrim").addEventListener("click", () => setDocsOpen(false));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && docsOpen()) {
      setDocsOpen(false);
      $("docs-toggle").focus();
    }
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !$("app").hidden) reloadPanel();
  });
  $("docs").querySelector("h2").tabIndex = -1;
  onDocsChanged(renderSuggestions);
  onDocsChanged(() => showCount(listedCount()));
  onDocsChanged(refreshSources);
  wireCollections();
  onCollectionChosen(() => {
    showUpload();
    renderScope();
    refreshDocs();
  });
  onSelectionChanged(renderScope);
  renderScope();
  onSessionEnd(stopPolling);
}

async function signedInAndConfigured() {
  if (!(await startAuth())) return false;
  $("question").focus();
  // After the first call: a server that needs a token asks for it once.
  await loadConfig();
  showConfig();
  return true;
}

function start() {
  wireComposer();
  wirePanel();
  joinChat(conversationHooks);
  $("sign-in").addEventListener("click", signIn);
  $("sign-out").addEventListener("click", signOut);
  const ready = signedInAndConfigured().then(async (yes) => {
    if (!yes) return false;
    openLinkedPage();
    await reloadPanel();
    return true;
  });
  // A question asked before the page knows how to call the API, its limits, the collection it
  // shows and the open conversation waits for them (else it would go unsigned, unsaved, or in
  // the wrong scope).
  waitBeforeAsking(ready.then((yes) => yes && startConversations()).catch(() => {}));
}

start();
