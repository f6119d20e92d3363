import type { AnalysisDetail } from '../../api/types';
import type { ChainLink } from '../../api/stallTypes';
import { useWakers } from '../../api/queries';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount } from '../../lib/format';
import { formatUs, linkWakerQuery, rowsText, share, taskName } from '../../lib/wakers';
import { Stack } from './Stack';

const TOP = 3;

/** In a chain's link card: who woke this task according to offwaketime, with the waker's stack. The task is
 * matched by pid when offwaketime has it, else by name; the waits on the link's lock come first, and when
 * there are none the task's other wake-ups are shown, said as such. */
export function WakerSide({ analysis, link, pos }: { analysis: AnalysisDetail; link: ChainLink; pos: number }) {
  const analysisId = analysis.id;
  const filename = (id: number) => analysis.sources.find((s) => s.id === id)?.filename ?? `source ${id}`;
  const q = linkWakerQuery(link);
  const onLock = useWakers(analysisId, { pid: q?.pid ?? null, comm: q?.comm ?? null, lockKey: q?.lockKey ?? null, limit: TOP }, q !== null);
  const noneOnLock = q?.lockKey != null && onLock.data !== undefined && !onLock.isPlaceholderData && onLock.data.pairs === 0;
  const anyLock = useWakers(analysisId, { pid: q?.pid ?? null, comm: q?.comm ?? null, lockKey: null, limit: TOP }, q !== null && noneOnLock);
  if (q === null) return null;
  const who = taskName(link.comm, link.pid);
  const res = noneOnLock ? anyLock : onLock;
  const data = res.data && !res.isPlaceholderData ? res.data : undefined;
  return (
    <div className="waker-side" data-testid={`offwake-${pos}`}>
      <h3>Waker side from offwaketime</h3>
      {res.isError && <ErrorBox title="Could not load the offwaketime wake-ups." error={res.error} />}
      {!res.isError && data === undefined && <Loading what="offwaketime wake-ups" />}
      {data && data.pairs === 0 && (
        <p className="muted" data-testid={`offwake-empty-${pos}`}>
          No offwaketime record of {who} (by pid{link.comm ? ' or by name' : ''}) has a waker stack: offwaketime did not see this task
          woken.
        </p>
      )}
      {data && data.pairs > 0 && (
        <>
          <p className="muted">
            {noneOnLock && (
              <>
                None of {who}’s offwaketime records waits on <span className="mono">{q.lockKey}</span>; its other wake-ups:{' '}
              </>
            )}
            {who} matched by {data.matched_by === 'pid' ? 'pid' : 'name'}: {formatCount(data.records)} record{data.records === 1 ? '' : 's'},{' '}
            {formatUs(data.total_us)} blocked until woken
            {!noneOnLock && q.lockKey ? (
              <>
                {' '}
                on <span className="mono">{q.lockKey}</span>
              </>
            ) : null}
            {data.pairs > data.items.length ? ` · top ${data.items.length} of ${formatCount(data.pairs)} waker stacks` : ''}
          </p>
          {data.items.map((p, i) => (
            <div className="waker-pair" key={i} data-testid={`offwake-${pos}-${i + 1}`}>
              <p className="waker-pair-head">
                <span className="mono strong">woken by {taskName(p.waker_comm, p.waker_pid)}</span> ·{' '}
                <b>{formatUs(p.value_us)}</b> · {share(p.value_us, data.total_us)} of the total · {formatCount(p.records)} record
                {p.records === 1 ? '' : 's'}
                {p.lock && (
                  <>
                    {' '}
                    · <span className="mono">{p.lock}</span>
                  </>
                )}{' '}
                <span className="muted mono">({rowsText(p, filename)})</span>
              </p>
              <Stack title={`${taskName(p.waker_comm, p.waker_pid)}'s stack at the wake-up`} frames={p.waker_frames} />
            </div>
          ))}
        </>
      )}
    </div>
  );
}
