import { describe, expect, it } from 'vitest';
import { formatInstant } from '../charts/timeAxis';
import { formatNsShort, formatMsTick, formatAbsTime, formatBytes, formatCount, formatNs, formatRelNs, formatSector, formatName, formatTime, pickTimeUnit, formatAxisNumber, taskLabel, formatWaitNs } from './format';

describe('formatNs', () => {
  it('picks an adaptive unit', () => {
    expect(formatNs(15626265317)).toBe('15.63 s');
    expect(formatNs(318)).toBe('318 ns');
    expect(formatNs(22911)).toBe('22.91 µs');
    expect(formatNs(25416861)).toBe('25.42 ms');
    expect(formatNs(1_000)).toBe('1.00 µs');
    expect(formatNs(123_456_789)).toBe('123.5 ms');
    expect(formatNs(0)).toBe('0 ns');
    expect(formatNs(420e9)).toBe('420.0 s');
  });
  it('promotes when rounding carries into the next unit', () => {
    expect(formatNs(999_960)).toBe('1.00 ms');
    expect(formatNs(999_999_999)).toBe('1.00 s');
  });
  it('shows a dash for missing values', () => {
    expect(formatNs(null)).toBe('—');
    expect(formatNs(undefined)).toBe('—');
  });
  it('pickTimeUnit', () => {
    expect(pickTimeUnit(15626265317).unit).toBe('s');
    expect(pickTimeUnit(999).unit).toBe('ns');
    expect(pickTimeUnit(1e6).unit).toBe('ms');
  });
});

describe('other formats', () => {
  it('absolute times are seconds with 6 decimals', () => {
    expect(formatAbsTime(81092496118)).toBe('81.092496 s');
    expect(formatAbsTime(96718761435)).toBe('96.718761 s');
    expect(formatAbsTime(null)).toBe('—');
  });
  it('relative times are signed', () => {
    expect(formatRelNs(25416861)).toBe('+25.42 ms');
    expect(formatRelNs(-23229)).toBe('−23.23 µs');
    expect(formatRelNs(0)).toBe('+0 ns');
  });
  it('sectors with their size', () => {
    expect(formatSector(141698288, 8)).toBe('141698288 + 8 (4 KiB)');
    expect(formatSector(0, 1)).toBe('0 + 1 (512 B)');
    expect(formatSector(2048, 2048)).toBe('2048 + 2048 (1 MiB)');
    expect(formatSector(5, null)).toBe('5');
    expect(formatSector(null, 8)).toBe('—');
  });
  it('bytes and counts', () => {
    expect(formatBytes(965)).toBe('965 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3 GiB');
    expect(formatCount(1234567)).toBe('1,234,567');
    for (const n of [0, 7, 12, 999, 1000, 65536, 999999, 1000000, -1234, -999, 2 ** 53 - 1, 1.5, -0.25, 12345.678]) {
      expect(formatCount(n)).toBe(n.toLocaleString('en-US'));
    }
  });
  it('axis durations', () => {
    expect(formatNsShort(1e9)).toBe('1 s');
    expect(formatNsShort(150_000)).toBe('150 µs');
    expect(formatNsShort(1e13)).toBe('10000 s');
    expect(formatMsTick(0.5)).toBe('500 µs');
    expect(formatMsTick(1e-6)).toBe('1 ns');
  });
  it('axis numbers', () => {
    expect(formatAxisNumber(0.001)).toBe('0.001');
    expect(formatAxisNumber(100)).toBe('100');
    expect(formatAxisNumber(10000)).toBe('1e4');
    expect(formatAxisNumber(0)).toBe('0');
  });

  it('names a task by comm and pid, a CPU\'s pseudo-task by its name alone', () => {
    expect(taskLabel('vmstat', 2854)).toBe('vmstat 2854');
    // the idle task, named alike wherever it comes from: ftrace's <idle>, bcc's swapper/N with or without its pid
    expect(taskLabel('<idle>', 0)).toBe('<idle> 0');
    expect(taskLabel('swapper/3', 0)).toBe('<idle> 0 (swapper/3)');
    expect(taskLabel('swapper/0', null)).toBe('<idle> 0 (swapper/0)');
    expect(taskLabel('swapperd', null)).toBe('swapperd');
    expect(taskLabel('CPU 0 (task unknown)', -1)).toBe('CPU 0 (task unknown)');
    expect(taskLabel(null, -3)).toBe('CPU 2 (task unknown)');
  });
});

describe('formatWaitNs', () => {
  it('marks a wait whose end was not traced with +', () => {
    expect(formatWaitNs(316673836, true)).toBe('316.7 ms');
    expect(formatWaitNs(316673836, false)).toBe('316.7 ms+');
    expect(formatWaitNs(null, true)).toBe('—');
  });
});

describe('formatName', () => {
  it('names the kind of file a source was read from', () => {
    expect(formatName({ format: 'blkparse', files: [{ kind: 'blktrace per-CPU file, CPU 0' }] })).toBe('blktrace binary');
    expect(formatName({ format: 'blkparse', files: [{ kind: 'blktrace stream (blkparse -d dump or blktrace -o -)' }] })).toBe('blktrace binary');
    expect(formatName({ format: 'blkparse', files: [{ kind: 'blkparse text' }] })).toBe('blkparse');
    expect(formatName({ format: 'ftrace', files: [{ kind: 'trace.dat v7 (zstd)' }] })).toBe('trace.dat v7 (zstd)');
    expect(formatName({ format: 'ftrace', files: [{ kind: 'ftrace text' }] })).toBe('ftrace text');
    expect(formatName({ format: 'ftrace', files: [{ kind: 'perf script text' }] })).toBe('perf script');
    expect(formatName({ format: 'ftrace', files: [{ kind: 'perf script (perf.data)' }] })).toBe('perf.data');
    expect(formatName({ format: 'offcputime', waker_stacks: 3, files: [{ kind: 'offcputime text' }] })).toBe('offwaketime');
    expect(formatName({ format: 'offcputime' })).toBe('offcputime');
  });
});

describe('formatTime', () => {
  it("writes a time from the analysis' start, or on the trace's clock", () => {
    const rel = { origin: 11_370_816_169_000, absolute: false };
    expect(formatTime(11_374_046_209_000, rel)).toBe('+3.230040 s');
    expect(formatTime(11_370_000_000_000, rel)).toBe('−0.816169 s');
    expect(formatTime(11_374_046_209_000, { ...rel, absolute: true })).toBe('11374.046209 s');
    expect(formatTime(11_374_046_209_000)).toBe('11374.046209 s');
    expect(formatTime(null, rel)).toBe('—');
    expect(formatInstant(11_374_046_209_117, 1_000, rel)).toBe('+3.230040117 s');
    expect(formatInstant(11_374_046_209_117, 1_000)).toBe('11374.046209117 s');
  });
});
