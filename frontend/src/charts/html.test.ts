import { describe, expect, it } from 'vitest';
import type { FlameNode } from '../api/stallTypes';
import { buildFlameOption } from './flame';
import { buildHeatmapOption, type Heatmap } from './heatmap';
import { Html, escapeHtml, html, tooltipLines } from './html';
import { describeItem, type Timeline } from './timeline';

// What a hostile trace puts in a name field: a function, lock, comm or print text.
const EVIL = '<img src=x onerror="alert(1)">';
const noMarkup = (s: string) => {
  expect(s).not.toContain('<img');
  expect(s).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
};

describe('html tag', () => {
  it('escapes every interpolated value', () => {
    expect(html`<b>${EVIL}</b>`.text).toBe('<b>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</b>');
    expect(escapeHtml(`a&b'c`)).toBe('a&amp;b&#39;c');
  });
  it('keeps Html fragments and arrays of them, drops null/false', () => {
    const inner = html`<i>${'x<y'}</i>`;
    expect(inner).toBeInstanceOf(Html);
    expect(html`${inner}|${[inner, inner]}|${null}${false}${undefined}|${0}`.text).toBe('<i>x&lt;y</i>|<i>x&lt;y</i><i>x&lt;y</i>||0');
  });
  it('tooltipLines joins lines, escaping plain strings', () => {
    expect(tooltipLines(html`<b>a</b>`, null, false, '', EVIL)).toBe('<b>a</b><br/>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
  });
});

describe('no markup from a trace reaches a tooltip', () => {
  it('function heatmap (the function name is the title)', () => {
    const data: Heatmap = {
      metric: 'func', filter: EVIL, kind: 'call', t0_ns: 0, t1_ns: 1000, x_bins: 1, x_bin_ns: 1000, y_bins: 1,
      y_edges_ns: [1, 10],
      cells: [{ x: 0, y: 0, count: 1, max_ns: 5, max_ref: { kind: 'call', source_id: 1, line: 1, pid: 1 } }],
      percentiles: { count: 1, p50_ns: 5, p90_ns: 5, p99_ns: 5, p999_ns: 5, p9999_ns: 5, max_ns: 5 },
    } as Heatmap;
    const opt = buildHeatmapOption(data) as unknown as { tooltip: { formatter: (p: unknown) => string } };
    noMarkup(opt.tooltip.formatter({ value: [0, 0, 0, 1, 5, 1, 1] }));
  });
  it('flame graph frame and lock', () => {
    const tree: FlameNode = { name: 'all', value: 2, children: [{ name: EVIL, value: 2, lock: EVIL, children: [] }] };
    const opt = buildFlameOption(tree, { unit: 'us', total: 2, waitsLink: () => ({ href: `?lock=${EVIL}`, waits: 1, totalNs: 5 }) }) as unknown as {
      tooltip: { formatter: (p: unknown) => string };
    };
    const text = opt.tooltip.formatter({ dataIndex: 1 });
    noMarkup(text);
    expect(text).toContain('href="?lock=&lt;img');
  });
  it('timeline lane, segment and print marker', () => {
    const lane = { id: 'task:1:1', kind: 'task', source_id: 1, label: EVIL, group: EVIL, pid: 1, dev: null, why: '', segments: [], counter: null, band: null };
    const seg = { track: 'wait', state: EVIL, t0_ns: 0, t1_ns: 5, n: 1, max_ns: 5, source_id: 1, line: 1, depth: null };
    noMarkup(describeItem({ kind: 'segment', lane, seg } as unknown as Parameters<typeof describeItem>[0]));
    const mark = { t_ns: 1, text: EVIL, comm: EVIL, pid: 1, cpu: 0, line: 3, source_id: 1 } as unknown as NonNullable<Timeline['marks']>[number];
    noMarkup(describeItem({ kind: 'mark', mark }));
  });
});
