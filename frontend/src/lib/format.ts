// One shared formatter for every number the UI shows. All API times are integer nanoseconds.

export type TimeUnit = { unit: 'ns' | 'µs' | 'ms' | 's'; ns: number };

const UNITS: TimeUnit[] = [
  { unit: 's', ns: 1e9 },
  { unit: 'ms', ns: 1e6 },
  { unit: 'µs', ns: 1e3 },
  { unit: 'ns', ns: 1 },
];

/** The largest unit in which |ns| is at least 1 (ns for 0). */
export function pickTimeUnit(ns: number): TimeUnit {
  const a = Math.abs(ns);
  return UNITS.find((u) => a >= u.ns) ?? UNITS[UNITS.length - 1];
}

/** Two decimals under 100, one above: 15.63, 318.4. */
function fixed(v: number): string {
  return v.toFixed(Math.abs(v) < 100 ? 2 : 1);
}

/** A wait's duration: formatNs, then "+" when its end was not traced (it lasted at least that long). */
export function formatWaitNs(ns: number | null | undefined, endKnown: boolean | null | undefined): string {
  return `${formatNs(ns)}${endKnown ? '' : '+'}`;
}

/** A duration in ns with an adaptive unit: 15626265317 → "15.63 s", 318 → "318 ns". */
export function formatNs(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || Number.isNaN(ns)) return '—';
  const u = pickTimeUnit(ns);
  if (u.unit === 'ns') return `${Math.round(ns)} ns`;
  let v = ns / u.ns;
  const s = fixed(v);
  // Rounding may carry into the next unit (999.96 µs → "1000.0 µs"): promote.
  if (Math.abs(Number(s)) >= 1000 && u.unit !== 's') {
    const next = UNITS[UNITS.indexOf(u) - 1];
    v = ns / next.ns;
    return `${fixed(v)} ${next.unit}`;
  }
  return `${s} ${u.unit}`;
}

/** A value already expressed in `unit` (axis labels): trims trailing zeros. */
export function formatAxisNumber(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1000 || a < 0.001) return v.toExponential(0).replace('e+', 'e');
  return String(Number(v.toPrecision(3)));
}

/** A short duration for axis ticks (up to 3 significant digits, no trailing zeros):
 * 1e9 → "1 s", 1.5e5 → "150 µs", 1e13 → "10000 s". */
export function formatNsShort(ns: number): string {
  if (ns === 0) return '0';
  const u = pickTimeUnit(ns);
  return `${Number((ns / u.ns).toPrecision(3))} ${u.unit}`;
}

/** A log-axis tick in milliseconds as an adaptive duration: 0.5 → "500 µs", 1e4 → "10 s". */
export function formatMsTick(ms: number): string {
  return formatNsShort(ms * 1e6);
}

/** Absolute time on the analysis timeline: seconds with 6 decimals. 81092496118 → "81.092496 s". */
export function formatAbsTime(ns: number | null | undefined): string {
  if (ns === null || ns === undefined) return '—';
  return `${(ns / 1e9).toFixed(6)} s`;
}

/** How times are written: from the analysis' start (`origin`, its first event: "+3.100000 s"), or on the trace's own
 * clock ("11374.046209 s", as the trace and the exports have them). One per analysis page (lib/timeBase.tsx). */
export type TimeBase = { origin: number | null; absolute: boolean };
export const ABSOLUTE_TIME: TimeBase = { origin: null, absolute: true };

/** Seconds at `ns` with `decimals` decimals, in the time base: "+3.10" from the analysis' start, or "11374.05" on
 * the trace's clock (a chart axis' labels; formatTime writes the page's other times with it). */
export function secondsLabel(ns: number, decimals: number, base: TimeBase = ABSOLUTE_TIME): string {
  if (base.absolute || base.origin === null) return (ns / 1e9).toFixed(decimals);
  const d = ns - base.origin;
  return `${d < 0 ? '−' : '+'}${(Math.abs(d) / 1e9).toFixed(decimals)}`;
}

/** A point in time on the analysis timeline, in the time base: "+3.100000 s" from the start, or absolute. */
export function formatTime(ns: number | null | undefined, base: TimeBase = ABSOLUTE_TIME): string {
  if (ns === null || ns === undefined) return '—';
  return `${secondsLabel(ns, 6, base)} s`;
}

/** Time relative to a reference, signed: "+15.63 s", "−25.42 ms", "+0 ns". */
export function formatRelNs(ns: number): string {
  if (ns === 0) return '+0 ns';
  return (ns < 0 ? '−' : '+') + formatNs(Math.abs(ns));
}

/** Bytes in binary units: 4096 → "4 KiB", 1536 → "1.5 KiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const s = i === 0 ? String(v) : String(Number(v.toFixed(v < 10 ? 2 : 1)));
  return `${s} ${units[i]}`;
}

/** A sector range: "141698288 + 8 (4 KiB)" (512-byte sectors). */
export function formatSector(sector: number | null | undefined, nsect: number | null | undefined): string {
  if (sector === null || sector === undefined) return '—';
  if (nsect === null || nsect === undefined) return String(sector);
  return `${sector} + ${nsect} (${formatBytes(nsect * 512)})`;
}

/** Integer counts with thin grouping: 1234567 → "1,234,567". Integers are grouped by hand: the first
 * toLocaleString of a page loads the locale's data (20-80 ms on a busy core, before the first chart). */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (!Number.isSafeInteger(n)) return n.toLocaleString('en-US');
  const digits = String(Math.abs(n));
  let out = digits.slice(0, ((digits.length - 1) % 3) + 1);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}

/** ISO timestamp from the API → "2026-05-01 14:03:12" in local time. */
export function formatDate(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** A source's chip: the kind of file it was read from, as the tool that wrote it calls it. Several kinds share a
 * parser's format (parsers' report.files say which): blktrace's binary records are read as the blkparse text they
 * render to, a trace.dat through `trace-cmd report`, perf script's text (a perf.data through `perf script`) into ftrace's tables; bcc's offwaketime (and
 * wakeuptime) are read by the offcputime parser, but their records carry the waker's stack. */
export function formatName(s: { format: string; waker_stacks?: number; files?: { kind: string }[] }): string {
  if (s.format === 'offcputime') return (s.waker_stacks ?? 0) > 0 ? 'offwaketime' : 'offcputime';
  const kind = s.files?.[0]?.kind ?? '';
  if (kind.startsWith('blktrace')) return 'blktrace binary';
  if (kind.startsWith('trace.dat')) return kind; // "trace.dat v7 (zstd)"
  if (kind === 'perf script (perf.data)') return 'perf.data';
  if (kind.startsWith('perf script')) return 'perf script';
  if (s.format === 'ftrace') return 'ftrace text';
  return s.format;
}

/** A task as "comm pid"; a CPU's pseudo-task by its name alone; the idle task (pid 0) is "<idle> 0" wherever it comes from (ftrace calls it <idle>, bcc
 * swapper/N: that name, which says the CPU, follows in brackets). */
export function taskLabel(comm: string | null | undefined, pid: number | null | undefined): string {
  // a CPU's calls whose task the trace does not name (function_graph without funcgraph-proc): a pseudo-task with a
  // negative id, never a pid, named "CPU n (task unknown)" (backend/derive/cpu_tasks.py)
  if (pid !== null && pid !== undefined && pid < 0) return comm ?? `CPU ${-1 - pid} (task unknown)`;
  if (pid === 0) return comm && comm !== '<idle>' && comm.startsWith('swapper') ? `<idle> 0 (${comm})` : '<idle> 0';
  // bcc's offwaketime names a waker by its comm alone: swapper/N is CPU N's idle task, pid 0 on every CPU
  if ((pid === null || pid === undefined) && comm && /^swapper\/\d+$/.test(comm)) return `<idle> 0 (${comm})`;
  return `${comm ?? '?'}${pid === null || pid === undefined ? '' : ` ${pid}`}`;
}
