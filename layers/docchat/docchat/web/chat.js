// The conversation: the API keeps no state, so the messages live here and the newest that fit
// the server's limits go with every question, in the scope chosen beside the question box (the
// collection the panel shows, every collection the user may read, or the selected documents);
// the answer streams into the transcript.

import { api } from "./api.js";
import { chooseCollection, chosenCollection } from "./collections.js";
import { config } from "./config.js";
import { $, announce, autosize, el } from "./dom.js";
import { indexedTitles, selectDocs, selectedDocs } from "./documents.js";
import { errorText, unreachable } from "./errors.js";
import { handleEvent } from "./events.js";
import { AnswerView, addUserMessage, scrollToEnd, showWelcome } from "./messages.js";
import { shownName } from "./names.js";
import { sseEvents } from "./stream.js";

const chat = {
  messages: [], // {role, content, scope}: the scope a question was asked in
  running: null, // {controller, view} while an answer streams
  loaded: Promise.resolve(), // what a question waits for (the saved conversations read)
  conversation: 0, // bumped by "new conversation", so a late answer cannot join the next one
};

// Where saved conversations (conversations.js) join in: what a chat sends, when an answer is
// finished, when an answer on the page is a saved one (its position among the conversation's
// messages, and its feedback), and when the page starts a new conversation.
const hooks = { body: (body) => body, answered: () => {}, saved: () => {}, cleared: () => {} };

/** Lets saved conversations change what is sent and hear when answers end. */
export function joinChat(given) {
  Object.assign(hooks, given);
}

/** Questions wait for `promise` (the saved conversations read) before they are sent. */
export function waitBeforeAsking(promise) {
  chat.loaded = promise;
}

/** The scope selector's options, for the chosen collection and the selected documents. */
export function renderScope() {
  const select = $("scope");
  const chosen = select.value || "collection";
  const selected = selectedDocs().length;
  select.replaceChildren(
    el("option", { value: "collection", text: `This collection: ${shownName(chosenCollection())}` }),
    el("option", { value: "all", text: "Every collection I may read" }),
    el("option", { value: "selected", text: `The selected documents (${selected})`, disabled: !selected }));
  select.value = chosen === "selected" && !selected ? "collection" : chosen;
}

/** What the question is asked over, as /chat takes it (null: every collection). */
function questionScope() {
  const chosen = $("scope").value;
  if (chosen === "selected" && selectedDocs().length) return { doc_ids: selectedDocs() };
  if (chosen === "all") return null;
  return { collections: [chosenCollection()] };
}

/** A question's scope in words, or "" for every collection the user may read. */
function scopeText(scope) {
  if (scope?.doc_ids?.length) {
    const n = scope.doc_ids.length;
    return `Asked about ${n} selected ${n === 1 ? "document" : "documents"}`;
  }
  if (scope?.collections?.length) return `Asked in ${scope.collections.map(shownName).join(", ")}`;
  return "";
}

function addQuestion(text, scope) {
  addUserMessage(text);
  const said = scopeText(scope);
  if (said) $("transcript").lastElementChild.append(el("p", { class: "msg-scope", text: said }));
}

/** The selector as a reopened conversation's last question had it (when the page can show it). */
function restoreScope(scope) {
  const select = $("scope");
  if (scope?.doc_ids?.length) {
    selectDocs(scope.doc_ids);
    select.value = "selected";
  } else if (scope?.collections?.length === 1) {
    // A collection the user may no longer read stays unchosen: the selector keeps its choice.
    chooseCollection(scope.collections[0]);
    if (chosenCollection() === scope.collections[0]) select.value = "collection";
  } else if (!scope) {
    select.value = "all";
  }
}

/** How many messages the transcript holds. */
export const messageCount = () => chat.messages.length;

/** True while an answer streams. */
export const answering = () => Boolean(chat.running);

/** Stops the answer that streams, if any. */
export function stopAnswer() {
  if (chat.running) chat.running.controller.abort();
}

/** The newest of `messages` that fit `limits` (config.limits), oldest first, starting with a question. */
export function recentMessages(messages, limits) {
  const kept = [];
  let total = 0;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const content = messages[i].content.slice(0, limits.max_message_chars);
    if (kept.length === limits.max_messages || (kept.length && total + content.length > limits.max_total_chars)) break;
    total += content.length;
    kept.unshift({ role: messages[i].role, content });
  }
  while (kept.length > 1 && kept[0].role !== "user") kept.shift();
  return kept;
}

function setRunning(running) {
  const send = $("send");
  send.textContent = running ? "Stop" : "Send";
  send.classList.toggle("stop", Boolean(running));
  send.setAttribute("aria-label", running ? "Stop the answer" : "Send the question");
}

function lastMessage() {
  return chat.messages[chat.messages.length - 1];
}

function retryAnswer(view) {
  // The same question again, in place of this answer (only the newest answer has the button).
  if (chat.running || !view.root.isConnected) return;
  if (chat.messages.length && lastMessage().role === "assistant") chat.messages.pop();
  if (!chat.messages.length || lastMessage().content !== view.question) {
    chat.messages.push({ role: "user", content: view.question, scope: questionScope() });
  }
  view.root.remove();
  runAnswer();
}

async function streamAnswer(view, signal) {
  // A question asked before the page has read the saved conversations would not be saved.
  await chat.loaded;
  const body = { messages: recentMessages(chat.messages, config.limits) };
  // The question goes in the scope it was asked in (a retry asks it in the same one).
  const scope = lastMessage().scope;
  if (scope) body.scope = scope;
  const response = await api("chat", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(hooks.body(body, chat.messages.length)),
    signal,
  });
  if (!response.ok) throw new Error(await errorText(response));
  let finished = false;
  for await (const event of sseEvents(response, signal)) finished = handleEvent(view, event) || finished;
  if (!finished) throw new Error("the connection closed before the answer was complete.");
}

async function runAnswer() {
  for (const old of document.querySelectorAll(".answer-tools .retry")) old.remove();
  const view = new AnswerView({ question: lastMessage().content, onRetry: retryAnswer });
  const controller = new AbortController();
  const conversation = chat.conversation;
  chat.running = { controller, view };
  setRunning(true);
  announce("Searching the documents…");
  try {
    await streamAnswer(view, controller.signal);
    chat.messages.push({ role: "assistant", content: view.text || "(no answer)" });
    hooks.saved(view, chat.messages.length - 1, null);
    hooks.answered();
    announce(`Answer complete${view.citations.length ? `, with ${view.citations.length} sources` : ""}.`);
  } catch (error) {
    if (conversation !== chat.conversation) {
      // "New conversation" ended this answer; nothing of it belongs to the new one.
    } else if (controller.signal.aborted) {
      view.stopped();
      if (view.text) chat.messages.push({ role: "assistant", content: view.text });
      else chat.messages.pop();
    } else {
      const message = unreachable(error) ? "the server could not be reached. Check your connection and retry." : error.message;
      const retry = view.fail(message, () => {
        view.root.remove();
        runAnswer();
      });
      announce(`The answer failed: ${message}`);
      retry.focus();
    }
  } finally {
    if (chat.running && chat.running.controller === controller) chat.running = null;
    setRunning(false);
  }
}

/** Asks `question` in the open conversation. */
export function ask(question) {
  const text = question.trim();
  if (!text || chat.running) return;
  // A question that failed and was not retried is dropped: the API wants turns to alternate.
  if (chat.messages.length && lastMessage().role === "user") {
    chat.messages.pop();
    for (const old of document.querySelectorAll(".msg.failed .retry")) old.disabled = true;
  }
  const scope = questionScope();
  chat.messages.push({ role: "user", content: text, scope });
  addQuestion(text, scope);
  runAnswer();
}

function clearTranscript() {
  chat.conversation += 1;
  if (chat.running) chat.running.controller.abort();
  chat.messages = [];
  for (const message of $("transcript").querySelectorAll(".msg")) message.remove();
}

/** A saved conversation ({role, content, citations, stopped, feedback}) back in the transcript. */
export function restoreMessages(messages) {
  clearTranscript();
  showWelcome(!messages.length);
  let question = "";
  let scope = null;
  for (const [position, message] of messages.entries()) {
    chat.messages.push({ role: message.role, content: message.content, scope: message.scope || null });
    if (message.role === "user") {
      addQuestion(message.content, message.scope);
      question = message.content;
      scope = message.scope || null;
      continue;
    }
    const view = new AnswerView({ question, onRetry: retryAnswer });
    view.stepsBox.hidden = true;
    view.delta(message.content);
    view.finish(message.citations || []);
    if (message.stopped) view.stopped();
    hooks.saved(view, position, message.feedback || null);
  }
  // Retry asks the newest question again; older answers have no Retry, as while chatting.
  const retries = [...$("transcript").querySelectorAll(".answer-tools .retry")];
  for (const old of retries.slice(0, -1)) old.remove();
  if (question) restoreScope(scope);
  if (!messages.length) renderSuggestions();
  scrollToEnd(true);
}

/** An empty transcript, the suggestions, and the question box ready. */
export function newConversation() {
  clearTranscript();
  hooks.cleared();
  showWelcome(true);
  renderSuggestions();
  const question = $("question");
  question.value = "";
  autosize(question);
  question.focus();
  announce("New conversation started.");
}

function suggestionsFor(titles) {
  const quoted = titles.map((t) => `“${t}”`);
  if (!titles.length) return [];
  if (titles.length === 1) {
    return [
      `What is ${quoted[0]} about?`,
      `What are the key points of ${quoted[0]}?`,
      `What does ${quoted[0]} say about exceptions?`,
    ];
  }
  const perTitle = quoted.slice(0, 3).map((t) => `What is ${t} about?`);
  return [...perTitle, `How do ${quoted[0]} and ${quoted[1]} differ?`].slice(0, 4);
}

/** Suggested questions from the indexed documents' titles, while the transcript is empty. */
export function renderSuggestions() {
  if (chat.messages.length) return;
  const box = $("suggestions");
  const questions = suggestionsFor(indexedTitles());
  if (!questions.length) {
    const hint = config.upload === "none"
      ? "No document is indexed yet: add some with `docchat ingest`."
      : "No document is indexed yet: upload one (PDF, Word, PowerPoint, Excel, HTML, Markdown or text) in the documents panel.";
    box.replaceChildren(el("p", { class: "note", text: hint }));
    return;
  }
  const current = [...box.querySelectorAll("button")].map((b) => b.textContent).join("|");
  if (current === questions.join("|")) return;
  box.replaceChildren(...questions.map((q) => el("button", {
    type: "button", class: "suggestion", text: q, onclick: () => ask(q),
  })));
}
