// The collection picker of the documents panel: the collections the user may read (GET
// /collections, with their document counts), the one the panel shows (remembered in this
// browser), and whether the user may upload into it. Names go in as text, never as HTML.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { SignInRequired, errorText } from "./errors.js";
import { shownName } from "./names.js";

const DEFAULT = "default";
const CHOSEN_KEY = "docchat.collection";

const picker = {
  list: [{ name: DEFAULT, documents: 0, write: true }], // as GET /collections lists them
  chosen: localStorage.getItem(CHOSEN_KEY) || DEFAULT,
  listeners: [],
};

/** The collection the documents panel shows (and uploads go into). */
export const chosenCollection = () => picker.chosen;

/** True when the user may upload into and delete from the chosen collection. */
export const mayWriteChosen = () => Boolean(picker.list.find((c) => c.name === picker.chosen)?.write);

/** Calls `listener` when another collection is chosen. */
export function onCollectionChosen(listener) {
  picker.listeners.push(listener);
}

function optionText(collection) {
  return `${shownName(collection.name)} (${collection.documents})`;
}

function render() {
  const select = $("collection");
  select.replaceChildren(...picker.list.map((c) => el("option", {
    value: c.name, text: optionText(c), selected: c.name === picker.chosen,
  })));
  select.value = picker.chosen;
  // One collection and nothing to choose: the picker says which, but takes no room to ask.
  $("collection-picker").classList.toggle("single", picker.list.length < 2);
}

/** Chooses `name` (a collection the user may read), and tells the listeners. */
export function chooseCollection(name) {
  if (name === picker.chosen || !picker.list.some((c) => c.name === name)) return;
  picker.chosen = name;
  localStorage.setItem(CHOSEN_KEY, name);
  render();
  for (const listener of picker.listeners) listener(name);
}

/** The chosen collection holds `count` documents (as its list was just read). */
export function showCount(count) {
  const shown = picker.list.find((c) => c.name === picker.chosen);
  if (!shown || shown.documents === count) return;
  shown.documents = count;
  const option = [...$("collection").options].find((o) => o.value === picker.chosen);
  if (option) option.textContent = optionText(shown);
}

/** Reads the collections again; a chosen one that is gone (or never readable) falls back to
 * the first listed. A failure keeps the last list and says so in the panel. */
export async function loadCollections() {
  try {
    const response = await api("collections", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(await errorText(response));
    const read = (await response.json()).collections;
    if (read.length) picker.list = read;
    $("collection-error").hidden = true;
  } catch (error) {
    if (error instanceof SignInRequired) return;
    $("collection-error").textContent = `Could not load the collections: ${error.message}`;
    $("collection-error").hidden = false;
  }
  if (!picker.list.some((c) => c.name === picker.chosen)) {
    picker.chosen = (picker.list.find((c) => c.name === DEFAULT) || picker.list[0]).name;
  }
  render();
}

/** Wires the picker's control. */
export function wireCollections() {
  $("collection").addEventListener("change", (event) => chooseCollection(event.target.value));
}
