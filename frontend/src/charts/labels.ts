// Helpers shared by the custom-series charts (flame graph, call flame chart, chain waterfall).

/** Text that fits `px` pixels at ~`charPx` per character: whole, cut with '…', or '' when not even 3 characters fit. */
export function fitLabel(text: string, px: number, charPx = 6.6): string {
  const room = Math.floor((px - 6) / charPx);
  if (room < 3) return '';
  if (text.length <= room) return text;
  return text.slice(0, room - 1) + '…';
}

/** A stable hash of a string (FNV-1a), for deterministic per-name colours. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The warm flame-graph colour of a frame name: hues between red and yellow, stable per name. */
export function warmColor(name: string): string {
  const h = hashString(name);
  const hue = 8 + (h % 43); // 8..50
  const sat = 72 + ((h >>> 8) % 14); // 72..85 %
  const light = 52 + ((h >>> 16) % 10); // 52..61 %
  return `hsl(${hue}, ${sat}%, ${light}%)`;
}

/** The cool colour of a frame name, as off-CPU flame graphs are conventionally drawn (Brendan Gregg's "blue"
 * palette: time off the CPU, not on it): hues between cyan and blue, light enough for dark text, stable per name. */
export function coolColor(name: string): string {
  const h = hashString(name);
  const hue = 190 + (h % 46); // 190..235
  const sat = 55 + ((h >>> 8) % 20); // 55..74 %
  const light = 60 + ((h >>> 16) % 12); // 60..71 %
  return `hsl(${hue}, ${sat}%, ${light}%)`;
}

/** The minimal part of the ECharts custom-series API the render functions use (so tests can fake it). */
export type RenderApi = {
  value: (dim: number) => number;
  coord: (v: [number, number]) => number[];
  size: (v: [number, number]) => number[];
};
export type RenderParams = { dataIndex: number; coordSys: { x: number; y: number; width: number; height: number } };
