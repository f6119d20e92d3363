import { describe, expect, it } from 'vitest';
import { formatInstant, formatTick, labelFits, niceStep, tickSpec, ticks } from './timeAxis';

describe('time axis ticks', () => {
  it('picks 1-2-5 steps', () => {
    expect(niceStep(242e6, 8)).toBe(50e6);
    expect(niceStep(1000, 8)).toBe(200);
    expect(niceStep(3, 8)).toBe(1);
  });
  it('labels a 242 ms window at +10.9 s distinctly (it printed "+10.9 s" four times)', () => {
    const t = ticks(10.85e9, 11.092e9);
    expect(t.labels).toEqual(['+10.85 s', '+10.90 s', '+10.95 s', '+11.00 s', '+11.05 s']);
  });
  it('stays distinct at every zoom down to nanoseconds', () => {
    for (const at of [0, 1234, 81_092_496_118, 3_600e9 + 17]) {
      for (let span = 5; span < 1e12; span *= 3.7) {
        const t = ticks(at, at + span);
        expect(t.at.length).toBeGreaterThanOrEqual(2);
        expect(new Set(t.labels).size).toBe(t.labels.length);
      }
    }
  });
  it('groups decimals and keeps the unit of the largest offset', () => {
    const s = tickSpec(10.9e9, 10.9e9 + 1000);
    expect(s.unit).toBe('s');
    expect(formatTick(10.9e9 + 200, s)).toBe('+10.900 000 2 s');
    expect(formatTick(0, s)).toBe('0');
    expect(formatTick(-2e6, tickSpec(-5e6, 5e6))).toBe('−2 ms');
    expect(formatTick(1500, tickSpec(0, 4000))).toBe('+1.5 µs');
    expect(formatTick(7, tickSpec(0, 40))).toBe('+7 ns');
  });
  it('formats an instant to the precision of the window', () => {
    expect(formatInstant(10_920_483_117, 1e9)).toBe('10.920483 s');
    expect(formatInstant(10_920_483_117, 5000)).toBe('10.920483117 s');
    expect(formatInstant(7_341_208_017_600, 4e6)).toBe('7341.208018 s'); // rounded, as formatAbsTime
  });
});

describe('labelFits', () => {
  it("leaves out a label that would run past the ruler's edge (\"+250 m\" was cut)", () => {
    // the ping capture's ruler: 1,274 px; its +250 ms tick at 1,240 px
    expect(labelFits(1240, '+250 ms', 1274)).toBe(false);
    expect(labelFits(1000, '+200 ms', 1274)).toBe(true);
    expect(labelFits(1200, '+10.970 123 45 s', 1274)).toBe(false);
  });
});
