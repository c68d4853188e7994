// Answers: the SSE stream of POST /corpora/{c}/answer read with fetch (evidence, token..., done |
// error); cited pages as thumbnails; stage timings; a note when the answer is extractive.
import { corpusPath, errorOf, events, send } from "./api.js";
import { thumbnail } from "./pages.js";
import { $, el, errorBox, fmt, formStatus, table } from "./ui.js";

// Stage timings the engine reports (RequestTimings and the answer service), in pipeline order.
const STAGES = [["search_s", "retrieve"], ["select_s", "select evidence"], ["queue_s", "admission queue"],
  ["preprocess_s", "preprocess images"], ["encoder_queue_s", "encoder queue"], ["encoder_s", "encode images"],
  ["prefill_s", "prefill"], ["ttft_s", "first token"], ["total_s", "generation total"],
  ["answer_total_s", "answer total"]];

let controller = null;

function citations(pages, question) {
  return el("ul", { class: "page-strip" }, pages.map((c) => el("li", {},
    thumbnail({ ...c, image_url: c.image_url || pageURL(c), thumbnail_url: c.thumbnail_url || `${pageURL(c)}?width=256`,
      snippet: "", boxes: [] }, `[${c.n}] ${c.filename}, page ${c.page}`, question),
    el("div", { class: "page-meta", text: `[${c.n}] ${c.filename} p. ${c.page}` +
      (c.visual_tokens ? ` · ${c.visual_tokens} visual tokens` : "") }))));
}

let corpusName = "";
const pageURL = (c) => corpusPath(corpusName, `/pages/${c.page_id}/image`);

function timingTable(timings) {
  const known = STAGES.filter(([k]) => k in timings).map(([k, label]) => [label, `${fmt(timings[k] * 1000, 1)} ms`]);
  const counts = Object.entries(timings).filter(([k]) => !k.endsWith("_s") && !k.startsWith("search_"))
    .map(([k, v]) => [k.replaceAll("_", " "), fmt(v, Number.isInteger(v) ? 0 : 2)]);
  const rate = "decode_tokens_per_s" in timings ? [["decode rate", `${fmt(timings.decode_tokens_per_s, 1)} tokens/s`]] : [];
  return table(["Stage", "Time"], [...known, ...rate, ...counts], "Stage timings");
}

function extractiveNote(state, done) {
  const why = done.notice || `No vision-language model is loaded (${state.health?.unavailable?.vlm || "unknown reason"}): ` +
    "the text quotes the best evidence snippets; it is not generated.";
  return el("div", { class: "note", role: "note" }, el("strong", { text: "Extractive answer. " }), why,
    " Configure a VLM (MMRAG_VLM__BACKEND) to get generated answers.");
}

async function ask(state, form) {
  if (!state.corpus) return formStatus(form, "Choose or create a corpus first (Corpora).", true);
  corpusName = state.corpus.name;
  const question = $("#answer-question").value.trim();
  const budget = $("#answer-budget").value;
  const body = { question, top_k: Number($("#answer-topk").value || 5), stream: true };
  if (budget !== "") body.visual_token_budget = Number(budget);
  const out = $("#answer-out");
  const text = el("div", { class: "answer-text", "aria-live": "polite", "aria-busy": "true" });
  const evidence = el("div", { class: "evidence" });
  const finish = el("div", { class: "answer-done" });
  const note = el("div", { class: "answer-note" });
  out.replaceChildren(el("div", { class: "card answer" }, el("h2", { text: "Answer" }), note, text, evidence, finish));
  controller = new AbortController();
  $("#answer-stop").disabled = false;
  formStatus(form, "Retrieving pages…");
  try {
    const response = await send("POST", corpusPath(corpusName, "/answer"),
      { json: body, signal: controller.signal });
    if (!response.ok) throw await errorOf(response);
    for await (const { event, data } of events(response)) {
      if (event === "evidence") {
        formStatus(form, "Generating…");
        evidence.replaceChildren(el("h3", { text: `Evidence sent: ${data.pages.length} pages, ` +
          `${data.visual_tokens} visual tokens${data.dropped ? ` (${data.dropped} left out by the budget)` : ""}` }));
      } else if (event === "token") {
        text.append(data.text);
      } else if (event === "done") {
        text.textContent = data.answer;
        note.replaceChildren(data.mode === "extractive" ? extractiveNote(state, data) : "");
        finish.replaceChildren(
          el("h3", { text: "Cited pages" }), citations(data.citations, question),
          el("h3", { text: "Timings" }), timingTable(data.timings));
        finish.dataset.mode = data.mode;
        formStatus(form, `Done (${data.mode}).`);
      } else if (event === "error") {
        const retry = data.retry_after ? ` Retry after ${Math.ceil(data.retry_after)} s.` : "";
        finish.replaceChildren(errorBox({ code: data.code, message: data.message + retry }));
        formStatus(form, "The answer failed.", true);
      }
    }
  } catch (err) {
    if (err.name === "AbortError") formStatus(form, "Stopped.");
    else { formStatus(form, err, true); }
  } finally {
    text.setAttribute("aria-busy", "false");
    $("#answer-stop").disabled = true;
    controller = null;
  }
}

export function initAnswer(state) {
  $("#answer-form").addEventListener("submit", (e) => { e.preventDefault(); ask(state, e.target); });
  $("#answer-stop").addEventListener("click", () => controller?.abort());
}
