import { describe, expect, it } from 'vitest';
import { DEFAULT_VIEW } from '../state/viewState';
import { analysisPageOf, firstQueries, latencyHeatmap, timelineWindow } from './tabQueries';

describe('the queries a page starts from its address', () => {
  it('reads the analysis id and view state of /a/<id>, nothing else', () => {
    expect(analysisPageOf('/a/QNlv', '?tab=timeline&v0=10&v1=20')).toMatchObject({ id: 'QNlv', view: { tab: 'timeline', v0: 10, v1: 20 } });
    expect(analysisPageOf('/a/QNlv/', '')).toMatchObject({ id: 'QNlv', view: { tab: null } });
    expect(analysisPageOf('/', '?tab=timeline')).toBeNull();
    expect(analysisPageOf('/a/x/y', '')).toBeNull();
  });

  it('asks what the tab draws first, with the filters of the URL', () => {
    const keys = (search: string) => {
      const p = analysisPageOf('/a/A', search)!;
      return firstQueries(p.id, p.view).map((q) => q.queryKey);
    };
    // the whole analysis: no window (the server's default), 1200 px, 40 lanes
    expect(keys('?tab=timeline')).toEqual([['timeline', 'A', null, null, 1200, 40]]);
    expect(keys('?tab=timeline&v0=5&v1=9&tl_n=80')).toEqual([['timeline', 'A', 5, 9, 1200, 80]]);
    expect(keys('?tab=dispatch&pid=42&t0=1&t1=2&hm=d2c&by=device&order=q2c')).toEqual([
      ['latency-over-time', 'A', 240, 42, null, 1, 2],
      ['heatmap', 'A', 'd2c', null, 120, 40, 42, null, 1, 2, false],
      ['dispatch-summary', 'A', 'device', 1, 2],
      ['requests-page', 'A', 'q2c', 100, 42, null, 1, 2],
    ]);
    // Stalls: the chains, the waits, the markers, the heatmap's choices and its waits heatmap, all at once
    expect(keys('?tab=stalls&t0=1&t1=2&lock=xfs')).toEqual([
      ['chains', 'A', 1, 2],
      ['waits-page', 'A', 'xfs', null, 100, 1, 2, false, false],
      ['marks', 'A'],
      ['heatmap-metrics', 'A', 100, false],
      ['heatmap', 'A', 'wait', null, 120, 40, null, null, 1, 2, false],
    ]);
    // a lock's waits starting in the range (Compare's link): the query the Waits panel asks; no range, no such list
    expect(keys('?tab=stalls&t0=1&t1=2&lock_key=xfs_ilock&w_start=1')[1]).toEqual(['waits-page', 'A', null, 'xfs_ilock', 100, 1, 2, true, false]);
    expect(keys('?tab=stalls&lock_key=xfs_ilock&w_start=1')[1]).toEqual(['waits-page', 'A', null, 'xfs_ilock', 100, null, null, false, false]);
    // "idle sleeps too": the list, the heatmap's choices and the waits heatmap all count idle sleeps
    expect(keys('?tab=stalls&idle=1').slice(3)).toEqual([
      ['heatmap-metrics', 'A', 100, true],
      ['heatmap', 'A', 'wait', null, 120, 40, null, null, null, null, true],
    ]);
    expect(keys('?tab=stalls&shm=func').map((k) => k[0])).toEqual(['chains', 'waits-page', 'marks', 'heatmap-metrics']); // (the function: from the choices)
    expect(keys('?tab=offcpu&fg_unit=stacks')).toEqual([
      ['offcpu-tasks', 'A'],
      ['flamegraph', 'A', 'stacks', null, null, null, false],
    ]);
    // the default tab depends on the analysis' sources: nothing before it is known (main.tsx asks once it is)
    expect(keys('')).toEqual([]);
    expect(keys('?tab=sources')).toEqual([]);
  });

  it('builds the same parameters the views ask with', () => {
    expect(timelineWindow({ ...DEFAULT_VIEW, v0: 1, v1: 2 }, 800)).toEqual({ v0: 1, v1: 2, widthPx: 800, maxLanes: 40 });
    expect(latencyHeatmap({ ...DEFAULT_VIEW, hm: 'q2c', dev: '8,0' })).toEqual({ metric: 'q2c', filter: null, pid: null, dev: '8,0', t0: null, t1: null });
  });
});
