// The one ECharts wrapper: init on mount, setOption on change, resize with the container, dispose.
// Its container carries data-ready="1" once the current option is drawn (see ready.ts).
import { useEffect, useRef } from 'react';
import * as echarts from 'echarts/core';
import { BarChart, CustomChart, LineChart, ScatterChart } from 'echarts/charts';
import {
  DataZoomInsideComponent,
  DataZoomSliderComponent,
  GridComponent,
  LegendComponent,
  MarkLineComponent,
  TooltipComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
import { markDrawn } from './ready';
import type { EChartsOption } from './types';

echarts.use([
  BarChart,
  CustomChart,
  LineChart,
  ScatterChart,
  GridComponent,
  TooltipComponent,
  LegendComponent,
  DataZoomInsideComponent,
  DataZoomSliderComponent,
  MarkLineComponent,
  CanvasRenderer,
]);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type EChartHandler = (params: any, chart: echarts.ECharts) => void;

type Props = {
  option: EChartsOption;
  onEvents?: Record<string, EChartHandler>;
  height: number | string;
  className?: string;
  ariaLabel?: string;
  /** Called after each setOption, e.g. to take the brush cursor again (a new option resets it). */
  afterSetOption?: (chart: echarts.ECharts) => void;
};

export function EChart({ option, onEvents, height, className, ariaLabel, afterSetOption }: Props) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const handlers = useRef(onEvents);
  handlers.current = onEvents;
  const after = useRef(afterSetOption);
  after.current = afterSetOption;

  useEffect(() => {
    const c = echarts.init(el.current!, null, { renderer: 'canvas' });
    chart.current = c;
    // resize() redraws the whole chart even at the same size: only when the container's size changed (the
    // observer's first call, right after the first draw, is at the size the chart was made with)
    const ro = new ResizeObserver(() => {
      const node = el.current;
      if (node && (node.clientWidth !== c.getWidth() || node.clientHeight !== c.getHeight())) c.resize();
    });
    ro.observe(el.current!);
    return () => {
      ro.disconnect();
      c.dispose();
      chart.current = null;
    };
  }, []);

  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    const drawn = markDrawn(c, el.current!); // data-ready="1" once this option is rendered
    // with an action to follow (afterSetOption), the option is drawn once with it (an action that updates the
    // chart, e.g. taking the brush cursor, would draw it all again); else right now
    c.setOption(option, { notMerge: true, lazyUpdate: after.current !== undefined });
    after.current?.(c);
    return drawn;
  }, [option]);

  // Bind each event name once; the latest handler is looked up at call time.
  const names = Object.keys(onEvents ?? {}).sort().join(',');
  useEffect(() => {
    const c = chart.current;
    if (!c || !names) return;
    const list = names.split(',');
    for (const n of list) c.on(n, (p: unknown) => handlers.current?.[n]?.(p, c));
    return () => {
      for (const n of list) c.off(n);
    };
  }, [names]);

  return <div ref={el} className={className} style={{ height, width: '100%' }} role="img" aria-label={ariaLabel} />;
}
