// Upload (drop or pick several files) with live per-file, per-page progress from the job's event
// stream, failures with the server's reason, cancel; the corpus's documents with their pages.
import { call, corpusPath, del, errorOf, events, get, post, send } from "./api.js";
import { thumbnail } from "./pages.js";
import { likeButton } from "./search.js";
import { $, bytes, confirmAction, el, emptyState, errorBox, formStatus, table, when } from "./ui.js";

let chosen = [];
const chosenPath = (state, rest = "") => corpusPath(state.corpus.name, rest);

function choose(files) {
  chosen = [...files];
  $("#upload-chosen").textContent = chosen.length
    ? `${chosen.length} file${chosen.length > 1 ? "s" : ""}: ${chosen.map((f) => f.name).join(", ")}`
    : "No files chosen.";
}

function fileRow(f) {
  const pct = f.pages ? Math.round((100 * f.pages_done) / f.pages) : 0;
  const label = `${f.filename}: ${f.state}${f.pages ? `, page ${f.pages_done} of ${f.pages}` : ""}`;
  return el("li", { class: `job-file state-${f.state}` },
    el("div", { class: "job-file-head" }, el("span", { class: "name", text: f.filename }),
      el("span", { class: "state", text: f.pages ? `${f.state} · ${f.pages_done}/${f.pages} pages` : f.state })),
    el("progress", { max: "100", value: String(f.state === "done" || f.state === "exists" ? 100 : pct),
      "aria-label": label }),
    f.message ? el("p", { class: "error", role: "alert", text: `${f.error}: ${f.message}` }) : null);
}

function renderJob(box, job, onCancel) {
  const finished = ["done", "failed", "cancelled"].includes(job.state);
  box.replaceChildren(
    el("div", { class: "job-head" },
      el("strong", { text: `Job ${job.id.slice(0, 8)}: ${job.state}` }),
      el("span", { text: ` ${job.pages_done} of ${job.pages_total || "?"} pages` +
        (job.pages_failed ? `, ${job.pages_failed} failed` : "") }),
      finished ? null : el("button", { type: "button", class: "quiet", onclick: onCancel, text: "Cancel" })),
    el("ul", { class: "job-files" }, job.files.map(fileRow)));
  box.dataset.state = job.state;
}

// Follow GET /jobs/{id}/events until `end`; returns the last job.
async function follow(state, job, box) {
  const cancel = async () => {
    try { renderJob(box, await post(`/jobs/${job.id}/cancel`), cancel); } catch (err) { box.append(errorBox(err)); }
  };
  renderJob(box, job, cancel);
  const response = await send("GET", `/jobs/${job.id}/events?interval=0.2`);
  if (!response.ok) throw await errorOf(response);
  for await (const { event, data } of events(response)) {
    if (event === "progress") { job = data; renderJob(box, job, cancel); }
    if (event === "end") break;
  }
  return job;
}

async function upload(state, form) {
  if (!state.corpus) return formStatus(form, "Choose or create a corpus first (Corpora).", true);
  if (!chosen.length) return formStatus(form, "Choose one or more files first.", true);
  const data = new FormData();
  for (const file of chosen) data.append("files", file, file.name);
  const meta = $("#upload-metadata").value.trim();
  if (meta) data.append("metadata", meta);
  formStatus(form, `Uploading ${chosen.length} file(s)…`);
  const response = await send("POST", chosenPath(state, "/documents"), { form: data });
  const body = await response.clone().json().catch(() => null);
  const box = el("div", { class: "job card" });
  $("#upload-jobs").prepend(box);
  const rejected = body?.errors || [];
  if (rejected.length) {
    box.append(el("ul", { class: "rejected" }, rejected.map((e) =>
      el("li", { class: "error", role: "alert", text: `${e.filename} was refused: ${e.message}` }))));
  }
  if (!body?.job) {
    if (!rejected.length) box.append(errorBox(await errorOf(response)));
    return formStatus(form, "Nothing was uploaded.", true);
  }
  formStatus(form, "Uploaded; indexing…");
  choose([]);
  form.reset();
  const jobBox = el("div", { class: "job-progress" });
  box.append(jobBox);
  const job = await follow(state, body.job, jobBox);
  formStatus(form, `Job ${job.state}: ${job.pages_done} pages indexed` +
    (job.errors.length ? `, ${job.errors.length} file(s) failed` : "") + ".");
  await state.refresh();
}

async function showPages(state, doc, row, button) {
  const open = button.getAttribute("aria-expanded") === "true";
  button.setAttribute("aria-expanded", String(!open));
  const holder = row.querySelector(".doc-pages");
  if (open) { holder.replaceChildren(); return; }
  try {
    const detail = await get(chosenPath(state, `/documents/${doc.id}`));
    holder.replaceChildren(el("ul", { class: "page-strip" }, detail.pages.map((p) => el("li", {},
      thumbnail({ ...p, snippet: "", boxes: [] }, `${doc.filename}, page ${p.number}`),
      el("div", { class: "page-meta", text: `p. ${p.number} · ${p.text_source}, ${p.text_chars} chars` }),
      likeButton(state, p.id, `${doc.filename} p. ${p.number}`)))));
  } catch (err) {
    holder.replaceChildren(errorBox(err));
  }
}

// Metadata as a collapsed list; nested objects (e.g. the document's facts) one level deep, empty values left out.
function metadataList(metadata) {
  const items = [];
  const add = (key, value) => {
    if (value === null || value === "" || (Array.isArray(value) && !value.length)) return;
    if (typeof value === "object" && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) add(`${key}.${k}`, v);
    } else items.push(el("li", {}, el("code", { text: key }), ` ${Array.isArray(value) ? value.join(", ") : value}`));
  };
  for (const [k, v] of Object.entries(metadata)) add(k, v);
  return items.length ? el("details", { class: "meta" }, el("summary", { text: `Metadata (${items.length})` }),
    el("ul", {}, items)) : null;
}

async function renderDocuments(state) {
  const box = $("#documents-list");
  if (!state.corpus) { box.replaceChildren(emptyState("Create a corpus first (Corpora), then upload here.")); return; }
  try {
    const docs = await call("GET", chosenPath(state, "/documents"));
    if (!docs.length) {
      box.replaceChildren(emptyState(`Corpus ${state.corpus.name} is empty. Upload PDFs, scans or images above.`));
      return;
    }
    box.replaceChildren(el("ul", { class: "doc-list" }, docs.map((d) => {
      const row = el("li", { class: "doc card" });
      const toggle = el("button", { type: "button", "aria-expanded": "false", text: "Pages",
        "aria-label": `Show pages of ${d.filename}`, onclick: () => showPages(state, d, row, toggle) });
      const meta = metadataList(d.metadata);
      row.append(el("div", { class: "doc-head" },
        el("strong", { class: "name", text: d.filename }),
        el("span", { class: "muted", text: ` ${d.page_count} page${d.page_count === 1 ? "" : "s"} · ${d.media_type} · ` +
          `${bytes(d.size_bytes)} · ${when(d.created_at)}` }),
        el("span", { class: "actions" }, toggle,
          el("button", { type: "button", class: "danger", text: "Delete", "aria-label": `Delete ${d.filename}`,
            onclick: () => removeDocument(state, d) }))),
      meta, el("div", { class: "doc-pages" }));
      return row;
    })));
  } catch (err) {
    box.replaceChildren(errorBox(err));
  }
}

async function removeDocument(state, doc) {
  if (!await confirmAction(`Delete ${doc.filename}?`, "Its pages, images and vectors are removed from the corpus.")) return;
  try {
    await del(chosenPath(state, `/documents/${doc.id}`));
    await state.refresh();
  } catch (err) {
    $("#documents-list").prepend(errorBox(err));
  }
}

export function initDocuments(state) {
  state.onCorpus(() => renderDocuments(state));
  $("#upload-files").addEventListener("change", (e) => choose(e.target.files));
  const zone = $("#drop-zone");
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => { e.preventDefault(); zone.classList.remove("over"); choose(e.dataTransfer.files); });
  $("#upload-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try { await upload(state, e.target); } catch (err) { formStatus(e.target, err, true); }
  });
}
