import { describe, expect, it } from 'vitest';
import {
  DEFAULT_VIEW,
  decodeView,
  encodeHeatmapBox,
  encodeView,
  parseHeatmapBox,
  parseRequestRef,
  parseSort,
  updateView,
  waitsOnLockLink,
  type ViewState,
} from './viewState';

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
      btt: true,
      timeAbs: true,
      chain: 2,
      link: 3,
      lock: 'xfs_buf_lock',
      lockKey: 'down',
      idle: true,
      wStart: true,
      fgUnit: 'stacks',
      fgPid: 30495,
      fgComm: 'file_writer',
      fgQ: 'xfs_buf_lock',
      fgInv: true,
      fgZoom: ['dd', 'entry_SYSCALL_64_fastpath'],
      fgDiff: true,
      fgWarm: true,
      fgA: 4,
      fgB: 5,
      fgBAn: 'L8VWhW46',
      v0: 81000000000,
      v1: 97000000000,
      tlN: 80,
      tlSel: { sourceId: 2, line: 45 },
      tlArrows: true,
      tlMark: [81100000000, 81100000250],
      tlPin: ['task:1:42', 'dev:2:8,0'],
      tlFold: ['src:3'],
      tlQ: 'postgres',
      wp: { sourceId: 1, line: 85 },
      wpComm: 'cksum',
      wpLock: 'page lock',
      shm: 'func',
      shf: 'xfs_ilock',
      hbox: { metric: 'func', t0: 358613968921000, t1: 358613975514750, latMin: 4645966, latMax: null },
      wait: { sourceId: 1, line: 94 },
      sql: "SELECT pid, count(*) FROM waits WHERE lock LIKE 'xfs%' GROUP BY 1",
      sqlChart: { kind: 'series', x: 'pid', y: 'count_star()' },
      sqlSort: { col: 'count_star()', desc: true },
    };
    const qs = encodeView(v).toString();
    expect(qs).toBe(
      'tab=sources&by=device&pid=804&dev=8%2C0&t0=81092472813&t1=96718761435&sort=d2c.p99&order=q2c&hm=d2c&btt=1&time=abs&req=1%3A2' +
        '&chain=2&link=3&lock=xfs_buf_lock&lock_key=down&idle=1&w_start=1&fg_unit=stacks&fg_pid=30495&fg_comm=file_writer&fg_q=xfs_buf_lock&fg_inv=1' +
        '&fg_zoom=dd%3Bentry_SYSCALL_64_fastpath&fg_diff=1&fg_warm=1&fg_a=4&fg_b=5&fg_ban=L8VWhW46&v0=81000000000&v1=97000000000' +
        '&tl_n=80&tl_sel=2%3A45&tl_arrows=1&tl_mark=81100000000_81100000250&tl_pin=task%3A1%3A42%7Cdev%3A2%3A8%2C0&tl_fold=src%3A3&tl_q=postgres&wp=1%3A85&wp_comm=cksum&wp_lock=page+lock&shm=func&shf=xfs_ilock' +
        '&hbox=func_358613968921000_358613975514750_4645966_&wait=1%3A94' +
        '&sql=SELECT+pid%2C+count%28*%29+FROM+waits+WHERE+lock+LIKE+%27xfs%25%27+GROUP+BY+1' +
        '&sql_chart=series&sql_x=pid&sql_y=count_star%28%29&sql_sort=count_star%28%29&sql_desc=1',
    );
    expect(decodeView(new URLSearchParams(qs))).toEqual(v);
  });

  it("keeps the SQL console's chart and sort in the URL, by column names, and drops them for another query", () => {
    const names = ['none', 'histogram', 'series'] as const;
    for (const chart of [
      { kind: names[0] },
      { kind: names[1], y: 'duration_ns' },
      { kind: names[2], x: 'start_ns', y: 'a:b|c d' },
    ] as const) {
      const v = { ...DEFAULT_VIEW, tab: 'sql' as const, sql: 'SELECT 1', sqlChart: chart, sqlSort: { col: 'x y', desc: false } };
      const qs = encodeView(v).toString();
      expect(decodeView(new URLSearchParams(qs))).toEqual(v);
      expect(qs).not.toContain('sql_desc');
    }
    expect(decodeView(new URLSearchParams('sql=SELECT+1&sql_chart=series&sql_y=n')).sqlChart).toBeNull(); // no x
    expect(decodeView(new URLSearchParams('sql=SELECT+1&sql_chart=pie&sql_y=n')).sqlChart).toBeNull();
    expect(decodeView(new URLSearchParams('sql_sort=&sql_desc=1')).sqlSort).toBeNull();
    const shown = { ...DEFAULT_VIEW, sql: 'SELECT 1 AS n', sqlChart: { kind: 'none' as const }, sqlSort: { col: 'n', desc: true } };
    expect(updateView(shown, { sqlSort: { col: 'n', desc: false } }).sqlChart).toEqual({ kind: 'none' });
    const other = updateView(shown, { sql: 'SELECT 2 AS m' });
    expect([other.sqlChart, other.sqlSort]).toEqual([null, null]);
    expect(updateView(shown, { sql: 'SELECT 1 AS n' }).sqlSort).toEqual({ col: 'n', desc: true }); // the same query again
  });

  it('decodes a measurement of one or two instants, and nothing malformed', () => {
    expect(decodeView(new URLSearchParams('tl_mark=5_')).tlMark).toEqual([5, null]);
    expect(decodeView(new URLSearchParams('tl_mark=5_9')).tlMark).toEqual([5, 9]);
    expect(decodeView(new URLSearchParams('tl_mark=x_9')).tlMark).toBeNull();
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
    const t = 1_700_000_000_123_456.75; // ~1.7e15 ns with a fraction, well inside 2^53
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

  it('one lock filter of the waits at a time: a lock from a frame (exact) replaces typed text, and back', () => {
    const typed = decodeView(new URLSearchParams('tab=stalls&lock=down'));
    expect([typed.lock, typed.lockKey]).toEqual(['down', null]);
    const exact = updateView(typed, { tab: 'stalls', lockKey: 'down' });
    expect([exact.lock, exact.lockKey]).toEqual([null, 'down']);
    expect(encodeView(exact).toString()).toBe('tab=stalls&lock_key=down');
    expect(updateView(exact, { lock: 'down_' })).toMatchObject({ lock: 'down_', lockKey: null });
    expect(updateView(exact, { lockKey: null })).toMatchObject({ lock: null, lockKey: null });
    expect(updateView(exact, { chain: 2 }).lockKey).toBe('down');
  });

  it("a flame-graph frame's link to the waits on its lock keeps the analysis-wide time range", () => {
    // the Off-CPU tab of the demo incident with a time range selected (as the tooltip's link is built from it)
    const offcpu = decodeView(new URLSearchParams('tab=offcpu&t0=5247900328000&t1=5250204518000&fg_q=xfs_ilock&lock=xfs'));
    const link = waitsOnLockLink(offcpu, 'xfs_ilock');
    const stalls = decodeView(new URLSearchParams(link.slice(1)));
    expect(link.startsWith('?')).toBe(true);
    expect(stalls).toMatchObject({ tab: 'stalls', lockKey: 'xfs_ilock', lock: null, t0: 5247900328000, t1: 5250204518000 });
    expect(stalls.fgQ).toBe('xfs_ilock'); // back on Off-CPU, the same graph
    // a chain open before: closed, its detail would pull the page away from the waits listed on top
    const fromChain = decodeView(new URLSearchParams(waitsOnLockLink({ ...offcpu, chain: 3, link: 2 }, 'xfs_ilock').slice(1)));
    expect(fromChain).toMatchObject({ chain: null, link: null, lockKey: 'xfs_ilock' });
    expect(decodeView(new URLSearchParams(waitsOnLockLink(DEFAULT_VIEW, 'semaphore').slice(1)))).toEqual({
      ...DEFAULT_VIEW,
      tab: 'stalls',
      lockKey: 'semaphore',
    });
  });

  it('keeps the timeline window only when both ends are given in order, and caps the lanes', () => {
    expect(decodeView(new URLSearchParams('v0=5&v1=3'))).toMatchObject({ v0: null, v1: null });
    expect(decodeView(new URLSearchParams('v0=5'))).toMatchObject({ v0: null, v1: null });
    expect(decodeView(new URLSearchParams('v0=-5&v1=3'))).toMatchObject({ v0: -5, v1: 3 });
    expect(decodeView(new URLSearchParams('tl_n=9999')).tlN).toBe(200);
    expect(decodeView(new URLSearchParams('tl_n=0')).tlN).toBe(40);
    expect(decodeView(new URLSearchParams('tab=timeline')).tab).toBe('timeline');
  });

  it('keeps the selected wake-up pair as its first record, and clears it when the pair filters change', () => {
    const v = decodeView(new URLSearchParams('tab=stalls&wp=1:291&wp_comm=cksum'));
    expect([v.tab, v.wp, v.wpComm, v.wpLock]).toEqual(['stalls', { sourceId: 1, line: 291 }, 'cksum', null]);
    expect(decodeView(new URLSearchParams('wp=1-291&wp_comm=&wp_lock=')).wp).toBeNull();
    expect(decodeView(new URLSearchParams('wp_comm=&wp_lock=')).wpComm).toBeNull();
    expect(updateView(v, { wpLock: 'page lock' }).wp).toBeNull();
    expect(updateView(v, { wpComm: null }).wp).toBeNull();
    expect(updateView(v, { wpComm: 'cksum' }).wp).toEqual({ sourceId: 1, line: 291 });
    expect(updateView(v, { wpComm: 'run', wp: { sourceId: 1, line: 223 } }).wp).toEqual({ sourceId: 1, line: 223 });
    expect(updateView(v, { chain: 3 }).wp).toEqual({ sourceId: 1, line: 291 });
  });

  it('keeps a heatmap box only when well formed, and drops it when its heatmap is drawn anew', () => {
    expect(parseHeatmapBox('i2d_100_200_1000_')).toEqual({ metric: 'i2d', t0: 100, t1: 200, latMin: 1000, latMax: null });
    expect(parseHeatmapBox('wait_-5_5__7')).toEqual({ metric: 'wait', t0: -5, t1: 5, latMin: null, latMax: 7 });
    expect(encodeHeatmapBox({ metric: 'wait', t0: -5, t1: 5, latMin: null, latMax: 7 })).toBe('wait_-5_5__7');
    for (const bad of ['i2d_200_100__', 'lock_1_2__', 'i2d_1_2_5_5', 'i2d_1_2', 'd2c_a_2__']) expect(parseHeatmapBox(bad)).toBeNull();
    const d = decodeView(new URLSearchParams('hm=d2c&hbox=d2c_1_2__'));
    expect(updateView(d, { hm: 'i2d' }).hbox).toBeNull();
    expect(updateView(d, { shm: 'func' }).hbox).toEqual(d.hbox); // the Stalls heatmap: not this box
    const s = decodeView(new URLSearchParams('shm=func&shf=xfs_ilock&hbox=func_1_2__'));
    expect(updateView(s, { shf: 'down_write' })).toMatchObject({ shf: 'down_write', hbox: null });
    expect(updateView(s, { shm: 'wait' })).toMatchObject({ shm: 'wait', shf: null, hbox: null });
    expect(updateView(s, { hm: 'q2c' }).hbox).toEqual(s.hbox);
    expect(updateView(s, { t0: 1, t1: 2 }).hbox).toEqual(s.hbox);
  });

  it('leaves the Stalls heatmap metric automatic until one is chosen', () => {
    expect(decodeView(new URLSearchParams('')).shm).toBeNull(); // waits when there are any, else function durations
    expect(decodeView(new URLSearchParams('shm=wait')).shm).toBe('wait');
    expect(encodeView(decodeView(new URLSearchParams('shm=wait'))).toString()).toBe('shm=wait');
    const s = decodeView(new URLSearchParams('hbox=func_1_2__'));
    expect(updateView(s, { shm: 'wait' }).hbox).toBeNull(); // a box on the automatic metric's heatmap
  });
});
