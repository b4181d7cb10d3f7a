// The documents panel's synced sources: where the chosen collection's documents come from
// besides uploads (a web site, a SharePoint drive, a Confluence space), with what each one's
// last sync did, its last failure (the reason a person can act on) and what it last skipped.

import { api } from "./api.js";
import { chosenCollection } from "./collections.js";
import { $, el } from "./dom.js";
import { SignInRequired, errorText } from "./errors.js";

// Sources change when a sync runs (hourly, or by hand): read again at most this often.
const READ_EVERY_MS = 30000;
const read = { collection: null, at: 0 };

/** Reads the chosen collection's sources and shows them: when another collection was shown,
 * or the last read is older than READ_EVERY_MS. */
export async function refreshSources() {
  const collection = chosenCollection();
  if (collection === read.collection && Date.now() - read.at < READ_EVERY_MS) return;
  Object.assign(read, { collection, at: Date.now() });
  let listed = [];
  try {
    const response = await api(`sources?collection=${encodeURIComponent(collection)}`,
      { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(await errorText(response));
    listed = (await response.json()).sources;
  } catch (error) {
    if (error instanceof SignInRequired) return;
    read.at = 0; // read again with the next list
    showSources([], `Could not load the synced sources: ${error.message}`);
    return;
  }
  if (collection === chosenCollection()) showSources(listed, "");
}

function showSources(sources, problem) {
  $("source-list").replaceChildren(...sources.map(sourceRow));
  $("sources-error").textContent = problem;
  $("sources-error").hidden = !problem;
  $("sources").hidden = !sources.length && !problem;
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function sourceRow(source) {
  // Only a web address is a link; a drive or a space is named as the source says it.
  const where = /^https?:\/\//i.test(source.url)
    ? el("a", { class: "source-url", href: source.url, target: "_blank", rel: "noopener noreferrer", text: source.url })
    : el("span", { class: "source-url", text: source.url });
  const last = source.last_sync;
  let said = "not synced yet";
  if (last) {
    const when = new Date(last.at).toLocaleString();
    const counts = [`${last.fetched} fetched`, `${last.unchanged} unchanged`, `${last.removed} removed`];
    if (last.failed) counts.push(`${last.failed} failed`);
    if (last.skipped) counts.push(`${last.skipped} skipped`);
    said = `${plural(source.documents, "document")} · last sync ${when}: ${counts.join(", ")}`;
  }
  const failure = last && last.last_failure
    ? el("p", { class: "source-failure", text: `Last failure: ${last.last_failure}` })
    : null;
  // A skipped page is not a failure (a broken link is the site's to mend), but worth knowing.
  const skip = last && last.skip_note
    ? el("p", { class: "source-skip", text: `Last skipped: ${last.skip_note}` })
    : null;
  return el("li", { class: "source", "data-source": source.name },
    el("div", { class: "source-head" },
      el("bdi", { class: "source-name", text: source.name }),
      el("span", { class: "badge", text: source.kind })),
    where,
    el("span", { class: "source-sync", text: said }),
    failure,
    skip);
}
