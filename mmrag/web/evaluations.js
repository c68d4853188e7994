// Evaluations: start a suite run (POST /evaluations), watch its progress, see the metric table and
// the report's plots, compare two runs (POST /evaluations/{b}/compare {"baseline": a}: the same paired
// bootstrap intervals and p-values as `mmrag eval compare`).
import { get, imageURL, post } from "./api.js";
import { $, el, emptyState, errorBox, fmt, formStatus, table, when } from "./ui.js";

const FAMILIES = ["ndcg", "recall", "precision", "mrr", "map"];
const POLL_MS = 700;
let runs = [];

// Rows: metric families (and answer metrics) × columns: cutoffs.
function metricRows(metrics) {
  const ks = [...new Set(Object.keys(metrics).filter((m) => m.includes("@")).map((m) => Number(m.split("@")[1])))]
    .sort((a, b) => a - b);
  const rows = FAMILIES.filter((f) => ks.some((k) => `${f}@${k}` in metrics))
    .map((f) => [f, ...ks.map((k) => fmt(metrics[`${f}@${k}`]))]);
  const other = Object.keys(metrics).filter((m) => !m.includes("@"));
  return { head: ["Metric", ...ks.map((k) => `@${k}`)], rows, other };
}

function metricTables(metrics, caption) {
  const { head, rows, other } = metricRows(metrics);
  return [rows.length ? table(head, rows, caption) : null,
    other.length ? table(["Answer metric", "Value"], other.map((m) => [m, fmt(metrics[m])]), "Answer metrics") : null];
}

async function showReport(run) {
  const box = $("#eval-report");
  box.replaceChildren(el("p", { class: "muted", text: "Loading the report…" }));
  try {
    const report = await get(`/evaluations/${run.id}/report`);
    const plots = Object.entries(report.artefacts?.plots || {});
    const modes = Object.entries(report.answer_modes || {}).map(([m, n]) => `${n} ${m}`).join(", ");
    box.replaceChildren(el("div", { class: "card report" },
      el("h2", { tabindex: "-1", text: `Report: ${report.suite.name}` }), // "suite:variant"
      el("p", { class: "muted", text: `${report.suite.queries} queries, ${report.suite.qa_items} questions · ` +
        `corpus ${report.config.corpus} · ${fmt(report.duration_s, 1)} s · failures: search ${report.failures.search}, ` +
        `answer ${report.failures.answer}${modes ? ` · answers: ${modes}` : ""}` }),
      metricTables(report.metrics, "Retrieval metrics"),
      plots.length ? el("h3", { text: "Plots" }) : null,
      el("div", { class: "plots" }, plots.map(([name, file]) => {
        const img = el("img", { alt: `Plot: ${name.replaceAll("_", " ")}` });
        imageURL(`/evaluations/${run.id}/files/${file}`).then((u) => { img.src = u; });
        return el("figure", {}, img, el("figcaption", { text: name.replaceAll("_", " ") }));
      }))));
    box.querySelector("h2").focus();
  } catch (err) {
    box.replaceChildren(errorBox(err));
  }
}

function renderRuns() {
  const box = $("#eval-list");
  if (!runs.length) {
    box.replaceChildren(emptyState("No evaluation yet. Start one above (the docling suite's quick variant takes seconds)."));
  } else {
    box.replaceChildren(table(["Run", "Suite", "State", "nDCG@5", "Started", ""], runs.map((r) => [
      r.id.slice(0, 8), r.suite + (r.variant ? `:${r.variant}` : ""), r.state + (r.error ? `: ${r.error}` : ""),
      fmt(r.metrics["ndcg@5"]), when(r.created_at),
      r.state === "done" ? el("button", { type: "button", class: "small", text: "Report",
        "aria-label": `Report of run ${r.id.slice(0, 8)}`, onclick: () => showReport(r) }) : "",
    ]), "Evaluation runs"));
  }
  const done = runs.filter((r) => r.state === "done");
  for (const [id, pick] of [["#compare-a", 1], ["#compare-b", 0]]) {
    const select = $(id);
    const keep = select.value;
    select.replaceChildren(...done.map((r) => new Option(`${r.id.slice(0, 8)} ${r.suite}${r.variant ? `:${r.variant}` : ""}`, r.id)));
    select.value = done.some((r) => r.id === keep) ? keep : done[Math.min(pick, done.length - 1)]?.id || "";
  }
  if (done.length > 1 && $("#compare-a").value === $("#compare-b").value) { // default: previous run vs newest
    $("#compare-a").value = done[1].id;
    $("#compare-b").value = done[0].id;
  }
}

async function refresh() {
  runs = (await get("/evaluations")).sort((a, b) => b.created_at - a.created_at);
  renderRuns();
}

async function watch(job) {
  const box = $("#eval-progress");
  for (;;) {
    const pct = job.total ? Math.round((100 * job.done) / job.total) : 0;
    box.replaceChildren(el("div", { class: "card", "data-state": job.state },
      el("p", { text: `Run ${job.id.slice(0, 8)} (${job.suite}${job.variant ? `:${job.variant}` : ""}): ${job.state}` +
        (job.stage ? ` · ${job.stage} ${job.done}/${job.total}` : "") }),
      el("progress", { max: "100", value: String(job.state === "done" ? 100 : pct), "aria-label": "Evaluation progress" }),
      job.error ? errorBox({ message: job.error }) : null));
    if (job.state === "done" || job.state === "failed") break;
    await new Promise((r) => setTimeout(r, POLL_MS));
    job = await get(`/evaluations/${job.id}`);
  }
  await refresh();
  if (job.state === "done") await showReport(job);
  return job;
}

async function compare(form) {
  const [a, b] = [$("#compare-a").value, $("#compare-b").value];
  if (!a || !b || a === b) return formStatus(form, "Pick two different finished runs.", true);
  formStatus(form, "Comparing…");
  const out = await post(`/evaluations/${b}/compare`, { baseline: a });
  const signed = (x) => `${x > 0 ? "+" : ""}${x.toFixed(3)}`;
  const rows = Object.entries(out.metrics).map(([m, r]) => {
    // a difference counts when its interval leaves out zero
    const sure = r.ci_low > 0 ? "up" : r.ci_high < 0 ? "down" : "";
    return [m, fmt(r.mean_a), fmt(r.mean_b), el("span", { class: sure, text: signed(r.delta) }),
      `[${signed(r.ci_low)}, ${signed(r.ci_high)}]`, fmt(r.p_value), String(r.n)];
  });
  const conf = Math.round(out.statistics.confidence * 100);
  $("#eval-compare").replaceChildren(el("div", { class: "card" },
    table(["Metric", `A ${a.slice(0, 8)} ${out.a.label}`, `B ${b.slice(0, 8)} ${out.b.label}`, "B − A",
      `${conf} % interval`, "p", "n"], rows, "Comparison"),
    el("p", { class: "muted small", text: `${out.paired_items} paired queries; ${out.statistics.bootstrap_samples} ` +
      `bootstrap samples; p from a ${out.statistics.test} test. Green or red only where the interval leaves out 0.` })));
  formStatus(form, "");
}

export function initEvaluations() {
  $("#eval-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const variant = $("#eval-variant").value.trim() || null;
    try {
      const job = await post("/evaluations", { suite: $("#eval-suite").value, variant });
      formStatus(e.target, "Started.");
      const end = await watch(job);
      const summary = `Run ${end.id.slice(0, 8)}: ${end.state}${end.error ? ` (${end.error})` : ""}.`;
      formStatus(e.target, end.state === "failed" ? new Error(summary) : summary, end.state === "failed");
    } catch (err) { formStatus(e.target, err, true); }
  });
  $("#compare-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try { await compare(e.target); } catch (err) { formStatus(e.target, err, true); }
  });
  (async () => {
    try {
      const suites = await get("/evaluations/suites");
      $("#eval-suite").replaceChildren(...suites.map((s) => new Option(s, s)));
      await refresh();
    } catch (err) { $("#eval-list").replaceChildren(errorBox(err)); }
  })();
}
