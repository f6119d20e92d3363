import { describe, expect, it } from 'vitest';
import { wantsCharts } from './preloadCharts';

describe('wantsCharts', () => {
  it('preloads the charts on every tab but the Timeline (a canvas of its own)', () => {
    expect(wantsCharts('timeline')).toBe(false);
    for (const t of ['stalls', 'dispatch', 'offcpu', 'sources', 'sql', null] as const) expect(wantsCharts(t)).toBe(true);
  });
});
