import { describe, expect, it } from 'vitest';
import { bttAverage, bttSeconds } from './btt';

describe("btt's figures as btt prints them", () => {
  it('prints whole ns as seconds to 9 decimals', () => {
    expect(bttSeconds(8800)).toBe('0.000008800');
    expect(bttSeconds(29_987_530_294)).toBe('29.987530294');
    expect(bttSeconds(0)).toBe('0.000000000');
  });
  it('prints the average as (total / 1e9) / n', () => {
    // tests/golden/btt/derived-liuzel01-sda-lvm: D2C of (8, 0), N 113, AVG 0.005564976
    expect(bttAverage(628_842_323, 113)).toBe('0.005564976');
    expect(bttAverage(688_285_485, 113)).toBe('0.006091022');
    expect(bttAverage(0, 0)).toBe('—');
  });
});
