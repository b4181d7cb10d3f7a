// docchat's page, as native ES modules with no build step: this entry module wires the others
// together and to the page's controls. Each module holds one concern: auth.js (sign-in),
// api.js (the API client), config.js (GET /config), chat.js (the conversation), stream.js and
// events.js (the answer's events), messages.js (an answer on the page), documents.js and
// uploads.js (the documents panel), conversations.js (saved conversations), viewer.js and
// highlight.js (a cited PDF), dom.js, names.js and errors.js (shared helpers).

import { onSessionEnd, signIn, signOut, startAuth } from "./auth.js";
import {
  answering, ask, joinChat, newConversation, renderSuggestions, stopAnswer, waitBeforeAsking,
} from "./chat.js";
import { loadConfig } from "./config.js";
import { conversationHooks, startConversations } from "./conversations.js";
import { $, autosize } from "./dom.js";
import {
  docsOpen, onDocsChanged, refreshDocs, setDocsOpen, showUploadError, stopPolling,
} from "./documents.js";
import { uploadFile } from "./uploads.js";
import { openLinkedPage } from "./viewer.js";

function showConfig(config) {
  const upload = config.upload;
  $("upload").hidden = upload === "none";
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
    if (!document.hidden && !$("app").hidden) refreshDocs();
  });
  $("docs").querySelector("h2").tabIndex = -1;
  onDocsChanged(renderSuggestions);
  onSessionEnd(stopPolling);
}

async function signedInAndConfigured() {
  if (!(await startAuth())) return false;
  $("question").focus();
  // After the first call: a server that needs a token asks for it once.
  showConfig(await loadConfig());
  return true;
}

function start() {
  wireComposer();
  wirePanel();
  joinChat(conversationHooks);
  $("sign-in").addEventListener("click", signIn);
  $("sign-out").addEventListener("click", signOut);
  const ready = signedInAndConfigured();
  ready.then((yes) => {
    if (!yes) return;
    refreshDocs();
    openLinkedPage();
  });
  // A question asked before the page knows how to call the API, its limits and the open
  // conversation waits for them (else it would go unsigned, or unsaved).
  waitBeforeAsking(ready.then((yes) => yes && startConversations()).catch(() => {}));
}

start();
