// CSV a spreadsheet opens as data, never as formulas (the SQL tab's download; the server's exports do the same in
// backend/inert_csv.py). A text cell beginning with =, +, -, @, a tab or a carriage return gets a single quote
// before it and is quoted (OWASP's advice), unless it is a plain decimal number (-12 stays -12); numbers, true/false
// and NULL (empty) are written as they are; a cell holding ", comma, CR or LF is quoted with its quotes doubled.
const RISKY_START = /^[=+\-@\t\r]/;
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const NEEDS_QUOTES = /[",\r\n]/;

export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') return typeof value === 'object' ? csvCell(JSON.stringify(value)) : String(value);
  const risky = RISKY_START.test(value) && !NUMBER.test(value);
  const text = risky ? `'${value}` : value;
  return risky || text === '' || NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(names: string[], rows: unknown[][]): string {
  return [names, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}
