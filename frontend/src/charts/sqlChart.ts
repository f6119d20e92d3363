// The SQL console's quick chart of a result: a histogram of one numeric column, a time series (a time column *_ns on
// x, a numeric column on y), or a bar per category (a text column's values, a numeric column's total for each: the
// chart of a GROUP BY). Columns named *_ns are durations or times in ns: shown in ms or s.
import { formatCount, formatNs } from '../lib/format';
import { html, tooltipLines } from './html';
import { C, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

export type SqlColumn = { name: string; type: string };
export type SqlChart = { kind: 'histogram'; y: number } | { kind: 'series'; x: number; y: number } | { kind: 'bars'; x: number; y: number };

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|DECIMAL)/;

const TIME = /^(t|[a-z]|start|end|entry|exit|wake|t_min|t_max)_ns$/; // instants on the timeline, not durations

/** The indices of the columns a chart can use (numbers). */
export function numericColumns(columns: SqlColumn[]): number[] {
  return columns.flatMap((c, i) => (NUMERIC.test(c.type) ? [i] : []));
}

const ID = /^(pid|tid|tgid|cpu|line|dev|major|minor|depth)$|_(id|line|pid)$/; // numbers that name, not measure

const CATEGORY = /^(VARCHAR|BOOLEAN|ENUM|UUID|DATE|TIME|TIMESTAMP|INTERVAL)/;

/** The indices of the columns whose values can name a bar: text and other scalars that are not numbers (not lists,
 * structs or maps). */
export function categoryColumns(columns: SqlColumn[]): number[] {
  return columns.flatMap((c, i) => (CATEGORY.test(c.type) && !/[[(]/.test(c.type) ? [i] : []));
}

/** A first chart for a result: a time series when it has a time column (*_ns, not a duration) and another number;
 * else a bar per value of its first text column when it has one (a GROUP BY's rows), sized by its first number that
 * is not an id (pid, cpu, line...);
 * else a histogram of its first numeric column; null when it has no numeric column. */
export function defaultChart(columns: SqlColumn[]): SqlChart | null {
  const nums = numericColumns(columns);
  if (!nums.length) return null;
  const isTime = (i: number) => TIME.test(columns[i].name);
  const x = nums.find(isTime);
  const y = nums.find((i) => i !== x);
  if (x !== undefined && y !== undefined) return { kind: 'series', x, y };
  const cat = categoryColumns(columns)[0];
  if (cat !== undefined) return { kind: 'bars', x: cat, y: nums.find((i) => !ID.test(columns[i].name)) ?? nums[0] };
  return { kind: 'histogram', y: nums[0] };
}

/** The most bars a chart draws: the largest totals (the view says how many more there are). */
export const MAX_BARS = 30;

/** One bar per category (its value as text; NULL for none): the total of the numbers of its rows, largest first.
 * `summed`: some category has several rows (the result was not grouped by it), so a bar is a sum. */
export function categoryTotals(rows: unknown[][], x: number, y: number): { bars: [string, number][]; summed: boolean } {
  const totals = new Map<string, number>();
  let summed = false;
  for (const r of rows) {
    const v = r[y];
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    const key = r[x] === null || r[x] === undefined ? 'NULL' : String(r[x]);
    if (totals.has(key)) summed = true;
    totals.set(key, (totals.get(key) ?? 0) + v);
  }
  return { bars: [...totals].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])), summed };
}

/** The chart's height in px: a bar chart grows with its bars (14 px each), the others are 220 px. */
export function chartHeight(rows: unknown[][], chart: SqlChart): number {
  if (chart.kind !== 'bars') return 220;
  return Math.max(160, 60 + 16 * Math.min(MAX_BARS, categoryTotals(rows, chart.x, chart.y).bars.length));
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
  if (chart.kind === 'bars') return barsOption(columns, rows, chart);
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

function barsOption(columns: SqlColumn[], rows: unknown[][], chart: Extract<SqlChart, { kind: 'bars' }>): EChartsOption {
  const xc = columns[chart.x];
  const yc = columns[chart.y];
  const { bars, summed } = categoryTotals(rows, chart.x, chart.y);
  const shown = bars.slice(0, MAX_BARS);
  const value = summed ? `sum of ${yc.name}` : yc.name;
  return {
    backgroundColor: 'transparent',
    textStyle: baseTextStyle,
    animation: false,
    grid: { left: 16, right: 24, top: 8, bottom: 36, containLabel: true },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      formatter: (p: unknown) => {
        const [name, v] = shown[(p as { dataIndex: number }).dataIndex];
        return tooltipLines(html`<b>${xc.name}</b> ${name}`, html`${value} ${fmt(yc, v)}`);
      },
    },
    yAxis: { ...axisCommon, type: 'category', inverse: true, data: shown.map(([name]) => name),
             axisLabel: { ...axisCommon.axisLabel, width: 260, overflow: 'truncate' } },
    xAxis: { ...axisCommon, type: 'value', name: value, nameLocation: 'middle', nameGap: 24,
             axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => fmt(yc, v) } },
    series: [{ type: 'bar', data: shown.map(([, v]) => v), itemStyle: { color: C.d2c }, barCategoryGap: '20%' }],
  };
}
