import { useEffect, useMemo, useRef, useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import type { FlameNode } from '../../api/stallTypes';
import { useAnalyses, useFlameDiff, useFlamegraph, useLockWaits, useOffcpuTasks } from '../../api/queries';
import { EChart, type EChartHandler } from '../../charts/EChart';
import { buildFlameOption, flameHeight, formatFlameValue, layoutFlame, percent } from '../../charts/flame';
import { ErrorBox, Loading } from '../../components/Status';
import { formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { waitsOnLockLink } from '../../state/viewState';
import { useReveal } from '../../lib/reveal';
import { LocksUnder, WaitsOnLock } from './FrameLocks';

export function OffcpuView({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const hasFtrace = analysis.sources.some((s) => s.format === 'ftrace');
  const offSources = analysis.sources.filter((s) => s.format === 'offcputime');
  const tasks = useOffcpuTasks(analysis.id);
  const analyses = useAnalyses();
  const single = useFlamegraph(
    analysis.id,
    { unit: view.fgUnit, pid: view.fgPid, comm: view.fgComm, filter: view.fgQ, invert: view.fgInv },
    !view.fgDiff,
  );
  const diff = useFlameDiff(
    analysis.id,
    { unit: view.fgUnit, filter: view.fgQ, invert: view.fgInv, a: view.fgA, b: view.fgB, bAnalysis: view.fgBAn },
    view.fgDiff,
  );
  const q = view.fgDiff ? diff : single;
  const root: FlameNode | null = q.data?.root ?? null;
  const total = single.data && !view.fgDiff ? single.data.total : diff.data ? diff.data.total_b : 0;

  const layout = useMemo(() => (root ? layoutFlame(root, view.fgZoom) : null), [root, view.fgZoom]);
  // stacks quoted without a µs total (offcputime without -f, a seed excerpt): the unit that has data
  const hasMicros = tasks.data ? tasks.data.some((t) => t.value_us > 0) : true;
  useEffect(() => {
    if (!hasMicros && view.fgUnit === 'us') setView({ fgUnit: 'stacks' }, { replace: true });
  }, [hasMicros, view.fgUnit, setView]);
  // the frame clicked (zoomed on): its details pinned below the graph, brought into view
  const focusKey = layout && layout.focusPath.length ? layout.focusPath.join(';') : null;
  const frameRef = useReveal<HTMLDivElement>(focusKey);
  // How many waits each lock drawn has (what its "Waits on this lock" lists), when an ftrace source has waits.
  const lockNames = useMemo(() => [...new Set((layout?.rects ?? []).flatMap((r) => (r.lock ? [r.lock] : [])))].sort(), [layout]);
  const lockWaits = useLockWaits(analysis.id, lockNames, { t0: view.t0, t1: view.t1 }, hasFtrace);
  const counts = useMemo(() => new Map((lockWaits.data ?? []).map((c) => [c.lock_key, c])), [lockWaits.data]);
  // The tooltip's "Waits on this lock" reads the counts and the view when it is shown (a ref): the chart's option, and
  // so the drawn flame graph (thousands of frames), stay as they are when the counts arrive or the view's other state
  // changes; the lock table below shows the counts as they come.
  const linkState = useRef({ view, counts });
  linkState.current = { view, counts };
  const waitsLink = useMemo(
    () =>
      hasFtrace
        ? (lock: string) => {
            const { view: v, counts: c } = linkState.current;
            return { href: waitsOnLockLink(v, lock), waits: c.get(lock)?.waits ?? null, totalNs: c.get(lock)?.total_ns ?? null };
          }
        : undefined,
    [hasFtrace],
  );
  const option = useMemo(
    () =>
      root
        ? buildFlameOption(root, {
            zoomPath: view.fgZoom,
            highlight: view.fgQ,
            diff: view.fgDiff,
            unit: view.fgUnit,
            total,
            waitsLink,
            palette: view.fgWarm ? 'warm' : 'cool',
          })
        : null,
    [root, view.fgZoom, view.fgQ, view.fgDiff, view.fgUnit, total, waitsLink, view.fgWarm],
  );
  const events = useMemo<Record<string, EChartHandler>>(
    () => ({
      click: (p) => {
        const r = layout?.rects[p?.dataIndex as number];
        if (!r) return;
        // Clicking the zoomed frame again zooms out one level.
        const same = r.path.length === layout!.focusPath.length && r.path.every((n, i) => n === layout!.focusPath[i]);
        setView({ fgZoom: same ? r.path.slice(0, -1) : r.path });
      },
    }),
    [layout, setView],
  );

  // The sleeping primitives of the graph's stacks, by lock, with their total value: the server's FlameGraph.locks (one
  // rule counts them: a stack once per lock, whatever frames on that lock it holds). Not for a difference graph.
  const locks: [string, number][] = !view.fgDiff && single.data ? single.data.locks.map((l) => [l.lock, l.value]) : [];

  const otherAnalyses = (analyses.data?.items ?? []).filter((a) => a.id !== analysis.id);
  const taskValue = view.fgPid !== null ? `p:${view.fgPid}` : view.fgComm !== null ? `c:${view.fgComm}` : '';

  return (
    <div className="offcpu">
      <section className="panel controls-panel">
        <div className="controls">
          <div className="segmented" role="group" aria-label="Unit">
            <button
              aria-pressed={view.fgUnit === 'us'}
              onClick={() => setView({ fgUnit: 'us' })}
              disabled={!hasMicros}
              title={hasMicros ? undefined : 'these stacks carry no µs total: counted as stacks'}
            >
              µs off CPU
            </button>
            <button aria-pressed={view.fgUnit === 'stacks'} onClick={() => setView({ fgUnit: 'stacks' })}>
              stacks
            </button>
          </div>
          {!view.fgDiff && (
            <label className="control">
              <span className="k">Task</span>
              <select
                className="select"
                aria-label="Task"
                value={taskValue}
                onChange={(e) => {
                  const v = e.target.value;
                  if (!v) setView({ fgPid: null, fgComm: null });
                  else if (v.startsWith('p:')) setView({ fgPid: Number(v.slice(2)), fgComm: null });
                  else setView({ fgPid: null, fgComm: v.slice(2) });
                }}
              >
                <option value="">all tasks</option>
                {taskValue && !(tasks.data ?? []).some((t) => (t.pid !== null ? `p:${t.pid}` : `c:${t.comm}`) === taskValue) && (
                  <option value={taskValue}>{taskValue.slice(2)}</option>
                )}
                {(tasks.data ?? []).map((t) => {
                  const v = t.pid !== null ? `p:${t.pid}` : `c:${t.comm}`;
                  return (
                    <option key={v} value={v}>
                      {t.comm ?? '?'}
                      {t.pid !== null ? ` ${t.pid}` : ''} · {formatNs(t.value_us * 1000)} · {t.stacks} stack{t.stacks === 1 ? '' : 's'}
                    </option>
                  );
                })}
              </select>
            </label>
          )}
          <SearchBox value={view.fgQ} onChange={(v) => setView({ fgQ: v })} />
          <label className="control check">
            <input type="checkbox" checked={view.fgInv} onChange={(e) => setView({ fgInv: e.target.checked })} /> inverted (callers of a leaf)
          </label>
          {!view.fgDiff && (
            <label className="control check" title="Off-CPU flame graphs are drawn in cool colours by convention; the warm ones are CPU flame graphs'">
              <input type="checkbox" checked={view.fgWarm} onChange={(e) => setView({ fgWarm: e.target.checked })} /> warm colours
            </label>
          )}
          <label className="control check">
            <input type="checkbox" checked={view.fgDiff} onChange={(e) => setView({ fgDiff: e.target.checked, fgZoom: [] })} /> compare
          </label>
          {view.fgDiff && (
            <>
              <label className="control">
                <span className="k">Before</span>
                <select className="select" aria-label="Before" value={view.fgA ?? ''} onChange={(e) => setView({ fgA: e.target.value ? Number(e.target.value) : null })}>
                  <option value="">all of this analysis</option>
                  {offSources.map((s) => (
                    <option key={s.id} value={s.id}>
                      {s.filename}
                    </option>
                  ))}
                </select>
              </label>
              <label className="control">
                <span className="k">After</span>
                <select
                  className="select"
                  aria-label="After"
                  value={view.fgBAn !== null ? `a:${view.fgBAn}` : view.fgB !== null ? `s:${view.fgB}` : ''}
                  onChange={(e) => {
                    const v = e.target.value;
                    if (v.startsWith('a:')) setView({ fgBAn: v.slice(2), fgB: null });
                    else if (v.startsWith('s:')) setView({ fgB: Number(v.slice(2)), fgBAn: null });
                    else setView({ fgB: null, fgBAn: null });
                  }}
                >
                  <option value="">all of this analysis</option>
                  {offSources.map((s) => (
                    <option key={s.id} value={`s:${s.id}`}>
                      {s.filename}
                    </option>
                  ))}
                  {otherAnalyses.length > 0 && (
                    <optgroup label="another analysis">
                      {otherAnalyses.map((a) => (
                        <option key={a.id} value={`a:${a.id}`}>
                          {a.name || a.id}
                        </option>
                      ))}
                    </optgroup>
                  )}
                </select>
              </label>
            </>
          )}
        </div>
        {view.fgQ !== null && single.data && !view.fgDiff && (
          <p className="search-share" data-testid="search-share">
            <span className="swatch match" /> <b className="mono">{view.fgQ}</b>: {shareText(single.data.matched ?? 0, single.data.total, view.fgUnit)}
          </p>
        )}
        {diff.data && view.fgDiff && (
          <p className="search-share">
            before {formatFlameValue(diff.data.total_a, view.fgUnit)} · after {formatFlameValue(diff.data.total_b, view.fgUnit)} ·{' '}
            <span className="swatch grew" /> grew <span className="swatch shrank" /> shrank
          </p>
        )}
      </section>

      <section className="panel flame-panel">
        <div className="panel-head">
          <h2>{view.fgDiff ? 'Differential off-CPU flame graph' : 'Off-CPU flame graph'}</h2>
          <nav className="crumbs" aria-label="Zoom" data-testid="crumbs">
            <button className="crumb" onClick={() => setView({ fgZoom: [] })} disabled={!view.fgZoom.length}>
              all
            </button>
            {(layout?.focusPath ?? []).map((n, i) => (
              <span key={i}>
                <span className="muted"> › </span>
                <button className="crumb mono" onClick={() => setView({ fgZoom: layout!.focusPath.slice(0, i + 1) })}>
                  {n}
                </button>
              </span>
            ))}
            {view.fgZoom.length > 0 && (
              <button className="btn small" onClick={() => setView({ fgZoom: [] })}>
                reset zoom
              </button>
            )}
          </nav>
          <span className="muted">
            {q.data ? `${!view.fgDiff && single.data ? `${single.data.stacks} distinct stacks · ` : ''}total ${formatFlameValue(total, view.fgUnit)} · ` : ''}
            click a frame to zoom and pin its details · <span className="swatch lock" /> sleeping primitive
          </span>
        </div>
        {q.isPending && <Loading what="flame graph" />}
        {q.isError && <ErrorBox title="Could not load the flame graph." error={q.error} />}
        {root && root.value === 0 && (
          <p className="muted">
            Nothing to draw{view.fgUnit === 'us' ? ': these stacks carry no µs total (try the “stacks” unit)' : ''}
            {view.fgQ ? ` for “${view.fgQ}”` : ''}.
          </p>
        )}
        {option && layout && root && root.value > 0 && (
          <EChart option={option} onEvents={events} height={flameHeight(layout)} ariaLabel="Off-CPU flame graph" className="flame" />
        )}
        {layout && focusKey && (
          <div ref={frameRef} className="frame-detail" data-testid="frame-detail">
            <b className="mono">{layout.focus.name}</b>{' '}
            <span className="muted">
              · {formatFlameValue(layout.focus.value, view.fgUnit)} · {percent(layout.focus.value, total)} of the total · depth {layout.focusPath.length}
            </span>
            {layout.focus.lock && (
              <>
                {' '}
                · a sleeping primitive (<span className="mono">{layout.focus.lock}</span>){' '}
                {hasFtrace ? (
                  <WaitsOnLock count={counts.get(layout.focus.lock)} onOpen={() => setView({ tab: 'stalls', lockKey: layout.focus.lock, chain: null, link: null })} />
                ) : (
                  <span className="muted">Load an ftrace trace in this analysis to list the waits on it.</span>
                )}
              </>
            )}
            {!layout.focus.lock && (
              <LocksUnder focus={layout.focus} unit={view.fgUnit} counts={counts} hasFtrace={hasFtrace} onOpen={(lock) => setView({ tab: 'stalls', lockKey: lock, chain: null, link: null })} />
            )}
            <span className="frame-actions">
              <button className="btn small" onClick={() => setView({ fgQ: layout.focus.name })}>
                Search this frame
              </button>
              <button className="btn small" onClick={() => setView({ fgZoom: layout.focusPath.slice(0, -1) })}>
                Zoom out
              </button>
            </span>
          </div>
        )}
      </section>

      {locks.length > 0 && (
        <section className="panel">
          <div className="panel-head">
            <h2>Sleeping primitives</h2>
            <span className="muted">
              stacks{view.fgQ ? ' matching the search' : ''} with a frame the chains' lock table knows, each counted once per lock
              {hasFtrace ? ' · one click lists the waits on it' : ''}
            </span>
          </div>
          <table className="grid compact" data-testid="lock-frames">
            <thead>
              <tr>
                <th>Primitive</th>
                <th className="num">{view.fgUnit === 'us' ? 'Off CPU in it' : 'Stacks through it'}</th>
                <th className="num">Share of the total</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {locks.map(([lock, v]) => (
                <tr key={lock}>
                  <td>
                    <span className="swatch lock" /> <span className="mono">{lock}</span>
                  </td>
                  <td className="num">{formatFlameValue(v, view.fgUnit)}</td>
                  <td className="num">{percent(v, total)}</td>
                  <td>
                    {hasFtrace ? (
                      <WaitsOnLock count={counts.get(lock)} onOpen={() => setView({ tab: 'stalls', lockKey: lock, chain: null, link: null })} />
                    ) : (
                      <span className="muted">no ftrace source: no waits to list</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}

export function shareText(matched: number, total: number, unit: string): string {
  if (unit === 'us') return `${formatFlameValue(matched, unit)} of ${formatFlameValue(total, unit)} off CPU (${percent(matched, total)})`;
  return `${matched.toLocaleString('en-US')} of ${formatFlameValue(total, unit)} (${percent(matched, total)})`;
}

function SearchBox({ value, onChange }: { value: string | null; onChange: (v: string | null) => void }) {
  const [draft, setDraft] = useState(value ?? '');
  useEffect(() => setDraft(value ?? ''), [value]);
  return (
    <form
      className="control"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        onChange(draft.trim() || null);
      }}
    >
      <input className="text-input" aria-label="Search frames" placeholder="search frames…" value={draft} onChange={(e) => setDraft(e.target.value)} />
      <button className="btn small" type="submit">
        Search
      </button>
      {value !== null && (
        <button className="btn small" type="button" aria-label="Clear search" onClick={() => onChange(null)}>
          ×
        </button>
      )}
    </form>
  );
}
