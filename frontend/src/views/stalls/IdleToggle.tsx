// The Stalls tab's one "idle sleeps too" switch (URL `idle=1`): the waits list and the waits heatmap both follow it.
import { useViewState } from '../../state/useViewState';

const IDLE_TITLE =
  'Waits whose kind is idle (their Why column): a worker or kernel thread waiting for work, an RCU grace-period thread, a poll, a futex, a nanosleep. Left out by default: they are not stalls.';

export function IdleToggle() {
  const [view, setView] = useViewState();
  return (
    <label className="control check" title={IDLE_TITLE}>
      <input type="checkbox" checked={view.idle} onChange={(e) => setView({ idle: e.target.checked })} /> idle sleeps too
    </label>
  );
}
