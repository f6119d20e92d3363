// The waterfall of one block request: its Q→G→I→D→C phases as horizontal bars on a time axis
// (origin = the request's first event), and the scheduler messages logged while it waited.
import type { BlockRequest, SchedMessage } from '../api/types';
import { formatAxisNumber, formatCount, formatNs, formatRelNs, pickTimeUnit } from '../lib/format';
import { html, tooltipLines } from './html';
import { C, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

/** The y-axis row of the scheduler messages. */
export const MESSAGES_ROW = 'sched msgs';

export type WaterfallPhase = { label: string; from: number; to: number; color: string };

const PHASES: { label: string; from: keyof BlockRequest; to: keyof BlockRequest; color: string }[] = [
  { label: 'Q2G', from: 'q_ns', to: 'g_ns', color: C.q2g },
  { label: 'G2I', from: 'g_ns', to: 'i_ns', color: C.g2i },
  { label: 'I2D', from: 'i_ns', to: 'd_ns', color: C.i2d },
  { label: 'D2C', from: 'd_ns', to: 'c_ns', color: C.d2c },
  { label: 'Q2C', from: 'q_ns', to: 'c_ns', color: C.q2c },
];

const INSTANTS: { label: string; key: keyof BlockRequest }[] = [
  { label: 'Q', key: 'q_ns' },
  { label: 'G', key: 'g_ns' },
  { label: 'I', key: 'i_ns' },
  { label: 'D', key: 'd_ns' },
  { label: 'C', key: 'c_ns' },
];

const t = (r: BlockRequest, k: keyof BlockRequest) => (typeof r[k] === 'number' ? (r[k] as number) : null);

/** The request's first traced instant (ns): the waterfall's origin. */
export function requestOrigin(r: BlockRequest): number | null {
  const ts = INSTANTS.map((i) => t(r, i.key)).filter((v): v is number => v !== null);
  return ts.length ? Math.min(...ts) : null;
}

/** The first and last traced instants of a request (A/Q … C), ns on the analysis timeline; null when none was. */
export function requestSpan(r: BlockRequest): [number, number] | null {
  const ts = INSTANTS.map((i) => t(r, i.key)).filter((v): v is number => v !== null);
  return ts.length ? [Math.min(...ts), Math.max(...ts)] : null;
}

/** The phases whose both ends were traced, in ns relative to the origin. */
export function waterfallPhases(r: BlockRequest): WaterfallPhase[] {
  const o = requestOrigin(r);
  if (o === null) return [];
  const out: WaterfallPhase[] = [];
  for (const p of PHASES) {
    const a = t(r, p.from);
    const b = t(r, p.to);
    if (a !== null && b !== null && b >= a) out.push({ label: p.label, from: a - o, to: b - o, color: p.color });
  }
  return out;
}

export function buildWaterfallOption(r: BlockRequest, messages: SchedMessage[] = []): EChartsOption {
  const origin = requestOrigin(r) ?? 0;
  const phases = waterfallPhases(r);
  const end = Math.max(1, ...phases.map((p) => p.to), ...messages.map((m) => m.t_ns - origin));
  const unit = pickTimeUnit(end);
  const u = (ns: number) => ns / unit.ns;
  // Scheduler messages get their own row: drawn over I2D they would hide its bar and label.
  const categories = [...phases.map((p) => p.label), ...(messages.length ? [MESSAGES_ROW] : [])];
  const iRel = r.i_ns === null ? null : r.i_ns - origin;

  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { left: 48, right: 90, top: 24, bottom: 40 },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      formatter: (p: unknown) => {
        const { seriesName, dataIndex, value } = p as { seriesName: string; dataIndex: number; value: unknown };
        if (seriesName === 'scheduler messages') {
          const m = messages[dataIndex];
          return tooltipLines(html`<b>line ${m.line}</b> · I ${iRel === null ? '' : formatRelNs(m.t_ns - origin - iRel)}`, html`${m.message}`);
        }
        const ph = phases[dataIndex];
        return ph
          ? tooltipLines(html`<b>${ph.label}</b> ${formatNs(ph.to - ph.from)}`, html`from ${formatNs(ph.from)} to ${formatNs(ph.to)} after the first event`)
          : html`${String(value)}`.text;
      },
    },
    xAxis: {
      ...axisCommon,
      type: 'value',
      name: `time since ${INSTANTS.find((i) => t(r, i.key) === origin)?.label ?? 'first event'} (${unit.unit})`,
      nameLocation: 'middle',
      nameGap: 24,
      min: 0,
      max: u(end),
      axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => formatAxisNumber(v), hideOverlap: true },
    },
    yAxis: {
      ...axisCommon,
      type: 'category',
      inverse: true,
      data: categories,
      splitLine: { show: false },
      axisLabel: { ...axisCommon.axisLabel, color: C.text, fontWeight: 600 },
    },
    series: [
      {
        name: 'offset',
        type: 'bar',
        stack: 'phase',
        silent: true,
        itemStyle: { color: 'transparent' },
        data: phases.map((p) => u(p.from)),
      },
      {
        name: 'phase',
        type: 'bar',
        stack: 'phase',
        barWidth: 14,
        barMinWidth: 2,
        data: phases.map((p) => {
          const wide = p.to - p.from > end * 0.5;
          return {
            value: u(p.to - p.from),
            itemStyle: { color: p.color },
            label: {
              show: true,
              position: wide ? 'insideRight' : 'right',
              color: wide ? '#10151c' : C.text,
              fontWeight: 600,
              formatter: `${p.label} ${formatNs(p.to - p.from)}`,
            },
          };
        }),
        markLine: {
          silent: true,
          symbol: 'none',
          lineStyle: { color: C.axis, type: 'dashed' },
          label: { color: C.muted, position: 'start', fontSize: 10 },
          data: instantMarks(r, origin, end).map((m) => ({
            name: m.label,
            xAxis: u(m.at),
            label: { formatter: m.label },
          })),
        },
      },
      {
        name: 'scheduler messages',
        type: 'scatter',
        symbol: 'diamond',
        symbolSize: 9,
        itemStyle: { color: C.message },
        z: 5,
        data: messages.map((m) => [u(m.t_ns - origin), MESSAGES_ROW]),
      },
    ],
  };
}

/** What the messages row holds when the server sent a sample of the request's messages (null: all of them). */
export function messagesNote(shown: number, total: number): string | null {
  if (shown >= total) return null;
  return `${formatCount(shown)} of ${formatCount(total)} scheduler messages shown, spread evenly over the whole wait`;
}

/** The Q/G/I/D/C instants (ns since origin) for marker lines; instants closer than 1.5 % of the
 * axis share one line labelled e.g. "Q·G·I" so their labels do not overlap. */
export function instantMarks(r: BlockRequest, origin: number, end: number): { label: string; at: number }[] {
  const marks: { label: string; at: number }[] = [];
  for (const i of INSTANTS) {
    const v = t(r, i.key);
    if (v === null) continue;
    const at = v - origin;
    const last = marks[marks.length - 1];
    if (last && at - last.at <= end * 0.015) last.label += `·${i.label}`;
    else marks.push({ label: i.label, at });
  }
  return marks;
}
