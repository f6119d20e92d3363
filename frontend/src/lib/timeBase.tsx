// One time base per analysis page: every time is written from the analysis' start ("+3.100000 s", the default, as
// the timeline's ruler reads) or on the trace's own clock ("11374.046209 s", ?time=abs); the other one on hover. The
// exports (CSV, Parquet, Perfetto) keep the trace's own times in ns.
import { createContext, useContext } from 'react';
import { ABSOLUTE_TIME, formatAbsTime, formatTime, type TimeBase } from './format';

export const TimeBaseContext = createContext<TimeBase>(ABSOLUTE_TIME);

/** The page's time base (absolute outside an analysis page). */
export function useTimeBase(): TimeBase {
  return useContext(TimeBaseContext);
}

/** A point in time in the page's time base, the other one in its title (on hover). */
export function Time({ ns }: { ns: number | null | undefined }) {
  const base = useTimeBase();
  if (ns === null || ns === undefined) return <>—</>;
  const other = base.absolute ? (base.origin === null ? null : `${formatTime(ns, { ...base, absolute: false })} from the analysis' start`) : `${formatAbsTime(ns)} on the trace's clock`;
  return (
    <span className="time" title={other ?? undefined}>
      {formatTime(ns, base)}
    </span>
  );
}
