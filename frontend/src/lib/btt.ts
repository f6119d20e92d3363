import type { DispatchSummaryRow } from '../api/types';

export type BttRow = NonNullable<DispatchSummaryRow['btt']>[number];

/** btt's rows that the dispatch summary's phases stand for (btt -A's names). */
export const BTT_METRIC = { i2d: 'I2D', d2c: 'D2C', q2c: 'Q2C' } as const;

/** A time in seconds to 9 decimals from whole ns, as btt prints MIN and MAX (exact: no floating point). */
export function bttSeconds(ns: number): string {
  const neg = ns < 0;
  const a = Math.abs(Math.round(ns));
  const s = `${Math.floor(a / 1e9)}.${String(a % 1e9).padStart(9, '0')}`;
  return neg ? `-${s}` : s;
}

/** btt's AVG as it prints it: (total_ns / 1e9) / n in double precision, to 9 decimals (printf's %.9f and
 * toFixed(9) both round the double's exact value). */
export function bttAverage(totalNs: number, n: number): string {
  return n > 0 ? (totalNs / 1e9 / n).toFixed(9) : '—';
}

/** The row of btt's figures for one metric of a summary row, or null (none, or a time window: btt's are over the
 * whole trace). */
export function bttFor(r: DispatchSummaryRow, metric: keyof typeof BTT_METRIC): BttRow | null {
  return r.btt?.find((b) => b.metric === BTT_METRIC[metric]) ?? null;
}
