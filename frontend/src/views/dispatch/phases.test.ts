import { describe, expect, it } from 'vitest';
import { DEFAULT_VIEW } from '../../state/viewState';
import { phaseAbsent, presentPhase, withPresentPhases } from './phases';

describe('the Dispatch view follows the phases a capture holds', () => {
  it('opens on D2C when there is no I (isotopp keks: D and C only)', () => {
    const v = withPresentPhases(DEFAULT_VIEW, new Set(['d2c']));
    expect([v.hm, v.order, v.sort.column]).toEqual(['d2c', 'd2c', 'd2c.max']);
  });
  it('opens on Q2C on a bio-based device (dm, md: no I, no D)', () => {
    const v = withPresentPhases(DEFAULT_VIEW, new Set(['q2c', 'wait']));
    expect([v.hm, v.order, v.sort.column]).toEqual(['q2c', 'q2c', 'q2c.max']);
  });
  it('keeps what was asked when the capture has it, or while it is not known', () => {
    const asked = { ...DEFAULT_VIEW, hm: 'q2c' as const, order: 'time' as const, sort: { column: 'count' as const, desc: true } };
    expect(withPresentPhases(asked, new Set(['i2d', 'd2c', 'q2c']))).toEqual(asked);
    expect(withPresentPhases(asked, null)).toBe(asked);
    expect(withPresentPhases(asked, new Set(['i2d']))).toEqual({ ...asked, hm: 'i2d' });
    expect(presentPhase('d2c', new Set())).toBe('d2c'); // no phase at all: nothing better to show
  });
  it('says why a phase is not there', () => {
    expect(phaseAbsent('i2d', new Set(['d2c']))).toMatch(/^no I2D in this capture/);
    expect(phaseAbsent('d2c', new Set(['d2c']))).toBeNull();
  });
});
