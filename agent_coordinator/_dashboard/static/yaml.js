// JSON values written as block YAML (for the editor's YAML view); strings are quoted when needed.
const PLAIN = /^[A-Za-z_][A-Za-z0-9_ ./-]*$/;
const RESERVED = /^(true|false|null|yes|no|on|off|y|n|~)$/i;

function scalar(value) {
  if (value === null) return "null";
  if (typeof value === "string") {
    return PLAIN.test(value) && !RESERVED.test(value) && !value.endsWith(" ") ? value : JSON.stringify(value);
  }
  return String(value);
}

function key(name) {
  return PLAIN.test(name) && !RESERVED.test(name) && !name.endsWith(" ") ? name : JSON.stringify(name);
}

function lines(value, indent) {
  const pad = " ".repeat(indent);
  if (Array.isArray(value)) {
    if (!value.length) return null;
    const out = [];
    for (const item of value) {
      const inner = lines(item, indent + 2);
      if (inner === null) out.push(`${pad}- ${emptyOr(item)}`);
      else out.push(`${pad}- ${inner[0].trimStart()}`, ...inner.slice(1));
    }
    return out;
  }
  if (value && typeof value === "object") {
    const names = Object.keys(value);
    if (!names.length) return null;
    const out = [];
    for (const name of names) {
      const inner = lines(value[name], indent + 2);
      if (inner === null) out.push(`${pad}${key(name)}: ${emptyOr(value[name])}`);
      else out.push(`${pad}${key(name)}:`, ...inner);
    }
    return out;
  }
  return null;
}

function emptyOr(value) {
  if (Array.isArray(value)) return "[]";
  if (value && typeof value === "object") return "{}";
  return scalar(value);
}

export function toYaml(value) {
  const out = lines(value, 0);
  return (out === null ? emptyOr(value) : out.join("\n")) + "\n";
}
