import { describe, expect, it } from 'vitest';
import type { BlockRequest, SchedMessage } from '../api/types';
import { buildWaterfallOption, instantMarks, messagesNote, requestOrigin, requestSpan, waterfallPhases } from './waterfall';

// The xfsaild/sda1 metadata write of the seed excerpt: 15.6 s between I and D, no completion traced.
const req: BlockRequest = {
  source_id: 1, line: 1, dev: '8,0', sector: 141698288, nsect: 8, rwbs: 'WM', pid: 804, comm: 'xfsaild/sda1',
  q_ns: 81092472889, g_ns: 81092473207, i_ns: 81092496118, d_ns: 96718761435, c_ns: null,
  q2g_ns: 318, g2i_ns: 22911, i2d_ns: 15626265317, d2c_ns: null, q2c_ns: null,
  error: null, merged_bios: 0, requeues: 0, from_dev: '8,1', from_sector: 141696240,
};
const messages: SchedMessage[] = [
  { line: 5, t_ns: 81117912979, cpu: 1, message: 'cfq1618SN / insert_request' },
  { line: 8, t_ns: 81117914398, cpu: 1, message: 'cfq767A / slice expired t=1' },
];

describe('waterfall', () => {
  it('phases relative to the first event', () => {
    expect(requestOrigin(req)).toBe(81092472889);
    // Q to D (no completion traced): the window "Show on the timeline" opens around
    expect(requestSpan(req)).toEqual([81092472889, 96718761435]);
    expect(requestSpan({ ...req, q_ns: null, g_ns: null, i_ns: null, d_ns: null })).toBeNull();
    expect(waterfallPhases(req).map((p) => [p.label, p.from, p.to])).toEqual([
      ['Q2G', 0, 318],
      ['G2I', 318, 23229],
      ['I2D', 23229, 15626288546],
    ]);
  });

  const opt = buildWaterfallOption(req, messages) as any;

  it('a time axis in an adaptive unit and one row per traced phase', () => {
    expect(opt.xAxis.type).toBe('value');
    expect(opt.xAxis.name).toBe('time since Q (s)');
    expect(opt.xAxis.min).toBe(0);
    expect(opt.xAxis.max).toBeCloseTo(15.626288546, 9);
    expect(opt.yAxis.type).toBe('category');
    expect(opt.yAxis.data).toEqual(['Q2G', 'G2I', 'I2D', 'sched msgs']);
    expect(opt.yAxis.inverse).toBe(true);
  });

  it('stacked bars: a transparent offset and the phase labelled with its duration', () => {
    const [offset, phase, msgs] = opt.series;
    expect(offset.stack).toBe(phase.stack);
    expect(offset.itemStyle.color).toBe('transparent');
    expect(offset.data[2]).toBeCloseTo(0.000023229, 12);
    expect(phase.data[2].value).toBeCloseTo(15.626265317, 9);
    expect(phase.data.map((d: any) => d.label.formatter)).toEqual(['Q2G 318 ns', 'G2I 22.91 µs', 'I2D 15.63 s']);
    expect(phase.data[2].label.position).toBe('insideRight');
    expect(phase.data[0].label.position).toBe('right');
    expect(msgs.type).toBe('scatter');
    expect(msgs.data).toEqual([
      [(81117912979 - 81092472889) / 1e9, 'sched msgs'],
      [(81117914398 - 81092472889) / 1e9, 'sched msgs'],
    ]);
  });

  it('marks the instants, merging those too close to tell apart', () => {
    const lines = opt.series[1].markLine.data;
    expect(lines.map((l: any) => l.label.formatter)).toEqual(['Q·G·I', 'D']);
    expect(lines[1].xAxis).toBeCloseTo(15.626288546, 9);
    expect(instantMarks(req, 0, 100).map((m) => m.label)).toEqual(['Q', 'G', 'I', 'D']);
  });

  it('tooltip of a message is relative to I', () => {
    const html = opt.tooltip.formatter({ seriesName: 'scheduler messages', dataIndex: 1, value: null });
    expect(html).toContain('line 8');
    expect(html).toContain('+25.42 ms');
    expect(html).toContain('cfq767A / slice expired t=1');
  });

  it('says when the messages are a sample, and how many there are', () => {
    expect(messagesNote(500, 1509)).toBe('500 of 1,509 scheduler messages shown, spread evenly over the whole wait');
    expect(messagesNote(7, 7)).toBeNull();
    expect(messagesNote(0, 0)).toBeNull();
  });

  it('a completed request uses ms when shorter than a second', () => {
    const done = { ...req, d_ns: req.i_ns! + 2_000_000, c_ns: req.i_ns! + 7_000_000, i2d_ns: 2_000_000, d2c_ns: 5_000_000 };
    const o = buildWaterfallOption(done) as any;
    expect(o.xAxis.name).toBe('time since Q (ms)');
    expect(o.yAxis.data).toEqual(['Q2G', 'G2I', 'I2D', 'D2C', 'Q2C']);
  });
});
