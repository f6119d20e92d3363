import { describe, expect, it } from 'vitest';
import { wakersParams } from '../api/queries';
import { formatUs, hasWakerStacks, linkWakerQuery, pairRef, rowsText, selectPair, share, taskName } from './wakers';

// The cksum pairs of bcc's offwaketime example (see tests/test_wakers.py): the page-lock read merged from
// line 85 (multi-line) and line 291 (folded), then the same wait woken by `run` (line 284).
const TOP = { rows: [{ source_id: 1, line: 85 }, { source_id: 1, line: 291 }], records: 2, value_us: 8054934 };
const SECOND = { rows: [{ source_id: 1, line: 284 }], records: 1, value_us: 109480 };

describe('offwaketime helpers', () => {
  it('finds the analyses that have waker stacks', () => {
    expect(hasWakerStacks([{ waker_stacks: 0 }, { waker_stacks: 53 }])).toBe(true);
    expect(hasWakerStacks([{ waker_stacks: 0 }])).toBe(false);
    expect(hasWakerStacks([])).toBe(false);
  });

  it('asks for a link’s task and its lock exactly (lock_key), not for the end of a chain', () => {
    // the ext4 sample's first link (tests/test_wakers.py): its label and the lock it names
    const pg = { pid: 4242, comm: 'postgres', lock: 'wait_transaction_locked', lock_key: 'jbd2 handle', duration_ns: 13268000 };
    expect(linkWakerQuery(pg)).toEqual({ pid: 4242, comm: 'postgres', lockKey: 'jbd2 handle' });
    expect(linkWakerQuery({ ...pg, lock: 'xfs_ilock via down_write', lock_key: 'xfs_ilock' })?.lockKey).toBe('xfs_ilock');
    // a wait with no known lock still has a waker
    expect(linkWakerQuery({ ...pg, lock: null, lock_key: null })).toEqual({ pid: 4242, comm: 'postgres', lockKey: null });
    // the interrupt that ends the chain: running, not waiting
    expect(linkWakerQuery({ pid: 0, comm: '<idle>', lock: null, lock_key: null, duration_ns: 0 })).toBeNull();
    expect(linkWakerQuery({ pid: null, comm: null, lock: 'down', lock_key: 'semaphore', duration_ns: 5 })).toBeNull();
    expect(linkWakerQuery({ pid: null, comm: 'cksum', lock: 'down', lock_key: 'semaphore', duration_ns: null })).toEqual({
      pid: null,
      comm: 'cksum',
      lockKey: 'semaphore',
    });
  });

  it('asks /wakers for a lock exactly (lock_key), never as a substring (lock)', () => {
    expect(wakersParams({ pid: 4242, comm: 'postgres', lockKey: 'jbd2 handle', limit: 3 })).toEqual({
      limit: 3,
      pid: 4242,
      comm: 'postgres',
      lock_key: 'jbd2 handle',
    });
    expect(wakersParams({ pid: null, comm: null, lockKey: null, limit: 100 })).toEqual({ limit: 100 });
  });

  it('writes µs with units and shares as percentages', () => {
    expect(formatUs(8054934)).toBe('8.05 s (8,054,934 µs)');
    expect(formatUs(13265)).toBe('13.27 ms (13,265 µs)');
    expect(formatUs(0)).toBe('0 ns (0 µs)');
    expect(share(8054934, 8400011)).toBe('95.9 %');
    expect(share(109480, 8400011)).toBe('1.30 %');
    expect(share(5, 0)).toBe('—');
    expect(taskName('postgres', 4242)).toBe('postgres 4242');
    expect(taskName('cksum', null)).toBe('cksum');
    expect(taskName(null, null)).toBe('?');
    // the idle task is named one way, whether ftrace's <idle> or bcc's swapper/N (its CPU kept)
    expect(taskName('swapper/3', 0)).toBe('<idle> 0 (swapper/3)');
    expect(taskName('<idle>', 0)).toBe('<idle> 0');
  });

  it('names a pair by its first record and selects it', () => {
    expect(pairRef(TOP)).toEqual({ sourceId: 1, line: 85 });
    expect(selectPair([TOP, SECOND], null)).toEqual({ pair: TOP, rank: 1 });
    expect(selectPair([TOP, SECOND], { sourceId: 1, line: 284 })).toEqual({ pair: SECOND, rank: 2 });
    expect(selectPair([TOP, SECOND], { sourceId: 1, line: 291 })).toBeNull(); // not a pair's first record
    expect(selectPair([], null)).toBeNull();
  });

  it('says where the records are', () => {
    const name = (id: number) => (id === 1 ? 'bcc-offwaketime_example.txt' : `source ${id}`);
    expect(rowsText(TOP, name)).toBe('bcc-offwaketime_example.txt lines 85, 291');
    expect(rowsText(SECOND, name)).toBe('bcc-offwaketime_example.txt line 284');
    const capped = { rows: [{ source_id: 1, line: 2 }, { source_id: 2, line: 4 }], records: 12 };
    expect(rowsText(capped, name)).toBe('bcc-offwaketime_example.txt line 2; source 2 line 4 (+10 more)');
  });
});
