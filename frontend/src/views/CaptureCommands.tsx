// The home page's list of capture commands: per tool, one command whose output is dropped on the page as it is.
// Each command writes a file the format detection reads (parsers/detect.py); the file to drop is named after it.

type Capture = { tool: string; command: string; drop: string; gives: string };

export const CAPTURES: Capture[] = [
  {
    tool: 'blktrace',
    command: 'blktrace -d /dev/sda -w 30',
    drop: 'every sda.blktrace.N at once (one per CPU: one source)',
    gives: 'block requests: I→D in the scheduler, D→C in the device',
  },
  {
    tool: 'blkparse',
    command: 'blktrace -d /dev/sda -w 30 -o - | blkparse -i - > sda.blkparse.txt',
    drop: 'sda.blkparse.txt',
    gives: 'the same requests, as text',
  },
  {
    tool: 'trace-cmd (function_graph)',
    command: 'trace-cmd record -p function_graph -e sched_switch -e sched_wakeup -e block -T sleep 30',
    drop: 'trace.dat (or trace-cmd report > trace.txt)',
    gives: 'waits, who woke or held them, the calls around them, their stacks',
  },
  {
    tool: 'ftrace (tracefs)',
    command:
      'cd /sys/kernel/tracing && echo 1 > options/funcgraph-abstime && echo 1 > options/funcgraph-proc && echo 1 > events/sched/enable && echo function_graph > current_tracer && sleep 30 && cat trace > ~/trace.txt',
    drop: 'trace.txt',
    gives: 'the same, without trace-cmd',
  },
  {
    tool: 'perf script',
    command:
      'perf record -a -g -e sched:sched_switch -e sched:sched_wakeup -e block:block_rq_insert -e block:block_rq_issue -e block:block_rq_complete -- sleep 30 && perf script > perf.script.txt',
    drop: 'perf.script.txt',
    gives: 'waits with their call chains, block requests',
  },
  {
    tool: 'bcc offcputime',
    command: 'offcputime -K -f 30 > offcpu.folded.txt',
    drop: 'offcpu.folded.txt',
    gives: 'off-CPU flame graph: where tasks slept, by kernel stack',
  },
  {
    tool: 'bcc offwaketime',
    command: 'offwaketime -K -f 30 > offwake.folded.txt',
    drop: 'offwake.folded.txt',
    gives: 'the same with the waker’s stack: who woke each sleep',
  },
];

export function CaptureCommands() {
  return (
    <section className="panel capture-commands" data-testid="capture-commands">
      <h2>Capture commands</h2>
      <p className="hint">
        Run as root on the machine that stalls, while it stalls (30 s here); drop what each writes as it is. bcc&apos;s tools
        are named <code>offcputime-bpfcc</code> on Debian and Ubuntu. Several captures of one run can be dropped together:
        they are aligned on one timeline. A function_graph of every kernel function is heavy: <code>-g FUNCTION</code>{' '}
        (trace-cmd) or <code>echo FUNCTION &gt; set_graph_function</code> (tracefs) graphs one call tree.
      </p>
      <table className="grid compact">
        <thead>
          <tr>
            <th>Tool</th>
            <th>Command</th>
            <th>Drop</th>
            <th>Gives</th>
          </tr>
        </thead>
        <tbody>
          {CAPTURES.map((c) => (
            <tr key={c.tool}>
              <td>{c.tool}</td>
              <td className="wrap">
                <code className="mono">{c.command}</code>
              </td>
              <td className="mono wrap">{c.drop}</td>
              <td className="muted wrap">{c.gives}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
