import { describe, expect, it } from 'vitest';
import type { Chain, Mark } from '../api/stallTypes';
import { buildChainOption, chainLayout, markLineData } from './chainWaterfall';

// The chain of the xfs unwritten-extent seed excerpt, as /chains returns it (stacks shortened).
const chain = {
  id: 1,
  duration_ns: 316673836,
  links: [
    {
      source_id: 1, wait_line: 94, pid: 30495, comm: 'file_writer', lock: 'xfs_ilock via down_write',
      start_ns: 358613968921000, end_ns: 358614285596000, duration_ns: 316673836, end_known: true,
      relation: 'held_by', inferred: true, evidence: 'inferred holder: xfsconvertd/7 (251)',
      stack: ['xfs_iomap', 'xfs_ilock', 'down_write'], line: 94, also_waiting: [], request: null,
    },
    {
      source_id: 1, wait_line: 61, pid: 251, comm: 'xfsconvertd/7', lock: 'xfs_buf_lock via down',
      start_ns: 358613942886000, end_ns: 358614285381000, duration_ns: 342495000, end_known: true,
      relation: 'io_completion', inferred: true, evidence: 'woken at line 112 by xfslogd/7 (219)',
      stack: ['_xfs_buf_find', 'xfs_buf_lock', 'down'], line: 61, also_waiting: [], request: null,
    },
    {
      source_id: 1, wait_line: null, pid: 219, comm: 'xfslogd/7', lock: null,
      start_ns: 358614285381000, end_ns: 358614285381000, duration_ns: 0, end_known: true,
      relation: null, inferred: false, evidence: 'xfslogd/7 (219) woke xfsconvertd/7 (251)',
      stack: ['xfs_buf_iodone_work', 'xfs_buf_unlock', 'up'], line: 112, also_waiting: [], request: null,
    },
  ],
} as unknown as Chain;
const marks: Mark[] = [
  { source_id: 1, line: 73, t_ns: 358613968909000, cpu: 13, pid: 30495, comm: 'file_writer', text: 'delay start' },
  { source_id: 1, line: 999, t_ns: 358699000000000, cpu: 1, pid: 1, comm: 'x', text: 'far away' },
] as Mark[];
const O = 358613942886000; // origin: xfsconvertd's wait began first

describe('chain waterfall', () => {
  const lay = chainLayout(chain, marks);

  it('one row per task, bars relative to the earliest wait', () => {
    expect(lay.origin).toBe(O);
    expect(lay.rows.map((r) => r.label)).toEqual(['file_writer 30495', 'xfsconvertd/7 251', 'xfslogd/7 219']);
    expect(lay.rows.map((r) => [r.start, r.end])).toEqual([
      [358613968921000 - O, 358614285596000 - O],
      [0, 342495000],
      [342495000, 342495000],
    ]);
    expect(lay.rows.map((r) => r.kind)).toEqual(['wait', 'wait', 'instant']);
    expect(lay.rows[0].text).toBe('xfs_ilock via down_write · 316.7 ms');
    expect(lay.rows[2].text).toBe('I/O completion: wakes xfsconvertd/7 251');
    expect(lay.span).toBe(358614285596000 - O);
  });

  it('arrows go from the holder / waker up to the waiter at the end of the wait', () => {
    expect(lay.arrows).toEqual([
      { from: 1, to: 0, at: 358614285596000 - O, label: 'held by', inferred: true, evidence: 'inferred holder: xfsconvertd/7 (251)' },
      { from: 2, to: 1, at: 342495000, label: 'I/O completion', inferred: true, evidence: 'woken at line 112 by xfslogd/7 (219)' },
    ]);
  });

  it('keeps only the print markers near the chain', () => {
    expect(lay.marks).toEqual([{ at: 358613968909000 - O, text: 'delay start', line: 73 }]);
  });

  const opt = buildChainOption(chain, marks, 3) as any;

  it('a ms time axis, the rows as categories, bars in ms', () => {
    expect(opt.xAxis.name).toBe('time since the first wait (ms)');
    expect(opt.yAxis.data).toEqual(['file_writer 30495', 'xfsconvertd/7 251', 'xfslogd/7 219']);
    const bars = opt.series[0];
    expect(bars.type).toBe('custom');
    expect(bars.data[1].value).toEqual([0, 342.495, 1]);
    expect(bars.data[0].value[0]).toBeCloseTo(26.035, 6);
    expect(bars.data[0].value[1]).toBeCloseTo(342.71, 6);
    expect(bars.markLine.data).toEqual([{ name: 'delay start', xAxis: 26.023 }]);
  });

  it('arrow endpoints on the rows, dashed when inferred', () => {
    const arrows = opt.series[1].markLine.data;
    expect(arrows).toHaveLength(2);
    expect(arrows[0][0].coord[0]).toBeCloseTo(342.71, 6);
    expect(arrows[0][0].coord[1]).toBe(1);
    expect(arrows[0][1].coord[1]).toBe(0);
    expect(arrows[1][0].coord).toEqual([342.495, 2]);
    expect(arrows[1][1].coord).toEqual([342.495, 1]);
    expect(arrows.map((a: any) => a[0].lineStyle.type)).toEqual(['dashed', 'dashed']);
    expect(opt.series[1].data).toEqual([[arrows[0][0].coord[0], 1, 0], [342.495, 2, 1]]);
  });

  it('renders a bar between its ends, dashed outline when inferred, the selected link outlined', () => {
    const api = { value: (d: number) => opt.series[0].data[0].value[d], coord: ([x, y]: number[]) => [100 + x * 2, 40 + y * 40], size: () => [0, 40] };
    const g = opt.series[0].renderItem({ dataIndex: 0, coordSys: { x: 100, y: 0, width: 800, height: 200 } }, api);
    const rect = g.children[0];
    expect(rect.shape.x).toBeCloseTo(100 + 26.035 * 2, 6);
    expect(rect.shape.width).toBeCloseTo((342.71 - 26.035) * 2, 6);
    expect(rect.style.lineDash).toEqual([4, 3]);
    const api3 = { ...api, value: (d: number) => opt.series[0].data[2].value[d] };
    const g3 = opt.series[0].renderItem({ dataIndex: 2, coordSys: { x: 100, y: 0, width: 800, height: 200 } }, api3);
    expect(g3.children[0].shape.width).toBe(6); // an instant is still visible
    expect(g3.children[0].style.lineWidth).toBe(2); // selected link 3
  });

  it('a block request completing the chain becomes a row with an arrow to its waiter', () => {
    const withReq = {
      ...chain,
      links: [
        { ...chain.links[1], request: { source_id: 3, line: 6, dev: '8,0', sector: 1465352, nsect: 8, rwbs: 'WFS', pid: 312, comm: 'jbd2', q_ns: 358613942000000, i_ns: null, d_ns: null, c_ns: 358614285000000 } },
        chain.links[2],
      ],
    } as unknown as Chain;
    const l = chainLayout(withReq);
    expect(l.origin).toBe(358613942000000);
    expect(l.rows[2].kind).toBe('request');
    expect(l.rows[2].text).toBe('WFS 1465352 + 8 (4 KiB) · Q2C 343.0 ms');
    expect(l.arrows[1]).toMatchObject({ from: 2, to: 0, at: 343000000, label: 'completed' });
  });

  it('print markers too close to label apart share one label (no text drawn over text)', () => {
    // on a 1000 ns axis: 'write start' and 'write done' 20 ns apart, another 'write start' far from them
    const m = [
      { at: 520, text: 'write done', line: 261 },
      { at: 500, text: 'write start', line: 234 },
      { at: 900, text: 'write start', line: 8645 },
      { at: 990, text: 'write done', line: 21147 },
    ];
    expect(markLineData(m, 1000, (ns) => ns / 10)).toEqual([
      { name: 'write done', xAxis: 52, label: { show: false } },
      { name: 'write start', xAxis: 50, label: { formatter: 'write start · write done' } },
      { name: 'write start', xAxis: 90, label: { formatter: 'write start · write done' } },
      { name: 'write done', xAxis: 99, label: { show: false } },
    ]);
    // apart: each keeps its own label ('{b}', its name)
    expect(markLineData(m.slice(1, 3), 1000, (ns) => ns)).toEqual([
      { name: 'write start', xAxis: 500 },
      { name: 'write start', xAxis: 900 },
    ]);
  });
});
