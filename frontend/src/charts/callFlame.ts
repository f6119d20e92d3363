// The flame chart of one task's function_graph calls around a wait: x = time, y = call depth,
// one bar per call (calls still open at the window's edge run to that edge).
import type { Call } from '../api/stallTypes';
import { ABSOLUTE_TIME, formatAxisNumber, formatNs, formatTime, pickTimeUnit, type TimeBase } from '../lib/format';
import { html, tooltipLines } from './html';
import { fitLabel, warmColor, type RenderApi, type RenderParams } from './labels';
import { C, MONO, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

export type CallBar = { call: Call; start: number; end: number; depth: number; open: boolean };

export type CallWindow = { t0: number; t1: number; waitStart: number; waitEnd: number; waitLine: number | null };

/** Bars in ns relative to the wait's start, clipped to the window. */
export function callBars(calls: Call[], w: CallWindow): CallBar[] {
  return calls
    .filter((c) => c.func !== null)
    .map((c) => {
      const s = Math.max(c.entry_ns ?? w.t0, w.t0);
      const e = Math.min(c.exit_ns ?? w.t1, w.t1);
      return { call: c, start: s - w.waitStart, end: Math.max(e, s) - w.waitStart, depth: c.depth, open: c.exit_ns === null };
    });
}

export const WAIT_CALL_COLOR = C.i2d;

export function buildCallsOption(calls: Call[], w: CallWindow, time: TimeBase = ABSOLUTE_TIME): EChartsOption {
  const bars = callBars(calls, w);
  const unit = pickTimeUnit(Math.max(1, w.t1 - w.t0));
  const u = (ns: number) => ns / unit.ns;
  const maxDepth = Math.max(0, ...bars.map((b) => b.depth));
  const color = (b: CallBar) => (w.waitLine !== null && b.call.line === w.waitLine ? WAIT_CALL_COLOR : warmColor(b.call.func ?? ''));

  const renderItem = (params: RenderParams, api: RenderApi) => {
    const b = bars[params.dataIndex];
    const [x0, y] = api.coord([api.value(0), api.value(2)]);
    const [x1] = api.coord([api.value(1), api.value(2)]);
    const h = api.size([0, 1])[1] - 2;
    const width = Math.max(2, x1 - x0);
    const isWait = w.waitLine !== null && b.call.line === w.waitLine;
    return {
      type: 'group',
      children: [
        {
          type: 'rect',
          shape: { x: x0, y: y - h / 2, width, height: h },
          style: { fill: color(b), stroke: isWait ? C.selected : C.panel, lineWidth: isWait ? 1.5 : 0.5, opacity: b.open ? 0.8 : 1 },
        },
        {
          type: 'text',
          silent: true,
          style: { x: x0 + 3, y, text: fitLabel(b.call.func ?? '', width, 6.2), verticalAlign: 'middle', fill: '#10151c', font: `11px ${MONO}` },
        },
      ],
    };
  };

  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { left: 44, right: 24, top: 26, bottom: 40 },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      confine: true,
      formatter: (p: unknown) => {
        const { componentType, dataIndex, name } = p as { componentType: string; dataIndex: number; name: string };
        if (componentType === 'markLine') return html`${name}`.text;
        const b = bars[dataIndex];
        if (!b) return '';
        const c = b.call;
        const dur = c.duration_ns !== null ? formatNs(c.duration_ns) : c.exit_ns === null ? 'still open at the window end' : '—';
        return tooltipLines(
          html`<b class="mono">${c.func ?? ''}()</b> · ${dur}`,
          html`depth ${c.depth} · line ${c.line} · CPU ${c.cpu ?? '—'}`,
          html`${formatTime(c.entry_ns, time)} → ${formatTime(c.exit_ns, time)}`,
          c.partial && html`<i>entry or exit outside the trace</i>`,
        );
      },
    },
    xAxis: {
      ...axisCommon,
      type: 'value',
      name: `time since the wait began (${unit.unit})`,
      nameLocation: 'middle',
      nameGap: 24,
      min: u(w.t0 - w.waitStart),
      max: u(w.t1 - w.waitStart),
      axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => formatAxisNumber(v), hideOverlap: true },
    },
    yAxis: {
      ...axisCommon,
      type: 'value',
      name: 'depth',
      inverse: true,
      min: -0.5,
      max: maxDepth + 0.5,
      interval: 1,
      axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => (Number.isInteger(v) ? String(v) : '') },
      splitLine: { show: false },
    },
    series: [
      {
        name: 'calls',
        type: 'custom',
        renderItem: renderItem as never,
        encode: { x: [0, 1], y: 2 },
        data: bars.map((b, i) => [u(b.start), u(b.end), b.depth, i]),
        markLine: {
          symbol: 'none',
          silent: false,
          lineStyle: { color: C.i2d, type: 'dashed' },
          label: { color: C.i2d, position: 'end', fontSize: 10, formatter: '{b}' },
          data: [
            { name: 'wait begins', xAxis: 0 },
            ...(w.waitEnd > w.waitStart ? [{ name: `wait ends (+${formatNs(w.waitEnd - w.waitStart)})`, xAxis: u(w.waitEnd - w.waitStart) }] : []),
          ],
        },
      },
    ],
  } as EChartsOption;
}

/** The window of calls to show around a wait: the wait plus 15 % (at least 200 µs) on each side. */
export function callWindow(start: number, end: number): { t0: number; t1: number } {
  const pad = Math.max(Math.round((end - start) * 0.15), 200_000);
  return { t0: start - pad, t1: end + pad };
}
