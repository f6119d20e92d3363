// Before/after (the Compare page): two heatmaps of one metric drawn on one scale (the same latency edges, the same
// colour maximum and, x_time shared, the same time bins counted from each side's start; x_time own: each side's
// span over the whole width, in bins of its own; all from /api/compare), and the words of a delta (b − a with its
// unit and the relative change, coloured by its verdict).
import type { paths } from '../api/schema';
import { formatCount, formatNs, pickTimeUnit } from '../lib/format';
import { html, tooltipLines } from './html';
import { countOf, heatAxes, heatScale, yLabels, type HeatmapOption } from './heatmap';
import { C, baseTextStyle, tooltipStyle } from './theme';

export type Comparison = paths['/api/compare']['get']['responses'][200]['content']['application/json'];
export type HeatmapPair = Comparison['heatmaps'][number];
export type HeatmapSide = NonNullable<HeatmapPair['a']>;
export type Delta = HeatmapPair['deltas'][number];
export type SideKey = 'a' | 'b';

/** One compare heatmap datum: [x bin, y bin, log10(count) (colour), count, max (ns), source_id, line]. */
export type CompareDatum = [number, number, number, number, number, number, number];

export const COMPARE_GRID = { left: 78, right: 70, top: 14, bottom: 44 } as const;

const TITLES: Record<HeatmapPair['metric'], string> = { i2d: 'I2D', d2c: 'D2C', wait: 'wait' };

export function pairTitle(pair: Pick<HeatmapPair, 'metric'>): string {
  return TITLES[pair.metric];
}

/** The shared time axis' labels: each bin's start as time since the side's start, in one unit (that of the
 * longest side), with the decimals its bin width needs (two significant digits of it). */
export function relTimeLabels(pair: Pick<HeatmapPair, 'x_bin_ns' | 'x_bins'>): string[] {
  const u = pickTimeUnit(pair.x_bin_ns * pair.x_bins);
  const step = pair.x_bin_ns / u.ns; // two significant digits of the step at least, none for a whole step
  const dec = Number.isInteger(step) ? 0 : Math.min(6, Math.max(0, 1 - Math.floor(Math.log10(step))));
  return Array.from({ length: pair.x_bins }, (_, x) => `${((x * pair.x_bin_ns) / u.ns).toFixed(dec)}`);
}

/** The unit of relTimeLabels. */
export function relTimeUnit(pair: Pick<HeatmapPair, 'x_bin_ns' | 'x_bins'>): string {
  return pickTimeUnit(pair.x_bin_ns * pair.x_bins).unit;
}

/** The time bins a side is drawn on: the pair's (x_time shared: the longer side's bins, one width for both) or,
 * x_time own, the side's own (its span over the whole width). */
export function sideTimeBins(pair: HeatmapPair, side: SideKey): Pick<HeatmapPair, 'x_bin_ns' | 'x_bins'> {
  const s = pair[side];
  return pair.x_time === 'own' && s ? { x_bin_ns: s.x_bin_ns, x_bins: s.x_bins } : { x_bin_ns: pair.x_bin_ns, x_bins: pair.x_bins };
}

export function toCompareData(side: HeatmapSide): CompareDatum[] {
  return side.cells.map((c) => [c.x, c.y, Math.log10(c.count), c.count, c.max_ns, c.max_ref.source_id, c.max_ref.line]);
}

/** The heatmap of one side of a pair, on the pair's scale: the x axis has the longer side's bins (a shorter side
 * leaves the rest empty) or, x_time own, the side's own (sideTimeBins); the y axis the pair's edges, the colours
 * the pair's maximum. `label` names the side in the tooltip (it may come from the user: escaped). */
export function buildCompareHeatmapOption(pair: HeatmapPair, side: SideKey, label: string): HeatmapOption {
  const data = pair[side];
  const kind = pair.kind;
  const title = pairTitle(pair);
  const top = Math.max(pair.max_count, 1);
  const bins = sideTimeBins(pair, side);
  const unit = relTimeUnit(bins);
  const yl = yLabels({ ...pair, metric: pair.metric, idle: false, filter: null, kind, t0_ns: null, t1_ns: null, cells: [], percentiles: emptyPct });
  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { ...COMPARE_GRID, outerBoundsMode: 'none' },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      formatter: (p: unknown) => {
        const [x, y, , count, max] = (p as { value: CompareDatum }).value;
        const from = x * bins.x_bin_ns;
        return tooltipLines(
          html`<b>${label}</b> · ${title}`,
          html`+${formatNs(from)} → +${formatNs(from + bins.x_bin_ns)} from the side's start`,
          html`latency ${formatNs(pair.y_edges_ns[y])} – ${formatNs(pair.y_edges_ns[y + 1])}`,
          html`${countOf(kind, count)} · max: ${formatNs(max)}`,
          html`<span style="color:${C.muted}">click: open the slowest ${kind} of this cell</span>`,
        );
      },
    },
    ...heatAxes({
      xLabels: relTimeLabels(bins),
      xName: `time since the side's start (${unit})`,
      yLabels: yl,
      yName: `${title} (log scale)`,
      yLabelEvery: Math.ceil(pair.y_bins / 10),
    }),
    visualMap: heatScale(top, [formatCount(top), '1'], 120, 10),
    series: [
      {
        name: label,
        type: 'heatmap',
        data: data ? toCompareData(data) : [],
        emphasis: { itemStyle: { borderColor: C.selected, borderWidth: 1 } },
        progressive: 0,
      },
    ],
  };
}

const emptyPct = { count: 0, p50_ns: null, p90_ns: null, p99_ns: null, p999_ns: null, p9999_ns: null, max_ns: null };

/** A figure in its unit: a duration with its unit, a count grouped, "—" when the side has none. */
export function formatFigure(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined) return '—';
  return unit === 'ns' ? formatNs(value) : formatCount(Math.round(value));
}

/** The relative change, signed, with the precision its size needs: "+183 %", "−4.2 %"; from +1000 % on, the
 * ratio b / a: "42.7×"; below −90 %, a / b: "÷647" (−99.8 %), down to "−100 %" (b is 0). */
export function formatRel(rel: number | null): string {
  if (rel === null) return '';
  if (rel >= 10) return `${Number((1 + rel).toPrecision(3))}×`;
  if (rel < -0.9 && rel > -1) return `÷${Number((1 / (1 + rel)).toPrecision(3))}`;
  const sign = rel > 0 ? '+' : rel < 0 ? '−' : '±';
  const pct = Math.abs(rel) * 100;
  return `${sign}${pct >= 10 ? pct.toFixed(0) : pct.toFixed(1)} %`;
}

/** b − a in words: "+2.21 ms (+183 %)", "−12 requests (−4.2 %)" ("−12 (−4.2 %)" without the unit of a count,
 * where a column's head says it), "±0", or "" when a side has no figure. */
export function deltaText(d: Delta, countUnit = true): string {
  if (d.abs === null) return '';
  if (d.abs === 0) return '±0';
  const sign = d.abs > 0 ? '+' : '−';
  const mag = formatFigure(Math.abs(d.abs), d.unit);
  const rel = formatRel(d.rel);
  return `${sign}${mag}${d.unit === 'ns' || !countUnit ? '' : ` ${d.unit}`}${rel ? ` (${rel})` : ''}`;
}

/** The CSS class of a delta: its verdict for side b (better, worse, same), or neutral. */
export function deltaClass(d: Delta): string {
  return d.verdict ? `delta ${d.verdict}` : 'delta';
}

/** The deltas of a row by metric name. */
export function deltasByMetric(deltas: Delta[]): Record<string, Delta> {
  return Object.fromEntries(deltas.map((d) => [d.metric, d]));
}
