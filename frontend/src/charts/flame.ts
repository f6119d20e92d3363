// The off-CPU flame graph (drawn as an icicle: the root on top): rectangles from cumulative values,
// click-to-zoom along a frame path, search highlight, lock frames outlined, red/blue in diff mode.
import type { FlameNode } from '../api/stallTypes';
import { formatCount, formatNs } from '../lib/format';
import { html, tooltipLines, type Html } from './html';
import { coolColor, fitLabel, warmColor, type RenderApi, type RenderParams } from './labels';
import { C, MONO, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

export type FlameRect = {
  name: string;
  path: string[]; // names below the root down to this frame (the root itself: [])
  depth: number;
  x0: number; // fractions of the width, 0..1
  x1: number;
  value: number;
  delta: number | null;
  lock: string | null;
};

export type FlameLayout = { rects: FlameRect[]; focus: FlameNode; focusPath: string[]; maxDepth: number };

/** The smallest frame drawn, as a fraction of the width (≈ 1 px at 1920 px). */
export const MIN_WIDTH = 0.0005;

/** Follows `zoomPath` from the root as far as it exists. */
export function resolvePath(root: FlameNode, zoomPath: string[]): { chain: FlameNode[]; path: string[] } {
  const chain = [root];
  const path: string[] = [];
  let n = root;
  for (const name of zoomPath) {
    const c = (n.children ?? []).find((k) => k.name === name);
    if (!c) break;
    chain.push(c);
    path.push(name);
    n = c;
  }
  return { chain, path };
}

export function layoutFlame(root: FlameNode, zoomPath: string[] = []): FlameLayout {
  const { chain, path } = resolvePath(root, zoomPath);
  const focus = chain[chain.length - 1];
  const rects: FlameRect[] = [];
  // The focused frame and its ancestors span the whole width.
  chain.forEach((n, d) => rects.push(rect(n, path.slice(0, d), d, 0, 1)));
  let maxDepth = chain.length - 1;
  const total = focus.value || 1;
  const walk = (n: FlameNode, p: string[], depth: number, x0: number) => {
    let x = x0;
    for (const c of n.children ?? []) {
      const w = c.value / total;
      if (w >= MIN_WIDTH) {
        const cp = [...p, c.name];
        rects.push(rect(c, cp, depth, x, x + w));
        maxDepth = Math.max(maxDepth, depth);
        walk(c, cp, depth + 1, x);
      }
      x += w;
    }
  };
  walk(focus, path, chain.length, 0);
  return { rects, focus, focusPath: path, maxDepth };
}

/** The sleeping primitives in the stacks under a frame (not the frame's own lock): each lock's value, its outermost
 * frames counted (a stack once per lock, as the server's FlameGraph.locks), the largest first. */
export function locksUnder(n: FlameNode): { lock: string; value: number }[] {
  const out = new Map<string, number>();
  const walk = (x: FlameNode, held: ReadonlySet<string>) => {
    for (const c of x.children ?? []) {
      if (c.lock && !held.has(c.lock)) {
        out.set(c.lock, (out.get(c.lock) ?? 0) + c.value);
        walk(c, new Set([...held, c.lock]));
      } else walk(c, held);
    }
  };
  walk(n, new Set(n.lock ? [n.lock] : []));
  return [...out].map(([lock, value]) => ({ lock, value })).sort((a, b) => b.value - a.value || a.lock.localeCompare(b.lock));
}

function rect(n: FlameNode, path: string[], depth: number, x0: number, x1: number): FlameRect {
  return { name: n.name, path, depth, x0, x1, value: n.value, delta: n.delta ?? null, lock: n.lock ?? null };
}

export const LOCK_FILL = '#b99cf0';
export const LOCK_STROKE = '#f4eaff';
export const MATCH_FILL = '#e86bff';
export const ROOT_FILL = '#5b6778';

/** Diff colour: white-ish at 0, red where time grew, blue where it shrank, saturating at |delta| = maxAbs. */
export function diffColor(delta: number | null, maxAbs: number): string {
  if (!delta || maxAbs <= 0) return 'rgb(200, 200, 205)';
  const k = Math.min(1, Math.abs(delta) / maxAbs);
  const lo = Math.round(200 - 150 * k);
  return delta > 0 ? `rgb(${Math.round(200 + 55 * k)}, ${lo}, ${lo})` : `rgb(${lo}, ${Math.round(lo + 30 * k)}, ${Math.round(200 + 55 * k)})`;
}

export function matches(name: string, q: string | null): boolean {
  return !!q && name.toLowerCase().includes(q.toLowerCase());
}

export type FlameOptions = {
  zoomPath?: string[];
  highlight?: string | null;
  diff?: boolean;
  unit: string; // 'us' | 'stacks'
  total: number; // the graph's total (for %)
  /** Frame colours: the off-CPU convention (cool) or the CPU flame graph's (warm, the default here). */
  palette?: 'cool' | 'warm';
  /** Lock frames offer "Waits on this lock" (an ftrace source is loaded). */
  waitsLink?: (lock: string) => WaitsLink;
};

/** Where a lock frame's waits are listed, and how many there are (null: not known yet). */
export type WaitsLink = { href: string; waits: number | null; totalNs: number | null };

/** The tooltip line of a lock frame's waits: a link saying what it lists, or why there is none. */
export function waitsLinkHtml(w: WaitsLink): Html {
  if (w.waits === 0) return html`<span style="color:${C.muted}">no waits on this lock in the ftrace trace</span>`;
  const what =
    w.waits === null ? 'Waits on this lock' : `${formatCount(w.waits)} wait${w.waits === 1 ? '' : 's'} on this lock, ${formatNs(w.totalNs ?? 0)} in all`;
  return html`<a href="${w.href}" data-testid="tooltip-waits-link">${what} →</a>`;
}

export function flameFill(r: FlameRect, o: Pick<FlameOptions, 'highlight' | 'diff' | 'palette'>, maxAbs: number): string {
  if (o.diff) return r.depth === 0 ? ROOT_FILL : diffColor(r.delta, maxAbs);
  if (matches(r.name, o.highlight ?? null)) return MATCH_FILL;
  if (r.lock) return LOCK_FILL;
  if (r.depth === 0) return ROOT_FILL;
  return o.palette === 'cool' ? coolColor(r.name) : warmColor(r.name);
}

export function formatFlameValue(v: number, unit: string): string {
  return unit === 'us' ? formatNs(v * 1000) : `${formatCount(v)} stack${v === 1 ? '' : 's'}`;
}

export function percent(part: number, whole: number): string {
  if (!whole) return '—';
  const p = (100 * part) / whole;
  return `${p.toFixed(p < 10 ? 2 : 1)} %`;
}

export const ROW_PX = 18;

export function flameHeight(layout: FlameLayout): number {
  return (layout.maxDepth + 1) * ROW_PX + 12;
}

export function buildFlameOption(root: FlameNode, o: FlameOptions): EChartsOption {
  const lay = layoutFlame(root, o.zoomPath ?? []);
  const maxAbs = o.diff ? Math.max(0, ...lay.rects.filter((r) => r.depth > 0).map((r) => Math.abs(r.delta ?? 0))) : 0;

  const renderItem = (params: RenderParams, api: RenderApi) => {
    const r = lay.rects[params.dataIndex];
    const [x0, y0] = api.coord([api.value(0), api.value(2)]);
    const [x1] = api.coord([api.value(1), api.value(2)]);
    const width = Math.max(0.5, x1 - x0 - 1);
    const h = ROW_PX - 1;
    const isLock = !!r.lock;
    const frame = {
      type: 'rect',
      shape: { x: x0, y: y0, width, height: h, r: 1 },
      style: {
        fill: flameFill(r, o, maxAbs),
        stroke: isLock ? LOCK_STROKE : undefined,
        lineWidth: isLock ? 1.5 : 0,
      },
    };
    // a frame too narrow for a label is a bare rect: no text element to make and lay out (most frames of a large
    // graph: 20 k stacks gave ~3× the elements)
    const label = fitLabel(r.name, width, 6.6);
    if (!label) return frame;
    return {
      type: 'group',
      children: [
        frame,
        { type: 'text', silent: true, style: { x: x0 + 3, y: y0 + h / 2, text: label, verticalAlign: 'middle', fill: '#10151c', font: `11px ${MONO}` } },
      ],
    };
  };

  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { left: 0, right: 0, top: 0, bottom: 0 },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      confine: true,
      enterable: !!o.waitsLink,
      formatter: (p: unknown) => {
        const r = lay.rects[(p as { dataIndex: number }).dataIndex];
        if (!r) return '';
        const lines: Html[] = [html`<b class="mono">${r.name}</b>`];
        if (o.diff) {
          const d = r.delta ?? 0;
          lines.push(html`after ${formatFlameValue(r.value, o.unit)} · before ${formatFlameValue(r.value - d, o.unit)}`);
          lines.push(html`<b style="color:${d > 0 ? '#ff8080' : d < 0 ? '#80a8ff' : C.muted}">${d > 0 ? '+' : d < 0 ? '−' : '±'}${formatFlameValue(Math.abs(d), o.unit)}</b>`);
        } else {
          lines.push(html`${formatFlameValue(r.value, o.unit)} · ${percent(r.value, o.total)} of all`);
          if (lay.focusPath.length && r.depth >= lay.focusPath.length) lines.push(html`${percent(r.value, lay.focus.value)} of the zoomed frame`);
        }
        if (r.lock) {
          lines.push(html`<span style="color:${LOCK_FILL}">sleeping primitive: <b>${r.lock}</b></span>`);
          if (o.waitsLink) lines.push(waitsLinkHtml(o.waitsLink(r.lock)));
        }
        lines.push(html`<i style="color:${C.muted}">click to zoom and pin its details below</i>`);
        return tooltipLines(...lines);
      },
    },
    xAxis: { type: 'value', min: 0, max: 1, show: false },
    yAxis: { type: 'value', min: 0, max: lay.maxDepth + 1, inverse: true, show: false },
    series: [
      {
        name: 'frames',
        type: 'custom',
        renderItem: renderItem as never,
        encode: { x: [0, 1], y: 2 },
        // drawn in one pass: progressively (ECharts' default above 3000 items: a frame per 400 items, each repainting
        // the canvas) the 10 M-event benchmark's graph took ~2.2 s to draw
        progressive: 0,
        data: lay.rects.map((r, i) => [r.x0, r.x1, r.depth, i]),
      },
    ],
  } as EChartsOption;
}
