// The page's entry point: shared state (health, corpora, the chosen corpus), the sections
// (hash routing), the API-key prompt and the corpus picker.
import { apiKey, get, setApiKey, setKeyPrompt } from "./api.js";
import { initCorpora } from "./corpora.js";
import { initDocuments } from "./documents.js";
import { initEvaluations } from "./evaluations.js";
import { initRanker } from "./ranker.js";
import { initPageDialog } from "./pages.js";
import { initSearch } from "./search.js";
import { initAnswer } from "./answer.js";
import { $, dialogResult, el, errorBox } from "./ui.js";

const CHOSEN = "mmrag.corpus";
const VIEWS = ["corpora", "documents", "search", "answer", "evaluations"];
const listeners = [];

export const state = {
  health: null, // GET /health
  corpora: [], // GET /corpora
  corpus: null, // the chosen corpus object, or null
  onCorpus(fn) { listeners.push(fn); }, // fn(corpus) after every refresh
  refresh: (choose) => refreshCorpora(choose), // reload the corpora; choose one by name
  show: (view, focus) => show(view, focus), // open a section
};

async function refreshCorpora(choose = undefined) {
  state.corpora = await get("/corpora");
  const wanted = choose ?? state.corpus?.name ?? localStorage.getItem(CHOSEN);
  state.corpus = state.corpora.find((c) => c.name === wanted) || state.corpora[0] || null;
  const select = $("#corpus-select");
  select.replaceChildren(...(state.corpora.length ? state.corpora.map((c) => new Option(c.name, c.name))
    : [new Option("(none yet)", "")]));
  select.value = state.corpus?.name || "";
  if (state.corpus) localStorage.setItem(CHOSEN, state.corpus.name);
  for (const fn of listeners) fn(state.corpus);
}

function show(view, focus = true) {
  const name = VIEWS.includes(view) ? view : "corpora";
  for (const v of VIEWS) $(`#view-${v}`).hidden = v !== name;
  for (const a of document.querySelectorAll(".tabs a")) {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
  if (focus) $(`#h-${name}`).focus();
}

// What to set to turn a component on (or off for good, so it stops being listed).
const SETTING = { text: "MMRAG_EMBED__TEXT_MODEL", clip: "MMRAG_EMBED__CLIP_MODEL",
  colpali: "MMRAG_EMBED__COLPALI_MODEL", vlm: "MMRAG_VLM__MODEL or MMRAG_VLM__BACKEND" };

// "clip is off: cannot be loaded (no weights offline)" — one short line per component, the full reason on demand.
export function offLine(name, why) {
  const configured = /disabled in configuration/.test(why);
  const summary = configured ? "turned off in the configuration"
    : /offline|hub|connect|resolve|internet|cache/i.test(why) ? "its model is not on this machine and cannot be downloaded"
      : "its model could not be loaded";
  const todo = configured ? "" : ` Set ${SETTING[name] || "its model setting"} to a local model folder, or leave it empty to turn it off.`;
  return el("li", {}, el("strong", { text: name }), ` is off: ${summary}.${todo} `,
    configured ? null : el("details", { class: "why" }, el("summary", { text: "Why" }), el("pre", { text: why })));
}

function renderHealth(health) {
  const on = Object.keys(health.spaces);
  const off = Object.entries(health.unavailable);
  $("#health").replaceChildren(el("span", { text: `Spaces on: ${on.join(", ") || "none"}.` }),
    off.length ? el("ul", { class: "off-list" }, off.map(([name, why]) => offLine(name, why))) : null);
}

let pendingKey = null; // one prompt at a time: requests that hit 401 together wait for the same answer

function promptForKey(reason) {
  pendingKey ??= askKey(reason).finally(() => { pendingKey = null; });
  return pendingKey;
}

async function askKey(reason) {
  $("#key-reason").textContent = reason;
  $("#key-input").value = "";
  const ok = (await dialogResult($("#key-dialog"))) === "ok";
  const key = ok ? $("#key-input").value.trim() : "";
  $("#key-button").hidden = !key && !apiKey();
  return key || null;
}

async function start() {
  setKeyPrompt(promptForKey);
  initPageDialog();
  $("#key-button").hidden = !apiKey();
  $("#key-button").addEventListener("click", async () => {
    const key = await promptForKey("Enter another API key for this tab (closing the tab forgets it).");
    if (!key) return; // cancelled: keep the current key
    setApiKey(key);
    location.reload();
  });
  $("#corpus-select").addEventListener("change", (e) => refreshCorpora(e.target.value));
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));
  for (const init of [initCorpora, initDocuments, initSearch, initAnswer, initEvaluations, initRanker]) init(state);
  show(location.hash.slice(1) || "corpora", false);
  try {
    state.health = await get("/health");
    renderHealth(state.health);
    await refreshCorpora();
  } catch (err) {
    $("#global-error").replaceChildren(errorBox(err));
  }
  document.body.dataset.ready = "true";
}

start();
