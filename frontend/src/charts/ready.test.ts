import { describe, expect, it } from 'vitest';
import { markDrawn } from './ready';

function fakeChart() {
  const handlers = new Set<() => void>();
  let disposed = false;
  return {
    on: (_: 'finished', h: () => void) => handlers.add(h),
    off: (_: 'finished', h: () => void) => handlers.delete(h),
    isDisposed: () => disposed,
    finish: () => handlers.forEach((h) => h()),
    dispose: () => {
      disposed = true;
    },
    handlers,
  };
}

describe('markDrawn', () => {
  it('marks the container not ready until the chart has finished rendering the new option', () => {
    const chart = fakeChart();
    const node = { dataset: {} as Record<string, string | undefined> };
    const off = markDrawn(chart, node);
    expect(node.dataset.ready).toBe('0');
    chart.finish();
    expect(node.dataset.ready).toBe('1');
    off();
    expect(chart.handlers.size).toBe(0);
  });

  it('resets the marker for the next option and leaves a disposed chart alone', () => {
    const chart = fakeChart();
    const node = { dataset: { ready: '1' } as Record<string, string | undefined> };
    const off = markDrawn(chart, node);
    expect(node.dataset.ready).toBe('0');
    chart.dispose();
    off();
    expect(chart.handlers.size).toBe(1);
  });
});
