// Building the page's nodes. Every text from the server or a document goes in as a text node
// (textContent), never as HTML.

export const $ = (id) => document.getElementById(id);

/** An element with attributes ("class", "text", "on<event>" handlers) and children. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else if (value !== false && value != null) node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c != null));
  return node;
}

/** An inline SVG icon of one stroked path. */
export function icon(path, size = 16) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  for (const [key, value] of Object.entries({ viewBox: "0 0 24 24", width: size, height: size, "aria-hidden": "true" })) {
    svg.setAttribute(key, String(value));
  }
  const line = document.createElementNS(ns, "path");
  for (const [key, value] of Object.entries({ d: path, fill: "none", stroke: "currentColor", "stroke-width": "2",
    "stroke-linecap": "round", "stroke-linejoin": "round" })) {
    line.setAttribute(key, value);
  }
  svg.append(line);
  return svg;
}

/** Says `text` to screen readers through the page's live region. */
export function announce(text) {
  const region = $("announce");
  region.textContent = "";
  // A fresh text node after a tick makes screen readers read a repeated message again.
  setTimeout(() => { region.textContent = text; }, 50);
}

/** Grows a textarea with its text, up to 200 pixels. */
export function autosize(textarea) {
  textarea.style.height = "auto";
  textarea.style.height = `${Math.min(textarea.scrollHeight, 200)}px`;
}
