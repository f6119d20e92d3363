import { describe, expect, it } from 'vitest';
import { chainMatches } from './chainFilter';

type L = { comm: string | null; pid: number | null; lock: string | null };
const chain = (id: number, links: L[]) => ({ id, links }) as unknown as Parameters<typeof chainMatches>[0];

describe('chainMatches', () => {
  const c = chain(3, [
    { comm: 'file_writer', pid: 3271, lock: 'xfs_ilock via down_write' },
    { comm: 'xfslogd/0', pid: 419, lock: null },
  ]);
  it("keeps a chain by any link's task, pid or lock, or by its number", () => {
    expect(chainMatches(c, '')).toBe(true);
    expect(chainMatches(c, 'XFSLOGD')).toBe(true);
    expect(chainMatches(c, '3271')).toBe(true);
    expect(chainMatches(c, 'xfs_ilock')).toBe(true);
    expect(chainMatches(c, '#3')).toBe(true);
    expect(chainMatches(c, 'postgres')).toBe(false);
    expect(chainMatches(c, '#4')).toBe(false);
  });
});
