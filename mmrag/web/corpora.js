// Corpora: list, create (with its spaces), delete with confirmation, pick one.
import { corpusPath, del, post } from "./api.js";
import { $, confirmAction, el, emptyState, errorBox, formStatus, table, when } from "./ui.js";

const LABELS = { text: "text (MiniLM dense)", bm25: "bm25 (sparse words)", clip: "clip (images)",
  colpali: "colpali (late interaction)", document: "document (title, entities, periods)" };
const NOT_SPACES = ["vlm"]; // /health lists the answer model among the components that are off

// The spaces /health knows (on, and off with the reason), so new kinds of space appear by themselves.
function renderSpaces(health) {
  const box = $("#corpus-spaces");
  const names = [...Object.keys(health?.spaces || {}), ...Object.keys(health?.unavailable || {})]
    .filter((n, i, all) => !NOT_SPACES.includes(n) && all.indexOf(n) === i);
  box.replaceChildren(...names.map((name) => {
    const label = LABELS[name] || name;
    const why = health?.unavailable?.[name];
    const id = `space-${name}`;
    return el("div", { class: "check" },
      el("input", { type: "checkbox", id, value: name, checked: !why, disabled: !!why,
        "aria-describedby": why ? `${id}-why` : null }),
      el("label", { for: id, text: label }),
      why ? el("small", { id: `${id}-why`, class: "muted", text: ` off: ${why}` }) : null);
  }));
}

function renderList(state) {
  const box = $("#corpora-list");
  if (!state.corpora.length) {
    box.replaceChildren(emptyState("No corpus yet. Create one above, then upload documents into it."));
    return;
  }
  const rows = state.corpora.map((c) => [
    el("span", {}, c.name, state.corpus?.name === c.name ? el("span", { class: "badge", text: "chosen" }) : null),
    c.config.spaces.join(", "), String(c.documents), String(c.pages), when(c.created_at),
    el("span", { class: "actions" },
      el("button", { type: "button", onclick: async () => { await state.refresh(c.name); state.show("documents"); },
        "aria-label": `Open corpus ${c.name}`, text: "Open" }),
      el("button", { type: "button", class: "danger", "aria-label": `Delete corpus ${c.name}`, text: "Delete",
        onclick: () => remove(state, c) })),
  ]);
  box.replaceChildren(table(["Name", "Spaces", "Documents", "Pages", "Created", "Actions"], rows, "Corpora"));
}

async function remove(state, corpus) {
  const sure = await confirmAction(`Delete corpus ${corpus.name}?`,
    `This deletes its ${corpus.documents} documents, ${corpus.pages} pages and their vectors. It cannot be undone.`);
  if (!sure) return;
  try {
    await del(corpusPath(corpus.name));
    await state.refresh();
  } catch (err) {
    $("#corpora-list").prepend(errorBox(err));
  }
}

export function initCorpora(state) {
  state.onCorpus(() => { renderSpaces(state.health); renderList(state); });
  $("#corpus-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const form = e.target;
    const name = $("#corpus-name").value.trim();
    const spaces = [...form.querySelectorAll("#corpus-spaces input:checked")].map((i) => i.value);
    formStatus(form, `Creating ${name}…`);
    try {
      await post("/corpora", { name, config: spaces.length ? { spaces } : null });
      formStatus(form, `Corpus ${name} created. Next: upload documents.`);
      form.reset();
      await state.refresh(name);
    } catch (err) {
      formStatus(form, err, true);
    }
  });
}
