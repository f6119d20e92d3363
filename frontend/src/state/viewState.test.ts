import { describe, expect, it } from 'vitest';
import { DEFAULT_VIEW, decodeView, encodeView, parseRequestRef, parseSort, updateView, type ViewState } from './viewState';

describe('view state <-> URL', () => {
  it('decodes an empty query to the defaults and encodes the defaults to nothing', () => {
    expect(decodeView(new URLSearchParams(''))).toEqual(DEFAULT_VIEW);
    expect(encodeView(DEFAULT_VIEW).toString()).toBe('');
  });

  it('round-trips every field', () => {
    const v: ViewState = {
      tab: 'sources',
      by: 'device',
      pid: 804,
      dev: '8,0',
      req: { sourceId: 1, line: 2 },
      t0: 81092472813,
      t1: 96718761435,
      sort: { column: 'd2c.p99', desc: false },
      order: 'q2c',
      hm: 'd2c',
      chain: 2,
      link: 3,
      lock: 'xfs_buf_lock',
      fgUnit: 'stacks',
      fgPid: 30495,
      fgComm: 'file_writer',
      fgQ: 'xfs_buf_lock',
      fgInv: true,
      fgZoom: ['dd', 'entry_SYSCALL_64_fastpath'],
      fgDiff: true,
      fgA: 4,
      fgB: 5,
      fgBAn: 'L8VWhW46',
    };
    const qs = encodeView(v).toString();
    expect(qs).toBe(
      'tab=sources&by=device&pid=804&dev=8%2C0&t0=81092472813&t1=96718761435&sort=d2c.p99&order=q2c&hm=d2c&req=1%3A2' +
        '&chain=2&link=3&lock=xfs_buf_lock&fg_unit=stacks&fg_pid=30495&fg_comm=file_writer&fg_q=xfs_buf_lock&fg_inv=1' +
        '&fg_zoom=dd%3Bentry_SYSCALL_64_fastpath&fg_diff=1&fg_a=4&fg_b=5&fg_ban=L8VWhW46',
    );
    expect(decodeView(new URLSearchParams(qs))).toEqual(v);
  });

  it('decodes a shared link', () => {
    const v = decodeView(new URLSearchParams('pid=804&req=1:1&sort=-i2d.p95&t0=100&t1=200'));
    expect(v.pid).toBe(804);
    expect(v.req).toEqual({ sourceId: 1, line: 1 });
    expect(v.sort).toEqual({ column: 'i2d.p95', desc: true });
    expect([v.t0, v.t1]).toEqual([100, 200]);
  });

  it('rejects malformed values', () => {
    const v = decodeView(new URLSearchParams('tab=x&by=disk&pid=abc&req=1-2&t0=5&t1=3&sort=foo.bar&order=zzz&hm=x2y'));
    expect(v).toEqual(DEFAULT_VIEW);
    expect(decodeView(new URLSearchParams('t0=5')).t0).toBe(5);
    expect(encodeView({ ...DEFAULT_VIEW, t0: 5 }).toString()).toBe(''); // a half window is not written
    expect(parseRequestRef('3:17')).toEqual({ sourceId: 3, line: 17 });
    expect(parseRequestRef('3:')).toBeNull();
    expect(parseSort('-count')).toEqual({ column: 'count', desc: true });
    expect(parseSort('key')).toEqual({ column: 'key', desc: false });
  });

  it('keeps nanosecond precision of large times', () => {
    const t = 1_700_000_000_123_456_789 / 1000; // ~1.7e15, well inside 2^53
    const v = decodeView(encodeView({ ...DEFAULT_VIEW, t0: Math.round(t), t1: Math.round(t) + 1 }));
    expect(v.t0).toBe(Math.round(t));
  });

  it('changing the grouping clears the row filters', () => {
    const v = updateView({ ...DEFAULT_VIEW, pid: 804 }, { by: 'device' });
    expect(v.by).toBe('device');
    expect(v.pid).toBeNull();
    expect(updateView({ ...DEFAULT_VIEW, pid: 804 }, { order: 'd2c' }).pid).toBe(804);
  });

  it('no tab in the URL means the analysis default; a stalls link opens the Stalls tab', () => {
    expect(decodeView(new URLSearchParams('')).tab).toBeNull();
    expect(decodeView(new URLSearchParams('tab=stalls&chain=1&link=3')).tab).toBe('stalls');
    expect(decodeView(new URLSearchParams('tab=offcpu')).tab).toBe('offcpu');
    expect(decodeView(new URLSearchParams('link=0')).link).toBeNull();
    expect(decodeView(new URLSearchParams('fg_zoom=a;;b')).fgZoom).toEqual(['a', 'b']);
  });

  it('another chain clears the link; inverting or another task clears the zoom', () => {
    const v = { ...DEFAULT_VIEW, chain: 1, link: 3, fgZoom: ['dd'] };
    expect(updateView(v, { chain: 2 }).link).toBeNull();
    expect(updateView(v, { chain: 1 }).link).toBe(3);
    expect(updateView(v, { fgInv: true }).fgZoom).toEqual([]);
    expect(updateView(v, { fgComm: 'dd' }).fgZoom).toEqual([]);
    expect(updateView(v, { fgQ: 'lock' }).fgZoom).toEqual(['dd']);
  });
});
