import { describe, expect, it } from 'vitest';
import type { HeatmapEvent } from '../../charts/heatmap';
import { eventLink } from './eventLink';

const NONE = { dev: null, rwbs: null, sector: null, nsect: null, func: null, lock: null, lock_key: null, wait: null, chain_id: null, link: null };

// GET /api/analyses/{id}/heatmap/events on the samples (see tests/test_heatmap.py).
const XFSAILD: HeatmapEvent = {
  ...NONE,
  ref: { kind: 'request', source_id: 1, line: 9915, pid: 804 },
  t_ns: 11983096600,
  latency_ns: 15626265317,
  end_known: true,
  comm: 'xfsaild/sda1',
  dev: '8,0',
  rwbs: 'WM',
};
const FLUSH: HeatmapEvent = {
  ...NONE,
  ref: { kind: 'wait', source_id: 1, line: 72, pid: 505 },
  t_ns: 358613964695000,
  latency_ns: 320902000,
  end_known: false,
  comm: 'flush-8:0',
  lock: 'xfs_ilock via down_read',
  lock_key: 'xfs_ilock',
  chain_id: 1,
  link: 1,
};
const READER: HeatmapEvent = { ...FLUSH, ref: { kind: 'wait', source_id: 1, line: 95, pid: 31161 }, lock: null, lock_key: null, chain_id: null, link: null };
const SCHEDULE: HeatmapEvent = {
  ...NONE,
  ref: { kind: 'call', source_id: 1, line: 44, pid: 4242 },
  t_ns: 7341201619000,
  latency_ns: 13271377,
  end_known: true,
  comm: 'postgres',
  func: 'schedule',
  lock: 'wait_transaction_locked',
  lock_key: 'wait_transaction_locked',
  wait: { kind: 'wait', source_id: 1, line: 45, pid: 4242 },
  chain_id: 1,
  link: 1,
};

describe('eventLink', () => {
  it('opens a request in Dispatch', () => {
    expect(eventLink(XFSAILD)).toEqual({ patch: { tab: 'dispatch', req: { sourceId: 1, line: 9915 } }, target: 'request-detail', label: 'open the request' });
  });

  it('opens the chain link of a wait, also one that waits alongside the link', () => {
    expect(eventLink(FLUSH)).toEqual({
      patch: { tab: 'stalls', chain: 1, link: 1, wait: { sourceId: 1, line: 72 } },
      target: 'chain-detail',
      label: 'open chain link 1',
    });
  });

  it('shows a wait in no chain among the waits on its lock', () => {
    expect(eventLink(READER)).toEqual({ patch: { tab: 'stalls', lock: null, wait: { sourceId: 1, line: 95 } }, target: 'waits-panel', label: 'show among the waits' });
    expect(eventLink({ ...READER, lock: 'kjournald2' })?.patch.lock).toBe('kjournald2');
  });

  it('opens the wait inside a call, and nothing for a call that did not wait', () => {
    expect(eventLink(SCHEDULE)?.patch).toEqual({ tab: 'stalls', chain: 1, link: 1, wait: { sourceId: 1, line: 45 } });
    expect(eventLink({ ...SCHEDULE, wait: null, chain_id: null, link: null, lock: null })).toBeNull();
  });
});
