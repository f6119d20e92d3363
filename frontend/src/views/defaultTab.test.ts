import { describe, expect, it } from 'vitest';
import { availableTabs, defaultTab, followsTimeRange } from './AnalysisPage';

const src = (format: string, waker_stacks = 0, has_requests = format === 'blkparse') =>
  ({ format, waker_stacks, has_requests }) as never;

describe('the tab an analysis opens on', () => {
  it('is the first view of its own data, by its sources', () => {
    expect(defaultTab(availableTabs({ sources: [src('ftrace'), src('blkparse')] }))).toBe('stalls');
    expect(defaultTab(availableTabs({ sources: [src('blkparse')] }))).toBe('dispatch');
    expect(defaultTab(availableTabs({ sources: [src('offcputime')] }))).toBe('offcpu');
    expect(availableTabs({ sources: [src('offcputime')] })).not.toContain('timeline'); // no clock: no 1 ns timeline
  });
  it('has Dispatch for the requests a perf script or function_graph capture rebuilt from block tracepoints', () => {
    expect(availableTabs({ sources: [src('ftrace', 0, true)] })).toEqual(['stalls', 'timeline', 'dispatch', 'sources', 'sql']);
    expect(availableTabs({ sources: [src('ftrace')] })).not.toContain('dispatch'); // no block event: no Dispatch
  });
  it('is not a view the capabilities say is empty while another has data', () => {
    const tabs = availableTabs({ sources: [src('ftrace')] });
    // function_graph calls without a wait (the ping capture): the Timeline
    const calls = [
      { tab: 'stalls', state: 'empty' },
      { tab: 'timeline', state: 'data' },
      { tab: 'sources', state: 'data' },
    ];
    expect(defaultTab(tabs, calls)).toBe('timeline');
    expect(defaultTab(tabs, [{ tab: 'stalls', state: 'data' }, ...calls.slice(1)])).toBe('stalls');
    // nothing else has data: the first view stays
    expect(defaultTab(tabs, [{ tab: 'stalls', state: 'empty' }, { tab: 'timeline', state: 'empty' }, { tab: 'sources', state: 'data' }])).toBe('stalls');
  });
  it('shows the time range chip only on the tabs that follow it', () => {
    const both = { sources: [src('ftrace'), src('offcputime')] };
    expect(followsTimeRange('dispatch', both)).toBe(true);
    expect(followsTimeRange('offcpu', both)).toBe(true);
    expect(followsTimeRange('offcpu', { sources: [src('offcputime')] })).toBe(false);
    expect(followsTimeRange('sources', both)).toBe(false);
    expect(followsTimeRange('sql', both)).toBe(false);
  });
});
