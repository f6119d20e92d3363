import { describe, expect, it } from 'vitest';
import type { FlameNode } from '../api/stallTypes';
import { fitLabel } from './labels';
import { LOCK_FILL, LOCK_STROKE, MATCH_FILL, buildFlameOption, diffColor, flameFill, layoutFlame, locksUnder, percent } from './flame';

const tree: FlameNode = {
  name: 'all',
  value: 100,
  children: [
    {
      name: 'dd',
      value: 60,
      children: [
        { name: 'xfs_buf_lock', value: 40, lock: 'xfs_buf_lock', children: [{ name: 'down', value: 40, lock: 'down', children: [] }] },
        { name: 'schedule', value: 20, children: [] },
      ],
    },
    { name: 'bash', value: 30, children: [{ name: 'tiny', value: 0.01, children: [] }] },
  ],
};

describe('flame graph layout', () => {
  it('rectangles from cumulative values, depth = row', () => {
    const l = layoutFlame(tree);
    expect(l.rects.map((r) => [r.name, r.depth, r.x0, r.x1])).toEqual([
      ['all', 0, 0, 1],
      ['dd', 1, 0, 0.6],
      ['xfs_buf_lock', 2, 0, 0.4],
      ['down', 3, 0, 0.4],
      ['schedule', 2, 0.4, 0.6000000000000001],
      ['bash', 1, 0.6, 0.8999999999999999],
    ]); // 'tiny' (0.01 %) is too narrow to draw
    expect(l.maxDepth).toBe(3);
    expect(l.rects[3].path).toEqual(['dd', 'xfs_buf_lock', 'down']);
  });

  it('zoom: the frame and its ancestors span the width, its children scale to it', () => {
    const l = layoutFlame(tree, ['dd', 'missing']);
    expect(l.focusPath).toEqual(['dd']);
    expect(l.rects.map((r) => [r.name, r.depth, r.x0, r.x1])).toEqual([
      ['all', 0, 0, 1],
      ['dd', 1, 0, 1],
      ['xfs_buf_lock', 2, 0, 40 / 60],
      ['down', 3, 0, 40 / 60],
      ['schedule', 2, 40 / 60, 1],
    ]);
  });

  it('colours: warm frames, lock frames, search matches, diff red/blue', () => {
    const [, dd, lock] = layoutFlame(tree).rects;
    expect(flameFill(dd, {}, 0)).toMatch(/^hsl\((\d+), /);
    const hue = Number(/^hsl\((\d+)/.exec(flameFill(dd, {}, 0))![1]);
    expect(hue).toBeGreaterThanOrEqual(8);
    expect(hue).toBeLessThanOrEqual(50);
    expect(flameFill(lock, {}, 0)).toBe(LOCK_FILL);
    // off-CPU's convention: cool frames (blues), the lock and match colours as they are
    const cool = Number(/^hsl\((\d+)/.exec(flameFill(dd, { palette: 'cool' }, 0))![1]);
    expect(cool).toBeGreaterThanOrEqual(190);
    expect(cool).toBeLessThanOrEqual(235);
    expect(flameFill(lock, { palette: 'cool' }, 0)).toBe(LOCK_FILL);
    expect(flameFill(lock, { highlight: 'BUF_LOCK' }, 0)).toBe(MATCH_FILL);
    expect(diffColor(10, 10)).toBe('rgb(255, 50, 50)');
    expect(diffColor(-10, 10)).toBe('rgb(50, 80, 255)');
    expect(diffColor(0, 10)).toBe('rgb(200, 200, 205)');
    expect(diffColor(5, 10)).toBe('rgb(228, 125, 125)');
  });

  it('option: one custom rectangle per frame, lock frames outlined, labels truncated', () => {
    const opt = buildFlameOption(tree, { unit: 'stacks', total: 100, highlight: null }) as any;
    const s = opt.series[0];
    expect(s.type).toBe('custom');
    expect(s.data[2]).toEqual([0, 0.4, 2, 2]);
    const api = { value: (d: number) => s.data[2][d], coord: ([x, y]: number[]) => [x * 1000, y * 18], size: () => [0, 18] };
    const g = s.renderItem({ dataIndex: 2, coordSys: { x: 0, y: 0, width: 1000, height: 72 } }, api);
    expect(g.children[0].shape).toMatchObject({ x: 0, y: 36, width: 399, height: 17 });
    expect(g.children[0].style).toMatchObject({ fill: LOCK_FILL, stroke: LOCK_STROKE, lineWidth: 1.5 });
    expect(g.children[1].style.text).toBe('xfs_buf_lock');
    // drawn in one pass, not progressively; a frame too narrow for its label is a bare rect (no text element)
    expect(s.progressive).toBe(0);
    const narrow = s.renderItem({ dataIndex: 2, coordSys: { x: 0, y: 0, width: 20, height: 72 } }, { ...api, coord: ([x, y]: number[]) => [x * 20, y * 18] });
    expect(narrow).toMatchObject({ type: 'rect', shape: { width: 7 } });
    expect(fitLabel('xfs_dir3_leaf_read.constprop.16', 80)).toBe('xfs_dir3_l…');
    expect(fitLabel('abc', 20)).toBe('');
  });

  it('tooltip: value with unit and share; lock frames link to their waits', () => {
    const link = (waits: number | null) => (l: string) => ({ href: `?tab=stalls&lock=${l}`, waits, totalNs: waits ? 342_495_000 : 0 });
    const opt = buildFlameOption(tree, { unit: 'us', total: 100, waitsLink: link(null) }) as any;
    const html = opt.tooltip.formatter({ dataIndex: 2 });
    expect(html).toContain('40.00 µs · 40.0 %');
    expect(html).toContain('xfs_buf_lock');
    expect(html).toContain('href="?tab=stalls&amp;lock=xfs_buf_lock" data-testid="tooltip-waits-link">Waits on this lock →</a>');
    // once counted: the link says what it lists, and a lock without waits has no link
    const counted = (buildFlameOption(tree, { unit: 'us', total: 100, waitsLink: link(1) }) as any).tooltip.formatter({ dataIndex: 2 });
    expect(counted).toContain('>1 wait on this lock, 342.5 ms in all →</a>');
    const none = (buildFlameOption(tree, { unit: 'us', total: 100, waitsLink: link(0) }) as any).tooltip.formatter({ dataIndex: 2 });
    expect(none).not.toContain('href=');
    expect(none).toContain('no waits on this lock in the ftrace trace');
    expect(percent(1, 48)).toBe('2.08 %');
  });

  it('diff mode: before / after / delta in the tooltip', () => {
    const d: FlameNode = { name: 'all', value: 47, delta: 46, children: [{ name: 'bash', value: 4, delta: 4, children: [] }, { name: 'x', value: 1, delta: -2, children: [] }] };
    const opt = buildFlameOption(d, { unit: 'stacks', total: 47, diff: true }) as any;
    const html = opt.tooltip.formatter({ dataIndex: 2 });
    expect(html).toContain('after 1 stack · before 3 stacks');
    expect(html).toContain('−2 stacks');
  });
});

describe('locksUnder', () => {
  it("lists the sleeping primitives under a frame, a stack once per lock, not the frame's own", () => {
    expect(locksUnder(tree)).toEqual([
      { lock: 'down', value: 40 }, // ties by name
      { lock: 'xfs_buf_lock', value: 40 },
    ]);
    expect(locksUnder(tree.children![1])).toEqual([]);
    const lockFrame = tree.children![0].children![0];
    expect(locksUnder(lockFrame)).toEqual([{ lock: 'down', value: 40 }]);
    // a lock taken twice in one stack (rwsem in rwsem) counts its outermost frame only
    const nested: FlameNode = {
      name: 'all',
      value: 10,
      children: [{ name: 'down_write', value: 10, lock: 'rwsem', children: [{ name: 'rwsem_down_write_slowpath', value: 10, lock: 'rwsem', children: [] }] }],
    };
    expect(locksUnder(nested)).toEqual([{ lock: 'rwsem', value: 10 }]);
  });
});
