// Time-axis ticks whose labels are distinct and as precise as the zoom needs, down to nanoseconds (at a 242 ms
// window the axis printed "+10.9 s" four times: labels were cut to 3 significant digits, whatever the step).
import { ABSOLUTE_TIME, type TimeBase } from '../lib/format';

const UNITS = [
  { unit: 's', ns: 1e9 },
  { unit: 'ms', ns: 1e6 },
  { unit: 'µs', ns: 1e3 },
  { unit: 'ns', ns: 1 },
] as const;

export type TickSpec = { step: number; unit: string; unitNs: number; decimals: number };

/** The nice step (1, 2 or 5 × 10^k ns, at least 1 ns) that cuts `span` ns in about `target` intervals. */
export function niceStep(span: number, target: number): number {
  const raw = Math.max(span / Math.max(1, target), 1);
  const p = 10 ** Math.floor(Math.log10(raw));
  const m = raw / p;
  return Math.max(1, (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p);
}

/** How to label ticks every `step` ns over offsets [lo, hi] (ns from the origin): one unit for all of them (the one
 * of the largest offset, so "+10.92 s" and not "10,920 ms"), with as many decimals as the step needs. */
export function tickSpec(lo: number, hi: number, target = 8): TickSpec {
  const step = niceStep(hi - lo, target);
  const far = Math.max(Math.abs(lo), Math.abs(hi), step);
  const u = UNITS.find((x) => far >= x.ns) ?? UNITS[3];
  const decimals = Math.max(0, Math.ceil(-Math.log10(step / u.ns) - 1e-9));
  return { step, unit: u.unit, unitNs: u.ns, decimals };
}

/** "+10.920 s", "+10.900 000 1 s" (decimals in groups of three), "0" at the origin. */
export function formatTick(v: number, s: TickSpec): string {
  if (v === 0) return '0';
  const sign = v < 0 ? '−' : '+';
  // integer arithmetic on the ns value: no float noise in the decimals
  const a = Math.round(Math.abs(v));
  const whole = Math.floor(a / s.unitNs);
  let frac = '';
  if (s.decimals > 0) {
    const rest = a - whole * s.unitNs; // < unitNs: ns within the unit
    const digits = String(rest).padStart(Math.round(Math.log10(s.unitNs)), '0').slice(0, s.decimals).padEnd(s.decimals, '0');
    frac = '.' + (digits.match(/.{1,3}/g) ?? []).join(' ');
  }
  return `${sign}${whole}${frac} ${s.unit}`;
}

/** The ticks (multiples of the step) inside [lo, hi], with their labels. */
export function ticks(lo: number, hi: number, target = 8): { spec: TickSpec; at: number[]; labels: string[] } {
  const spec = tickSpec(lo, hi, target);
  const at: number[] = [];
  for (let t = Math.ceil(lo / spec.step) * spec.step; t <= hi && at.length < 1000; t += spec.step) at.push(t);
  return { spec, at, labels: at.map((t) => formatTick(t, spec)) };
}

/** A point in time to the precision a window of `span` ns shows (its pixel, about), rounded as formatAbsTime
 * rounds: "10.920483 s", "10.920483117 s"; in a relative time base, from its origin: "+3.100000 s". */
export function formatInstant(ns: number, span: number, base: TimeBase = ABSOLUTE_TIME): string {
  if (!base.absolute && base.origin !== null) {
    const d = ns - base.origin;
    return `${d < 0 ? '−' : '+'}${formatInstant(Math.abs(d), span)}`;
  }
  const decimals = Math.min(9, Math.max(6, Math.ceil(-Math.log10(Math.max(span, 1) / 1e9 / 1000))));
  const unit = 10 ** decimals;
  const q = Math.round(Math.abs(ns) / 10 ** (9 - decimals));
  const whole = Math.floor(q / unit);
  const frac = String(q - whole * unit).padStart(decimals, '0');
  return `${ns < 0 ? '−' : ''}${whole}.${frac} s`;
}

/** Whether a tick's label, written from `x` (px) in the ruler's 10.5 px monospace font after a 4 px padding, ends
 * before `right`: the last label of a window ("+250 ms") was cut at the ruler's edge. ~6.4 px a character. */
export function labelFits(x: number, label: string, right: number): boolean {
  return x + 4 + label.length * 6.4 <= right;
}
