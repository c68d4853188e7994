// The chosen corpus's own page ranker: which ranker serves it, train one from a file of judged questions
// (POST /corpora/{name}/ranker; each group scored by a model trained on the others), watch the training,
// see the before/after table per group, and go back to the default (DELETE).
import { corpusPath, del, get, post } from "./api.js";
import { $, confirmAction, el, errorBox, fmt, formStatus, table, when } from "./ui.js";

const POLL_MS = 700;
const ACTIVE = { own: "its own (trained on your judgments)", shipped: "the shipped default",
  configured: "the server's configured model", off: "off (the first stage and the page prior)" };
const signed = (x) => `${x > 0 ? "+" : ""}${x.toFixed(3)}`;

// One question per line: {"id", "query", "judgments": {"file.pdf#page": grade}, "group"}.
export function parseQuestions(text) {
  const lines = text.split("\n").map((l) => l.trim()).filter(Boolean);
  return lines.map((line, i) => {
    try { return JSON.parse(line); } catch { throw new Error(`line ${i + 1} is not JSON: ${line.slice(0, 60)}`); }
  });
}

function reportBox(report) {
  if (!report) return el("p", { class: "muted", text: "No training yet." });
  const verdict = report.installed ? (report.forced ? "installed on request, although it does not win"
    : "it wins beyond its interval and now serves the corpus")
    : "it does not win beyond its interval: the corpus keeps the default";
  return el("div", { class: "ranker-report" },
    table(["Group", "Questions", "nDCG@5 before", "nDCG@5 after"],
      report.folds.map((f) => [f.fold, String(f.questions), fmt(f.before), fmt(f.after)]),
      "Each group scored by a ranker trained on the others"),
    el("p", { text: `Page nDCG@5 ${fmt(report.before)} → ${fmt(report.after)} (${signed(report.after - report.before)}, ` +
      `95 % [${signed(report.delta_low)}, ${signed(report.delta_high)}]) over ${report.questions} questions; ` +
      `${verdict}. Trained ${when(report.trained_at)}.` }));
}

function render(status) {
  const job = status.training;
  const running = job && (job.state === "queued" || job.state === "running");
  $("#ranker-status").replaceChildren(
    el("p", { "data-active": status.active, text: `This corpus ranks pages with ${ACTIVE[status.active] || status.active}.` }),
    status.problem ? errorBox({ message: `Its own model is passed over: ${status.problem}` }) : null,
    job ? el("div", { class: "job-progress", "data-state": job.state },
      el("p", { text: `Training ${job.id.slice(0, 8)}: ${job.state} · ${job.done}/${job.questions} questions searched` }),
      el("progress", { max: String(job.questions), value: String(job.state === "done" ? job.questions : job.done),
        "aria-label": "Ranker training progress" }),
      job.error ? errorBox({ message: job.error }) : null) : null,
    reportBox(status.report));
  $("#ranker-reset").hidden = status.active !== "own" || running;
  $("#ranker-form button[type=submit]").disabled = !!running;
  return running;
}

async function refresh(state) {
  if (!state.corpus) {
    $("#ranker-status").replaceChildren(el("p", { class: "muted", text: "Create or choose a corpus first." }));
    return false;
  }
  return render(await get(corpusPath(state.corpus.name, "/ranker")));
}

async function watch(state) {
  while (await refresh(state)) await new Promise((r) => setTimeout(r, POLL_MS));
}

export function initRanker(state) {
  $("#ranker-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const file = $("#ranker-file").files[0];
    if (!state.corpus) return formStatus(e.target, "Choose a corpus first.", true);
    if (!file) return formStatus(e.target, "Choose a JSON Lines file of judged questions.", true);
    try {
      const questions = parseQuestions(await file.text());
      await post(corpusPath(state.corpus.name, "/ranker"), { questions, force: $("#ranker-force").checked });
      formStatus(e.target, `Training on ${questions.length} questions…`);
      await watch(state);
      formStatus(e.target, "");
    } catch (err) { formStatus(e.target, err, true); }
  });
  $("#ranker-reset").addEventListener("click", async () => {
    const form = $("#ranker-form");
    if (!await confirmAction(`Back to the default ranker for ${state.corpus.name}?`,
      "Its own model and its report are removed.", "Remove")) return;
    try { await del(corpusPath(state.corpus.name, "/ranker")); await refresh(state); } catch (err) { formStatus(form, err, true); }
  });
  state.onCorpus(() => { watch(state).catch((err) => $("#ranker-status").replaceChildren(errorBox(err))); });
}
