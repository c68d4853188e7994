// Page images with the evidence drawn over them: every word box of the snippet (light) and the
// words that match the query (strong). Boxes are normalised (x0, y0, x1, y1) in [0, 1] of the page,
// one per whitespace-separated word of the snippet, so they are placed in percent.
import { imageURL } from "./api.js";
import { $, el } from "./ui.js";

const norm = (w) => w.toLowerCase().normalize("NFKC").replace(/[^\p{L}\p{N}]+/gu, "");

// Words too common to be worth highlighting (English function words, as search engines drop them).
const STOPWORDS = new Set(("a an and are as at be by for from has have in is it its of on or that the this to was " +
  "were what when where which who will with how why do does did not no can than then there their they them these " +
  "those our we you your he she his her i me my all any been being into over under about after before also").split(" "));

// For each word of the snippet: does it match a query term (same word, or a shared stem of >= 4)?
// Stopwords of the query highlight nothing.
export function matchingWords(snippet, query) {
  const terms = (query || "").split(/\s+/).map(norm).filter((t) => t.length >= 2 && !STOPWORDS.has(t));
  return (snippet || "").split(/\s+/).filter(Boolean).map((word) => {
    const w = norm(word);
    return w.length > 0 && terms.some((t) => t === w || (Math.min(t.length, w.length) >= 4
      && (w.startsWith(t) || t.startsWith(w))));
  });
}

function overlay(boxes, hits) {
  return boxes.map(([x0, y0, x1, y1], i) => {
    const box = el("span", { class: hits[i] ? "box hit" : "box", "aria-hidden": "true" });
    box.style.left = `${x0 * 100}%`;
    box.style.top = `${y0 * 100}%`;
    box.style.width = `${(x1 - x0) * 100}%`;
    box.style.height = `${(y1 - y0) * 100}%`;
    return box;
  });
}

// <div class="page-frame"> with the image (fetched with the API key) and its highlight boxes.
export function pageImage(src, alt, boxes = [], hits = []) {
  const img = el("img", { alt, decoding: "async" });
  imageURL(src).then((url) => { img.src = url; }, () => { img.alt = `${alt} (image could not be loaded)`; });
  return el("div", { class: "page-frame" }, img, overlay(boxes, hits));
}

// A thumbnail button that opens the page full size with the same highlights.
export function thumbnail(item, label, query = "") {
  const hits = matchingWords(item.snippet, query);
  const boxes = item.boxes || [];
  const count = hits.filter(Boolean).length;
  const alt = `${label}${boxes.length ? `, ${count} matching words highlighted` : ""}`;
  return el("button", { type: "button", class: "thumb", "aria-label": `Open ${label} full size`,
    onclick: () => openPage(item, label, query) }, pageImage(item.thumbnail_url, alt, boxes, hits));
}

export function openPage(item, label, query = "") {
  const dialog = $("#page-dialog");
  $("#page-dialog-title").textContent = label;
  const hits = matchingWords(item.snippet, query);
  $("#page-dialog-body").replaceChildren(
    el("div", { class: "page-full" }, pageImage(item.image_url, label, item.boxes || [], hits)),
    item.snippet ? el("p", { class: "snippet" }, markSnippet(item.snippet, hits)) : null);
  dialog.showModal();
}

// The snippet as text with the matching words in <mark>.
export function markSnippet(snippet, hits) {
  const words = (snippet || "").split(/\s+/).filter(Boolean);
  return words.flatMap((w, i) => [hits[i] ? el("mark", { text: w }) : w, i < words.length - 1 ? " " : ""]);
}

export function initPageDialog() {
  const dialog = $("#page-dialog");
  dialog.querySelector("[data-close]").addEventListener("click", () => dialog.close());
  dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); });
}
