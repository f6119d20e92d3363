// Tooltip HTML, safe by construction. ECharts renders a tooltip formatter's string as HTML, so anything that
// came from a trace or a user (function, lock, comm and file names, print text, messages) must be escaped.
// `html` is a tagged template that escapes every interpolated value unless that value is itself Html
// (another html`` fragment): a formatter built with it cannot forget to escape.

/** A fragment of HTML whose interpolations have been escaped. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

function piece(v: unknown): string {
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(piece).join('');
  if (v === null || v === undefined || v === false) return '';
  return escapeHtml(String(v));
}

/** html`<b>${name}</b>`: the literal parts as written, every value escaped (Html values and arrays of them kept). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0];
  values.forEach((v, i) => {
    out += piece(v) + strings[i + 1];
  });
  return new Html(out);
}

/** Lines of a tooltip, joined by line breaks; empty ones dropped. Returns the string ECharts expects. */
export function tooltipLines(...lines: (Html | string | null | undefined | false)[]): string {
  return lines
    .filter((l): l is Html | string => l !== null && l !== undefined && l !== false && String(l) !== '')
    .map(piece)
    .join('<br/>');
}
