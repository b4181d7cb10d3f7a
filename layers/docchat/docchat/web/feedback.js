// Feedback under a saved answer: Helpful / Not helpful (toggle buttons, aria-pressed), and a
// comment once it is rated. The server keeps it with the answer in its conversation
// (PUT/DELETE /conversations/{id}/answers/{n}/feedback), so it is there again after a reload.

import { api } from "./api.js";
import { config } from "./config.js";
import { announce, el } from "./dom.js";
import { errorText } from "./errors.js";

const RATINGS = [
  { rating: "up", text: "👍", label: "Helpful", said: "Rated helpful." },
  { rating: "down", text: "👎", label: "Not helpful", said: "Rated not helpful." },
];

/** Feedback controls for the answer at `position` of saved conversation `conversationId`,
 * showing `feedback` (the saved rating, or null). */
export function feedbackControls(conversationId, position, feedback) {
  const state = { rating: feedback?.rating || null, comment: feedback?.comment || "" };
  const path = `conversations/${encodeURIComponent(conversationId)}/answers/${position}/feedback`;
  // An alert only once something failed (an answer with none has no alert in it).
  const error = el("div", { class: "feedback-error" });
  const commentButton = el("button", { type: "button", class: "button ghost feedback-comment",
    "aria-expanded": "false", text: "Comment" });
  const input = el("textarea", { class: "feedback-text", rows: "2",
    maxlength: String(config.limits.max_feedback_chars), "aria-label": "Your comment on this answer" });
  const form = el("form", { class: "feedback-form", hidden: true }, input,
    el("button", { type: "submit", class: "button primary", text: "Save comment" }),
    el("button", { type: "button", class: "button ghost", text: "Cancel", onclick: () => closeForm() }));
  const buttons = RATINGS.map((r) => el("button", { type: "button", class: `button ghost rate rate-${r.rating}`,
    "data-rating": r.rating, "aria-label": r.label, title: r.label, "aria-pressed": "false", text: r.text,
    onclick: () => send(state.rating === r.rating ? null : r.rating, state.comment) }));
  const group = el("div", { class: "feedback", role: "group", "aria-label": "Rate this answer" },
    ...buttons, commentButton, form, error);

  function render() {
    for (const button of buttons) {
      button.setAttribute("aria-pressed", String(button.dataset.rating === state.rating));
    }
    commentButton.hidden = !state.rating;
    commentButton.textContent = state.comment ? "Edit comment" : "Comment";
    if (!state.rating) closeForm(false);
  }

  function closeForm(focus = true) {
    form.hidden = true;
    commentButton.setAttribute("aria-expanded", "false");
    if (focus && !commentButton.hidden) commentButton.focus();
  }

  async function send(rating, comment, said = null) {
    error.replaceChildren();
    const response = rating
      ? await api(path, { method: "PUT", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ rating, comment }) })
      : await api(path, { method: "DELETE" });
    if (!response.ok) {
      const text = `The rating was not saved: ${await errorText(response)}`;
      error.replaceChildren(el("p", { class: "alert", role: "alert", text }));
      return false;
    }
    const saved = rating ? (await response.json()).feedback : null;
    state.rating = saved?.rating || null;
    state.comment = saved?.comment || "";
    render();
    announce(said || (saved ? RATINGS.find((r) => r.rating === saved.rating).said : "Rating cleared."));
    return true;
  }

  commentButton.addEventListener("click", () => {
    const open = form.hidden;
    form.hidden = !open;
    commentButton.setAttribute("aria-expanded", String(open));
    if (open) {
      input.value = state.comment;
      input.focus();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await send(state.rating, input.value, "Comment saved.")) closeForm();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closeForm();
    }
  });
  render();
  return group;
}
