// What this browser keeps to act on a shared server (docs/SECURITY.md): the server's token after one sign-in, and
// the edit key of each analysis it uploaded (the server returns a key once, at upload). Both live in localStorage:
// the token is sent as `Authorization: Bearer` (client.ts, upload.ts), an analysis' key as `X-Edit-Key` when it is
// changed or deleted; the ids of the kept keys are this browser's own analyses (listed without the token).

const TOKEN = 'stallscope.token';
const OWN = 'stallscope.own-analyses';
/** The server lists at most this many named ids at once (GET /api/analyses?id=…). */
export const MAX_OWN = 500;

type Own = { id: string; editKey: string }[];

function read(key: string): string | null {
  try {
    return window.localStorage.getItem(key);
  } catch {
    return null; // storage disabled: nothing kept
  }
}

function write(key: string, value: string | null): void {
  try {
    if (value === null) window.localStorage.removeItem(key);
    else window.localStorage.setItem(key, value);
  } catch {
    /* storage disabled or full: kept for this page only */
  }
}

export function getToken(): string | null {
  const t = read(TOKEN);
  return t && t.trim() ? t : null;
}

export function setToken(token: string | null): void {
  write(TOKEN, token && token.trim() ? token.trim() : null);
}

function own(): Own {
  try {
    const v: unknown = JSON.parse(read(OWN) ?? '[]');
    if (!Array.isArray(v)) return [];
    return v.filter((e): e is Own[number] => typeof e?.id === 'string' && typeof e?.editKey === 'string');
  } catch {
    return [];
  }
}

/** The analyses this browser created, newest first. */
export function ownIds(): string[] {
  return own().map((e) => e.id);
}

export function editKeyOf(id: string): string | null {
  return own().find((e) => e.id === id)?.editKey ?? null;
}

/** Keep an analysis' edit key (given once, at upload): newest first, the newest MAX_OWN. */
export function keepEditKey(id: string, editKey: string): void {
  write(OWN, JSON.stringify([{ id, editKey }, ...own().filter((e) => e.id !== id)].slice(0, MAX_OWN)));
}

export function forgetAnalysis(id: string): void {
  write(OWN, JSON.stringify(own().filter((e) => e.id !== id)));
}

/** Headers for changing or deleting an analysis: its edit key when this browser has it (the token goes on every
 * request by client.ts). */
export function editHeaders(id: string): Record<string, string> {
  const key = editKeyOf(id);
  return key ? { 'X-Edit-Key': key } : {};
}

/** `Authorization` for the token, when this browser has signed in. */
export function tokenHeaders(): Record<string, string> {
  const t = getToken();
  return t ? { Authorization: `Bearer ${t}` } : {};
}
