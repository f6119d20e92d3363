// Colours shared by the charts and the CSS (see styles.css: keep in sync).
export const C = {
  text: '#d5dde8',
  muted: '#8a97a8',
  axis: '#3a4656',
  grid: '#232c38',
  panel: '#141a22',
  i2d: '#ff8a5b',
  d2c: '#58a6ff',
  q2g: '#9aa7b8',
  g2i: '#b99cf0',
  q2c: '#5b6778',
  message: '#f2cc60',
  selected: '#ffffff',
} as const;

export const FONT = "'Inter', 'Segoe UI', system-ui, sans-serif";
export const MONO = "'JetBrains Mono', 'SFMono-Regular', Menlo, Consolas, monospace";

export const baseTextStyle = { color: C.text, fontFamily: FONT, fontSize: 11 };

export const tooltipStyle = {
  backgroundColor: '#1b2330',
  borderColor: '#344154',
  textStyle: { color: C.text, fontSize: 12, fontFamily: FONT },
  extraCssText: 'box-shadow: 0 4px 14px rgba(0,0,0,.4);',
};

export const axisCommon = {
  axisLine: { lineStyle: { color: C.axis } },
  axisTick: { lineStyle: { color: C.axis } },
  axisLabel: { color: C.muted, fontSize: 11 },
  splitLine: { lineStyle: { color: C.grid } },
  nameTextStyle: { color: C.muted, fontSize: 11 },
};
