// Saved conversations: the list (new, open, rename, delete) at the top of the side panel, and
// the open conversation brought back after a reload or a server restart. The server keeps each
// user's conversations (GET/PATCH/DELETE /conversations, POST /chat with conversation_id); this
// page remembers only which one is open.

import { api } from "./api.js";
import { userId } from "./auth.js";
import { answering, messageCount, newConversation, restoreMessages, stopAnswer } from "./chat.js";
import { config } from "./config.js";
import { $, announce, el } from "./dom.js";
import { docsOpen, setDocsOpen } from "./documents.js";
import { errorText } from "./errors.js";
import { feedbackControls } from "./feedback.js";

const convos = {
  available: false, // false until the server says it keeps conversations
  list: [], // {id, title, updated}, newest first
  openId: null,
  renaming: null, // the id whose title is being edited
};

function openKey() {
  // One open conversation per signed-in user of this browser.
  const user = userId();
  return `docchat.conversation${user ? `.${user}` : ""}`;
}

function setOpen(id) {
  convos.openId = id;
  if (id) localStorage.setItem(openKey(), id);
  else localStorage.removeItem(openKey());
  renderConvos();
}

function convoPanel() {
  let panel = $("convos");
  if (panel) return panel;
  panel = el("section", { id: "convos", class: "convos", "aria-labelledby": "convos-title" },
    el("h2", { id: "convos-title", text: "Conversations" }),
    el("ul", { id: "convo-list", class: "convo-list" }),
    el("p", { id: "convos-empty", class: "convos-empty", text: "Your conversations will be listed here." }),
    el("p", { id: "convos-error", class: "alert", role: "alert", hidden: true }));
  $("docs").prepend(panel);
  return panel;
}

function renameForm(convo) {
  const input = el("input", { type: "text", class: "convo-title-input", value: convo.title,
    maxlength: String(config.limits.max_title_chars), "aria-label": "New title" });
  const form = el("form", { class: "convo-rename" }, input,
    el("button", { type: "submit", class: "button primary", text: "Save" }),
    el("button", { type: "button", class: "button ghost", text: "Cancel",
      onclick: () => stopRenaming(convo.id) }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    renameConvo(convo.id, input.value);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      stopRenaming(convo.id);
    }
  });
  queueMicrotask(() => { input.focus(); input.select(); });
  return form;
}

function convoRow(convo) {
  const current = convo.id === convos.openId;
  const row = el("li", { class: `convo${current ? " current" : ""}`, "data-id": convo.id });
  if (convos.renaming === convo.id) {
    row.append(renameForm(convo));
    return row;
  }
  row.append(
    el("button", { type: "button", class: "convo-open", text: convo.title,
      "aria-current": current ? "true" : null, onclick: () => openConvo(convo.id) }),
    el("button", { type: "button", class: "button ghost convo-action", text: "Rename",
      "aria-label": `Rename “${convo.title}”`, onclick: () => startRenaming(convo.id) }),
    el("button", { type: "button", class: "button ghost convo-action", text: "Delete",
      "aria-label": `Delete “${convo.title}”`, onclick: () => deleteConvo(convo.id) }));
  return row;
}

function renderConvos() {
  const panel = convoPanel();
  panel.hidden = !convos.available;
  $("convo-list").replaceChildren(...convos.list.map(convoRow));
  $("convos-empty").hidden = convos.list.length > 0;
}

function showConvoError(text) {
  convoPanel();
  const box = $("convos-error");
  box.textContent = text;
  box.hidden = !text;
}

async function loadConvos() {
  const response = await api("conversations");
  if (response.status === 501) {
    convos.available = false; // a server that keeps none: the page works as before
    renderConvos();
    return false;
  }
  if (!response.ok) throw new Error(await errorText(response));
  convos.available = true;
  convos.list = (await response.json()).conversations;
  showConvoError("");
  renderConvos();
  return true;
}

async function openConvo(id, { focus = true, unlessAsked = false } = {}) {
  // `unlessAsked`: the page restoring the open conversation, which a question asked meanwhile
  // (answered in a conversation of its own once this is done) must not replace.
  if (!unlessAsked && answering()) stopAnswer();
  const response = await api(`conversations/${encodeURIComponent(id)}`);
  if (unlessAsked && messageCount()) {
    setOpen(null);
    return;
  }
  if (response.status === 404) {
    if (convos.openId === id) setOpen(null);
    await loadConvos();
    announce("That conversation is gone.");
    return;
  }
  if (!response.ok) {
    showConvoError(`The conversation could not be opened: ${await errorText(response)}`);
    return;
  }
  const convo = await response.json();
  setOpen(convo.id); // before its answers are shown: their feedback is this conversation's
  restoreMessages(convo.messages);
  if (docsOpen()) setDocsOpen(false);
  announce(`Opened “${convo.title}”.`);
  if (focus) $("question").focus();
}

function startRenaming(id) {
  convos.renaming = id;
  renderConvos();
}

function stopRenaming(id) {
  convos.renaming = null;
  renderConvos();
  focusRow(id, ".convo-action");
}

function focusRow(id, selector) {
  const row = [...$("convo-list").children].find((r) => r.dataset.id === id);
  const target = row && row.querySelector(selector);
  (target || $("new-chat")).focus();
}

async function renameConvo(id, title) {
  if (!title.trim()) return;
  const response = await api(`conversations/${encodeURIComponent(id)}`, {
    method: "PATCH",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ title }),
  });
  if (!response.ok) {
    showConvoError(`The conversation could not be renamed: ${await errorText(response)}`);
    return;
  }
  convos.renaming = null;
  await loadConvos();
  announce(`Renamed to “${(await response.json()).title}”.`);
  focusRow(id, ".convo-open");
}

async function deleteConvo(id) {
  const index = convos.list.findIndex((c) => c.id === id);
  const title = index >= 0 ? convos.list[index].title : "";
  const response = await api(`conversations/${encodeURIComponent(id)}`, { method: "DELETE" });
  if (!response.ok && response.status !== 404) {
    showConvoError(`The conversation could not be deleted: ${await errorText(response)}`);
    return;
  }
  if (id === convos.openId) newConversation();
  await loadConvos();
  announce(`Deleted “${title}”.`);
  const next = convos.list[Math.min(index, convos.list.length - 1)];
  if (next) focusRow(next.id, ".convo-open");
  else $("new-chat").focus();
}

function withConversation(body, count) {
  if (!convos.available) return body;
  if (!convos.openId) {
    // Listed at once, titled as the server titles it (the question's first words); the list
    // is read again from the server when the answer is done.
    const question = body.messages[body.messages.length - 1].content.split(/\s+/).join(" ").trim();
    const most = config.limits.max_title_chars;
    const title = question.length <= most ? question : `${question.slice(0, most - 1).replace(/\s+\S*$/, "")}…`;
    convos.list.unshift({ id: crypto.randomUUID(), title: title || "Conversation", updated: Date.now() / 1000 });
    setOpen(convos.list[0].id);
  }
  // `after`: how many saved messages come before this question (the `count` messages of the
  // transcript, but the question). A saved answer beyond them (this question asked again, or an
  // answer that was stopped) is replaced by the new one.
  return { ...body, conversation_id: convos.openId, after: count - 1 };
}

/** What the chat asks of saved conversations (chat.js's joinChat). */
export const conversationHooks = {
  body: withConversation,
  answered: () => { if (convos.available) loadConvos().catch(() => {}); },
  saved: (view, position, feedback) => {
    if (convos.available && convos.openId) view.footer.append(feedbackControls(convos.openId, position, feedback));
  },
  cleared: () => setOpen(null),
};

/** Reads the saved conversations, and opens the one that was open before a reload. */
export async function startConversations() {
  try {
    if (!(await loadConvos())) return;
  } catch (error) {
    // The page still answers, without saving; say why the list is missing.
    convos.available = true;
    renderConvos();
    showConvoError(`Saved conversations could not be loaded: ${error.message}`);
    convos.available = false;
    return;
  }
  const saved = localStorage.getItem(openKey());
  if (saved && convos.list.some((c) => c.id === saved)) await openConvo(saved, { focus: false, unlessAsked: true });
  else if (saved) setOpen(null);
}
