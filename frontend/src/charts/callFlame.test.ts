import { describe, expect, it } from 'vitest';
import type { Call } from '../api/stallTypes';
import { buildCallsOption, callBars, callWindow } from './callFlame';

const call = (line: number, func: string, depth: number, entry: number | null, exit: number | null): Call => ({
  source_id: 1, line, func, depth, entry_ns: entry, exit_ns: exit, duration_ns: entry !== null && exit !== null ? exit - entry : null,
  partial: exit === null || entry === null, comm: 'file_writer', cpu: 13,
});
const S = 358613968921000;
const E = 358614285596000;
const calls = [
  call(92, 'xfs_iomap', 8, S, E + 1000),
  call(94, 'down_write', 10, S, E),
  call(77, 'handle_mm_fault', 0, S - 7000, null),
  call(115, 'finish_task_switch', 11, E - 1000, E),
];

describe('call flame chart', () => {
  const w = { ...callWindow(S, E), waitStart: S, waitEnd: E, waitLine: 94 };

  it('pads the window by 15 % of the wait (200 µs at least)', () => {
    expect(callWindow(S, E)).toEqual({ t0: S - 47501250, t1: E + 47501250 });
    expect(callWindow(1000, 1000)).toEqual({ t0: 1000 - 200000, t1: 1000 + 200000 });
  });

  it('bars relative to the wait start; an open call runs to the window end', () => {
    const b = callBars(calls, w);
    expect(b.map((x) => [x.call.func, x.start, x.end, x.depth, x.open])).toEqual([
      ['xfs_iomap', 0, E + 1000 - S, 8, false],
      ['down_write', 0, E - S, 10, false],
      ['handle_mm_fault', -7000, w.t1 - S, 0, true],
      ['finish_task_switch', E - 1000 - S, E - S, 11, false],
    ]);
  });

  const opt = buildCallsOption(calls, w) as any;
  it('x in ms since the wait began, y = depth (root on top)', () => {
    expect(opt.xAxis.name).toBe('time since the wait began (ms)');
    expect(opt.xAxis.min).toBeCloseTo(-47.50125, 9);
    expect(opt.yAxis.inverse).toBe(true);
    expect(opt.yAxis.max).toBe(11.5);
    expect(opt.series[0].data[1]).toEqual([0, 316.675, 10, 1]);
    expect(opt.series[0].markLine.data.map((d: any) => d.name)).toEqual(['wait begins', 'wait ends (+316.7 ms)']);
  });

  it('tooltip: function, duration, line', () => {
    const html = opt.tooltip.formatter({ componentType: 'series', dataIndex: 1 });
    expect(html).toContain('down_write()');
    expect(html).toContain('316.7 ms');
    expect(html).toContain('line 94');
    expect(opt.tooltip.formatter({ componentType: 'series', dataIndex: 2 })).toContain('still open at the window end');
  });
});
