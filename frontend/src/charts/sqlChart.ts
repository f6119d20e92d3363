// The SQL console's quick chart of a result: a histogram of one numeric column, or a time series (a time column
// *_ns on x, a numeric column on y). Columns named *_ns are durations or times in ns: shown in ms or s.
import { formatCount, formatNs } from '../lib/format';
import { html, tooltipLines } from './html';
import { C, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

export type SqlColumn = { name: string; type: string };
export type SqlChart = { kind: 'histogram'; y: number } | { kind: 'series'; x: number; y: number };

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|DECIMAL)/;

const TIME = /^(t|[a-z]|start|end|entry|exit|wake|t_min|t_max)_ns$/; // instants on the timeline, not durations

/** The indices of the columns a chart can use (numbers). */
export function numericColumns(columns: SqlColumn[]): number[] {
  return columns.flatMap((c, i) => (NUMERIC.test(c.type) ? [i] : []));
}

/** A first chart for a result: a time series when it has a time column (*_ns, not a duration) and another number,
 * else a histogram of its first numeric column; null when it has no numeric column. */
export function defaultChart(columns: SqlColumn[]): SqlChart | null {
  const nums = numericColumns(columns);
  if (!nums.length) return null;
  const isTime = (i: number) => TIME.test(columns[i].name);
  const x = nums.find(isTime);
  const y = nums.find((i) => i !== x);
  if (x !== undefined && y !== undefined) return { kind: 'series', x, y };
  return { kind: 'histogram', y: nums[0] };
}

/** Equal-width bins over [min, max]: [lo, hi, count] each. */
export function bins(values: number[], n = 40): [number, number, number][] {
  if (!values.length) return [];
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo === hi) return [[lo, hi, values.length]];
  const width = (hi - lo) / n;
  const out: [number, number, number][] = Array.from({ length: n }, (_, i) => [lo + i * width, lo + (i + 1) * width, 0]);
  for (const v of values) out[Math.min(n - 1, Math.floor((v - lo) / width))][2] += 1;
  return out;
}

const isNs = (c: SqlColumn) => c.name.endsWith('_ns');
const fmt = (c: SqlColumn, v: number) => (isNs(c) ? formatNs(v) : formatCount(v));

function numbers(rows: unknown[][], i: number): number[] {
  return rows.map((r) => r[i]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
}

export function buildSqlChartOption(columns: SqlColumn[], rows: unknown[][], chart: SqlChart): EChartsOption {
  const yc = columns[chart.y];
  const base = { backgroundColor: 'transparent', textStyle: baseTextStyle, animation: false };
  if (chart.kind === 'histogram') {
    const b = bins(numbers(rows, chart.y));
    return {
      ...base,
      grid: { left: 56, right: 16, top: 16, bottom: 40 },
      tooltip: {
        ...tooltipStyle,
        trigger: 'item',
        formatter: (p: unknown) => {
          const [lo, hi, n] = b[(p as { dataIndex: number }).dataIndex];
          return tooltipLines(html`<b>${yc.name}</b> ${fmt(yc, lo)} – ${fmt(yc, hi)}`, html`${formatCount(n)} rows`);
        },
      },
      xAxis: { ...axisCommon, type: 'category', name: yc.name, nameLocation: 'middle', nameGap: 26,
               data: b.map(([lo]) => fmt(yc, lo)) },
      yAxis: { ...axisCommon, type: 'value', name: 'rows' },
      series: [{ type: 'bar', data: b.map(([, , n]) => n), itemStyle: { color: C.d2c }, barCategoryGap: '5%' }],
    };
  }
  const xc = columns[chart.x];
  const data = rows
    .filter((r) => typeof r[chart.x] === 'number' && typeof r[chart.y] === 'number')
    .map((r) => [(r[chart.x] as number) / (isNs(xc) ? 1e9 : 1), r[chart.y] as number])
    .sort((a, b) => a[0] - b[0]);
  return {
    ...base,
    grid: { left: 64, right: 16, top: 16, bottom: 40 },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      formatter: (p: unknown) => {
        const [x, y] = (p as { value: [number, number] }).value;
        return tooltipLines(
          html`<b>${xc.name}</b> ${isNs(xc) ? `${x.toFixed(6)} s` : formatCount(x)}`,
          html`<b>${yc.name}</b> ${fmt(yc, y)}`,
        );
      },
    },
    xAxis: { ...axisCommon, type: 'value', scale: true, name: isNs(xc) ? `${xc.name} (s)` : xc.name, nameLocation: 'middle', nameGap: 26 },
    yAxis: { ...axisCommon, type: 'value', scale: true, name: yc.name,
             axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => fmt(yc, v) } },
    series: [{ type: 'scatter', data, symbolSize: 4, itemStyle: { color: C.i2d } }],
  };
}

/** The result as CSV text (RFC 4180: fields with a comma, quote or line break quoted; lists and objects as JSON). */
export function toCsv(columns: SqlColumn[], rows: unknown[][]): string {
  const field = (v: unknown) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [columns.map((c) => field(c.name)), ...rows.map((r) => r.map(field))].map((l) => l.join(',')).join('\r\n') + '\r\n';
}
