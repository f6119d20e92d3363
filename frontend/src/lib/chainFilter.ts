// The chains list's filter: a chain is kept when one of its links' task (name or pid) or lock contains the text.
import type { Chain } from '../api/stallTypes';

export function chainMatches(c: Pick<Chain, 'id' | 'links'>, text: string): boolean {
  const t = text.trim().toLowerCase();
  if (!t) return true;
  if (t.replace(/^#/, '') === String(c.id)) return true;
  return c.links.some((l) => [l.comm ?? '', l.pid === null ? '' : String(l.pid), l.lock ?? ''].some((x) => x.toLowerCase().includes(t)));
}
