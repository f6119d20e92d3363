// The links from a flame frame to the waits on a lock: a lock frame's own, and those of the sleeping primitives in the
// stacks under any frame clicked (so a task's frame, wide enough to click, leads to its locks in one more click).
import type { FlameNode } from '../../api/stallTypes';
import { formatFlameValue, locksUnder } from '../../charts/flame';
import { formatCount, formatNs } from '../../lib/format';
import type { ViewState } from '../../state/viewState';

type Count = { waits: number; total_ns: number };
const SHOWN = 6;

/** The button to the Stalls tab's waits on a lock, saying how many it lists (once counted); none when there are none. */
export function WaitsOnLock({ count, onOpen, lock }: { count: Count | undefined; onOpen: () => void; lock?: string }) {
  if (count && count.waits === 0) return <span className="muted">no waits on {lock ?? 'this lock'} in the ftrace trace</span>;
  return (
    <button className="btn small" onClick={onOpen}>
      Waits on {lock ? <span className="mono">{lock}</span> : 'this lock'}
      {count ? ` (${formatCount(count.waits)}, ${formatNs(count.total_ns)} in all)` : ''}
    </button>
  );
}

/** Under a frame that is not a lock: the sleeping primitives its stacks go through, each a link to its waits (with an
 * ftrace source). */
export function LocksUnder({ focus, unit, counts, hasFtrace, onOpen }: {
  focus: FlameNode;
  unit: ViewState['fgUnit'];
  counts: Map<string, Count>;
  hasFtrace: boolean;
  onOpen: (lock: string) => void;
}) {
  const locks = locksUnder(focus);
  if (locks.length === 0) return null;
  return (
    <div className="frame-locks" data-testid="frame-locks">
      <span className="muted">sleeping primitives under it:</span>
      {locks.slice(0, SHOWN).map(({ lock, value }) => (
        <span key={lock} className="frame-lock">
          {hasFtrace ? (
            <WaitsOnLock lock={lock} count={counts.get(lock)} onOpen={() => onOpen(lock)} />
          ) : (
            <span className="mono">{lock}</span>
          )}{' '}
          <span className="muted">
            {formatFlameValue(value, unit)}
            {unit === 'us' ? ' off CPU' : ''}
          </span>
        </span>
      ))}
      {locks.length > SHOWN && <span className="muted">and {locks.length - SHOWN} more (the table below)</span>}
    </div>
  );
}
