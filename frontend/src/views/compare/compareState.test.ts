import { describe, expect, it } from 'vitest';
import { compareLink, decodeCompare, encodeCompare, formatSeconds, halves, lockWaitsLink, parseSeconds, sideLink } from './compareState';

describe('compare URL state', () => {
  it('round-trips and leaves defaults out', () => {
    const s = decodeCompare(new URLSearchParams('a=A1&b=B2&a_from=10&a_to=20&b_from=-5&stat=max&x_time=own'));
    expect(s).toEqual({ a: 'A1', b: 'B2', aFrom: 10, aTo: 20, bFrom: -5, bTo: null, stat: 'max', xTime: 'own' });
    expect(encodeCompare(s).toString()).toBe('a=A1&b=B2&a_from=10&a_to=20&b_from=-5&stat=max&x_time=own');
    expect(encodeCompare({ ...s, stat: 'p99', xTime: 'shared' }).toString()).toBe('a=A1&b=B2&a_from=10&a_to=20&b_from=-5');
  });

  it('drops malformed values', () => {
    const s = decodeCompare(new URLSearchParams('a=A&a_from=1e3&a_to=99999999999999999999&stat=p42&x_time=mine'));
    expect([s.aFrom, s.aTo, s.stat, s.b, s.xTime]).toEqual([null, null, 'p99', null, 'shared']);
  });

  it('builds links: a comparison, two halves, a side with its range', () => {
    expect(compareLink({ a: 'A', b: 'B' })).toBe('/compare?a=A&b=B');
    expect(halves('A', 100, 201)).toMatchObject({ a: 'A', b: 'A', aFrom: 100, aTo: 150, bFrom: 151, bTo: 201 });
    expect(sideLink('A', { from: null, to: 500, span: [100, 900] }, { tab: 'stalls', lockKey: 'xfs_ilock' })).toBe(
      '/a/A?tab=stalls&t0=100&t1=500&lock_key=xfs_ilock',
    );
    expect(sideLink('A', { from: null, to: null, span: [100, 900] }, { tab: 'dispatch', dev: '8,0' })).toBe(
      '/a/A?tab=dispatch&dev=8%2C0',
    );
  });

  it("links a lock row to the waits it counts: starting in the side's range", () => {
    const side = { analysis_id: 'A', from_ns: null, to_ns: 500, span_ns: [100, 900] };
    expect(lockWaitsLink(side, 'xfs_ilock')).toBe('/a/A?tab=stalls&t0=100&t1=500&lock_key=xfs_ilock&w_start=1');
    expect(lockWaitsLink({ ...side, to_ns: null }, 'xfs_ilock')).toBe('/a/A?tab=stalls&lock_key=xfs_ilock');
  });

  it('reads seconds exactly to the ns', () => {
    expect(parseSeconds('358613.950000001')).toBe(358613950000001);
    expect(parseSeconds('0.0154')).toBe(15400000);
    expect(parseSeconds('12')).toBe(12e9);
    expect(parseSeconds('.5')).toBe(5e8);
    expect(parseSeconds('-1.5')).toBe(-1.5e9);
    expect(parseSeconds('abc')).toBeNull();
    expect(parseSeconds('')).toBeNull();
    expect(formatSeconds(358613950000001)).toBe('358613.950000001');
    expect(parseSeconds(formatSeconds(15463139))).toBe(15463139);
  });
});
