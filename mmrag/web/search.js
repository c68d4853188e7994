// Search: text, image (upload or paste) or "pages like this one"; spaces, weights, filters;
// results as highlighted page thumbnails with snippet and, on request, per-space scores.
import { call, corpusPath, get } from "./api.js";
import { markSnippet, matchingWords, thumbnail } from "./pages.js";
import { $, el, emptyState, fmt, formStatus, table } from "./ui.js";

let queryImage = null; // File or Blob
let likePage = null; // {id, label}

// "Pages like this one" and image queries need an image space (clip or colpali) in the corpus.
export const canQueryByImage = (state) => (state.corpus?.config.spaces || []).some((s) => s === "clip" || s === "colpali");

// The "Pages like this one" button of a page (results, document pages), or null without an image space.
export const likeButton = (state, pageId, label) => (canQueryByImage(state)
  ? el("button", { type: "button", class: "quiet small", text: "Pages like this one",
    onclick: () => state.searchLikePage(pageId, label) }) : null);

function renderChip() {
  const box = $("#search-image-chip");
  const chips = [];
  if (queryImage) chips.push(el("span", { class: "chip" }, `Image: ${queryImage.name || "pasted image"} `,
    el("button", { type: "button", class: "quiet small", "aria-label": "Remove the image query", text: "✕",
      onclick: () => { queryImage = null; $("#search-image").value = ""; renderChip(); } })));
  if (likePage) chips.push(el("span", { class: "chip" }, `Pages like ${likePage.label} `,
    el("button", { type: "button", class: "quiet small", "aria-label": "Remove the page query", text: "✕",
      onclick: () => { likePage = null; renderChip(); } })));
  box.replaceChildren(...chips);
}

// Spaces a request may name (SearchIn.spaces in the OpenAPI contract); the corpus may have
// others that always take part (e.g. document-level evidence). null: not known, offer them all.
let querySpaces = null;

async function loadQuerySpaces() {
  try {
    const schema = await get("/openapi.json");
    const spaces = schema.components.schemas.SearchIn.properties.spaces;
    querySpaces = (spaces.anyOf || [spaces]).find((s) => s.items)?.items.enum || null;
  } catch { querySpaces = null; }
}

function renderSpaceOptions(state) {
  const spaces = (state.corpus?.config.spaces || []).filter((s) => !querySpaces || querySpaces.includes(s));
  $("#search-image-hint").textContent = canQueryByImage(state) ? "Finds pages that look like the image."
    : "This corpus has no image space (clip or colpali), so the server will refuse image queries.";
  $("#search-spaces").replaceChildren(...spaces.map((s) => el("div", { class: "space-weight" },
    el("input", { type: "checkbox", id: `use-${s}`, value: s, checked: true }),
    el("label", { for: `use-${s}`, text: s }),
    el("label", { for: `weight-${s}`, class: "visually-hidden", text: `Weight of ${s}` }),
    el("input", { type: "number", id: `weight-${s}`, min: "0", max: "100", step: "0.1", placeholder: "weight 1",
      class: "weight" }))));
}

function renderDocumentFilter(state, docs) {
  $("#search-documents").replaceChildren(...docs.map((d) => new Option(d.filename, d.id)));
}

function metadataFilter(text) {
  const out = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const cut = line.indexOf("=");
    if (cut < 1) throw new Error(`metadata filter "${line}" is not key=value`);
    out[line.slice(0, cut).trim()] = line.slice(cut + 1).trim();
  }
  return out;
}

function options() {
  const boxes = [...document.querySelectorAll("#search-spaces input[type=checkbox]")];
  const used = boxes.filter((i) => i.checked).map((i) => i.value);
  if (boxes.length && !used.length) throw new Error("choose at least one space");
  const weights = {};
  for (const s of used) {
    const w = $(`#weight-${s}`).value;
    if (w !== "") weights[s] = Number(w);
  }
  const body = { top_k: Number($("#search-topk").value || 10), explain: $("#search-explain").checked,
    metadata: metadataFilter($("#search-metadata").value) };
  if (used.length < boxes.length) body.spaces = used; // all ticked: the corpus's default (every space)
  if (Object.keys(weights).length) body.weights = weights;
  if ($("#search-fusion").value) body.fusion = $("#search-fusion").value;
  const docs = [...$("#search-documents").selectedOptions].map((o) => o.value);
  if (docs.length) body.document_ids = docs;
  const first = $("#search-pages-first").value;
  const last = $("#search-pages-last").value;
  if (first || last) body.pages = { first: Number(first || 1), last: Number(last || 1000000) };
  return body;
}

function scoreTable(r) {
  const keys = Object.keys({ ...r.scores, ...r.ranks });
  const spaces = keys.filter((k) => !k.startsWith("ranker."));
  const ranker = keys.filter((k) => k.startsWith("ranker.") && r.scores[k] !== 0)  // the learned ranker's features
    .sort((a, b) => Math.abs(r.scores[b]) - Math.abs(r.scores[a]));
  if (!keys.length) return null;
  return el("details", { class: "scores" }, el("summary", { text: "Per-space scores" }),
    table(["Space", "Rank", "Score"], spaces.map((s) => [s, String(r.ranks[s] ?? "–"), fmt(r.scores[s], 4)]),
      `Scores of ${r.document} page ${r.page}`),
    ranker.length ? table(["Ranker feature", "Contribution"], ranker.map((k) => [k.slice(7), fmt(r.scores[k], 4)]),
      `What each feature added to the ranker's score of ${r.document} page ${r.page}`) : null);
}

function renderResults(state, out, query) {
  const box = $("#search-results");
  if (!out.results.length) {
    box.replaceChildren(emptyState("Nothing found. Try other words, fewer filters, or more spaces."));
    return;
  }
  const took = out.timings.total ?? out.timings.search_total;
  box.replaceChildren(
    el("p", { class: "muted", text: `${out.results.length} results${took ? ` in ${fmt(took * 1000, 0)} ms` : ""}.` }),
    el("ol", { class: "results" }, out.results.map((r) => {
      const label = `${r.document}, page ${r.page}`;
      return el("li", { class: "result card" },
        thumbnail(r, label, query),
        el("div", { class: "result-body" },
          el("h3", {}, el("span", { text: r.document }), el("span", { class: "muted", text: ` · page ${r.page}` })),
          el("p", { class: "muted small", text: `score ${fmt(r.score, 4)} · ${r.kind}` }),
          r.section?.length ? el("p", { class: "section small", text: `Section: ${r.section.join(" › ")}` }) : null,
          r.snippet ? el("p", { class: "snippet" }, markSnippet(r.snippet, matchingWords(r.snippet, query))) : null,
          scoreTable(r),
          likeButton(state, r.page_id, label)));
    })));
}

async function run(state, form) {
  if (!state.corpus) return formStatus(form, "Choose or create a corpus first (Corpora).", true);
  const query = $("#search-query").value.trim();
  if (!query && !queryImage && !likePage) return formStatus(form, "Type a query, add an image, or pick a page.", true);
  const path = corpusPath(state.corpus.name, "/search");
  formStatus(form, "Searching…");
  $("#search-results").replaceChildren(); // old results go at once: what shows next is this query's
  let out;
  const body = options();
  if (queryImage) {
    const data = new FormData();
    data.append("image", queryImage, queryImage.name || "pasted.png");
    data.append("query", query);
    data.append("options", JSON.stringify(body));
    out = await call("POST", `${path}/image`, { form: data });
  } else {
    out = await call("POST", path, { json: { ...body, query, image_page_id: likePage?.id } });
  }
  formStatus(form, "");
  renderResults(state, out, query);
}

export function initSearch(state) {
  const known = loadQuerySpaces();
  state.onCorpus(async (corpus) => {
    await known;
    renderSpaceOptions(state);
    if (!corpus) return;
    try { renderDocumentFilter(state, await call("GET", corpusPath(corpus.name, "/documents"))); }
    catch { renderDocumentFilter(state, []); }
  });
  state.searchLikePage = (pageId, label) => {
    likePage = { id: pageId, label };
    queryImage = null;
    renderChip();
    state.show("search");
    $("#search-form").requestSubmit();
  };
  $("#search-image").addEventListener("change", (e) => { queryImage = e.target.files[0] || null; renderChip(); });
  $("#view-search").addEventListener("paste", (e) => {
    const item = [...(e.clipboardData?.items || [])].find((i) => i.type.startsWith("image/"));
    if (!item) return;
    e.preventDefault();
    queryImage = item.getAsFile();
    renderChip();
  });
  $("#search-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try { await run(state, e.target); } catch (err) {
      formStatus(e.target, err, true);
      $("#search-results").replaceChildren();
    }
  });
  $("#search-results").append(emptyState("Results appear here as page thumbnails with the matching words highlighted."));
}
