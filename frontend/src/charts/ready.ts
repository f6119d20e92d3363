// The "drawn" marker of a chart: its container says data-ready="0" from the moment an option is set until
// ECharts has rendered it (its `finished` event), then data-ready="1". Benchmarks and tests wait for it.

type Chart = {
  on(event: 'finished', handler: () => void): unknown;
  off(event: 'finished', handler: () => void): unknown;
  isDisposed(): boolean;
};

/** Call right before setOption; returns the clean-up (drop the listener) for when the option changes. */
export function markDrawn(chart: Chart, node: { dataset: Record<string, string | undefined> }): () => void {
  node.dataset.ready = '0';
  const done = () => {
    node.dataset.ready = '1';
  };
  chart.on('finished', done);
  return () => {
    if (!chart.isDisposed()) chart.off('finished', done);
  };
}
