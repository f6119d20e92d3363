// The Dispatch view follows what the capture holds (issue 33): a phase the capture has no values of (I2D without I
// events, D2C and I2D on a bio-based device, D2C and Q2C without completions) is neither the heatmap's metric, nor
// the requests' order, nor the summary's sort column; the first phase it has is.
import { useMemo } from 'react';
import { useHeatmapMetrics } from '../../api/queries';
import { useViewState } from '../../state/useViewState';
import type { Phase, ViewState } from '../../state/viewState';

export const PHASE_ORDER: Phase[] = ['i2d', 'd2c', 'q2c'];

/** The phase to show: the one asked when the capture has values of it (or when what it has is not known yet),
 * else the first of I2D, D2C, Q2C it has. */
export function presentPhase(asked: Phase, present: ReadonlySet<string> | null): Phase {
  if (present === null || present.has(asked)) return asked;
  return PHASE_ORDER.find((p) => present.has(p)) ?? asked;
}

/** The view with its heatmap metric, requests' order and summary sort on phases the capture has. */
export function withPresentPhases(view: ViewState, present: ReadonlySet<string> | null): ViewState {
  if (present === null) return view;
  const [phase, stat] = view.sort.column.split('.') as [string, string | undefined];
  const sortPhase = stat !== undefined ? presentPhase(phase as Phase, present) : null;
  return {
    ...view,
    hm: presentPhase(view.hm, present),
    order: view.order === 'time' ? 'time' : presentPhase(view.order, present),
    sort: sortPhase !== null && sortPhase !== phase ? { ...view.sort, column: `${sortPhase}.${stat}` as ViewState['sort']['column'] } : view.sort,
  };
}

/** Why a phase cannot be shown, for its button's title (null: it can). */
export function phaseAbsent(phase: Phase, present: ReadonlySet<string> | null): string | null {
  if (present === null || present.has(phase)) return null;
  return `no ${phase.toUpperCase()} in this capture: it lacks the ${phase[0].toUpperCase()} or ${phase[2].toUpperCase()} events (see “What this capture can tell”)`;
}

/** The block phases with values in the analysis (null until known): /heatmap/metrics lists the metrics with events. */
export function usePresentPhases(analysisId: string): ReadonlySet<string> | null {
  const q = useHeatmapMetrics(analysisId);
  return useMemo(() => (q.data ? new Set(q.data.metrics.map((m) => m.metric)) : null), [q.data]);
}

/** useViewState for the Dispatch view: its phases on those the capture has (withPresentPhases). */
export function useDispatchView(analysisId: string): [ViewState, ReturnType<typeof useViewState>[1], ReadonlySet<string> | null] {
  const [view, setView] = useViewState();
  const present = usePresentPhases(analysisId);
  const shown = useMemo(() => withPresentPhases(view, present), [view, present]);
  return [shown, setView, present];
}
