// Small DOM helpers shared by the views: elements, messages, tables, dialogs.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

export const $ = (selector, root = document) => root.querySelector(selector);

export function errorBox(err) {
  const text = err && err.message ? err.message : String(err);
  const code = err && err.code ? ` (${err.status ? err.status + " " : ""}${err.code})` : "";
  return el("div", { class: "error", role: "alert" }, el("strong", { text: "Error" + code + ": " }), text);
}

// Show a form's outcome in its role=status element; errors also get role=alert.
export function formStatus(form, message, isError = false) {
  const box = form.querySelector(".form-status");
  box.replaceChildren(isError ? errorBox(message) : document.createTextNode(message || ""));
}

export function emptyState(text, ...actions) {
  return el("div", { class: "empty" }, el("p", { text }), ...actions);
}

export function table(head, rows, caption) {
  return el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption || "table" },
    el("table", {}, caption ? el("caption", { text: caption }) : null,
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c, i) =>
        i === 0 ? el("th", { scope: "row" }, c) : el("td", {}, c)))))));
}

export const fmt = (x, digits = 3) => (typeof x === "number" ? x.toFixed(digits) : String(x ?? "–"));
export const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");
export const bytes = (n) => (n > 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${Math.max(1, Math.round(n / 1e3))} kB`);

// Open a native modal <dialog> (focus trapped, Esc cancels); resolves with its returnValue when it closes.
export function dialogResult(dialog) {
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue), { once: true });
  });
}

// A modal confirmation. Resolves true on OK.
export async function confirmAction(title, text, okLabel = "Delete") {
  $("#confirm-title").textContent = title;
  $("#confirm-text").textContent = text;
  $("#confirm-ok").textContent = okLabel;
  return (await dialogResult($("#confirm-dialog"))) === "ok";
}
