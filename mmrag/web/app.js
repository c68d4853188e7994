// The page's entry point: shared state (health, corpora, the chosen corpus), the sections
// (hash routing), the API-key prompt and the corpus picker.
import { apiKey, get, setApiKey, setKeyPrompt } from "./api.js";
import { initCorpora } from "./corpora.js";
import { initDocuments } from "./documents.js";
import { initEvaluations } from "./evaluations.js";
import { initPageDialog } from "./pages.js";
import { initSearch } from "./search.js";
import { initAnswer } from "./answer.js";
import { $, errorBox } from "./ui.js";

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

function renderHealth(health) {
  const on = Object.keys(health.spaces);
  const off = Object.entries(health.unavailable).map(([name, why]) => `${name} (${why})`);
  $("#health").textContent = `Spaces on: ${on.join(", ") || "none"}.` + (off.length ? ` Off: ${off.join("; ")}.` : "");
}

let pendingKey = null; // one prompt at a time: requests that hit 401 together wait for the same answer

function promptForKey(reason) {
  pendingKey ??= askKey(reason).finally(() => { pendingKey = null; });
  return pendingKey;
}

function askKey(reason) {
  const dialog = $("#key-dialog");
  $("#key-reason").textContent = reason;
  $("#key-input").value = "";
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener("close", () => {
    const key = dialog.returnValue === "ok" ? $("#key-input").value.trim() : "";
    $("#key-button").hidden = !key && !apiKey();
    resolve(key || null);
  }, { once: true }));
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
  for (const init of [initCorpora, initDocuments, initSearch, initAnswer, initEvaluations]) init(state);
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
