// A code editor without a framework: a textarea with a line-number gutter that marks faults.
import { el } from "./app.js";

export class CodeEditor {
  constructor({ id, label, value = "" }) {
    this.gutter = el("div", { class: "gutter", "aria-hidden": "true" });
    this.area = el("textarea", {
      id,
      spellcheck: "false",
      autocapitalize: "off",
      autocomplete: "off",
      "aria-label": label,
      wrap: "off",
    });
    this.area.value = value;
    this.marks = new Map();
    this.node = el("div", { class: "code-editor" }, this.gutter, this.area);
    this.area.addEventListener("input", () => this.paint());
    this.area.addEventListener("scroll", () => (this.gutter.scrollTop = this.area.scrollTop));
    this.area.addEventListener("keydown", (event) => this.key(event));
    this.paint();
  }

  get value() {
    return this.area.value;
  }

  set value(text) {
    this.area.value = text;
    this.paint();
  }

  // Tab indents two spaces; Escape leaves the editor so the keyboard is never trapped.
  key(event) {
    if (event.key === "Escape") {
      this.area.blur();
      return;
    }
    if (event.key !== "Tab" || event.shiftKey || event.ctrlKey || event.altKey) return;
    event.preventDefault();
    const { selectionStart: start, selectionEnd: end } = this.area;
    this.area.setRangeText("  ", start, end, "end");
    this.paint();
  }

  // marks: [{line, severity, message}]; the gutter shows each line's worst finding.
  mark(findings) {
    this.marks = new Map();
    const rank = { error: 3, warning: 2, info: 1 };
    for (const f of findings) {
      if (!f.line) continue;
      const old = this.marks.get(f.line);
      if (!old || rank[f.severity] > rank[old.severity]) this.marks.set(f.line, f);
    }
    this.paint();
  }

  paint() {
    const lines = this.area.value.split("\n").length;
    const rows = [];
    for (let n = 1; n <= lines; n += 1) {
      const found = this.marks.get(n);
      const cls = found ? (found.severity === "error" ? "fault" : found.severity) : "";
      const row = el("div", { class: cls, "data-line": n, title: found ? found.message : null }, String(n));
      rows.push(row);
    }
    this.gutter.replaceChildren(...rows);
    this.gutter.scrollTop = this.area.scrollTop;
  }

  focusLine(line) {
    const text = this.area.value.split("\n");
    let offset = 0;
    for (let n = 1; n < line && n <= text.length; n += 1) offset += text[n - 1].length + 1;
    this.area.focus();
    this.area.setSelectionRange(offset, offset + (text[line - 1] || "").length);
    const lineHeight = parseFloat(getComputedStyle(this.area).lineHeight) || 18;
    this.area.scrollTop = Math.max(0, (line - 4) * lineHeight);
  }
}
