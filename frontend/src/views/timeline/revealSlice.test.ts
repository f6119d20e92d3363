import { describe, expect, it } from 'vitest';
import { scrollToShow } from './revealSlice';

describe('scrollToShow', () => {
  // a 1000 px window: the ruler's 24 px on top, the drawer from 860 px down
  it('leaves a slice between the ruler and the drawer where it is', () => {
    expect(scrollToShow(300, 316, 24, 860)).toBe(0);
    expect(scrollToShow(24, 40, 24, 860)).toBe(0);
  });
  it('brings a slice below the drawer, or above the ruler, to a third of the room', () => {
    // 1,730 px down (issue 25): scrolled so that it sits at 24 + (836 - 16) / 3
    const dy = scrollToShow(1730, 1746, 24, 860);
    expect(1730 - dy).toBe(24 + Math.round((836 - 16) / 3));
    expect(scrollToShow(-400, -384, 24, 860)).toBe(-400 - (24 + Math.round((836 - 16) / 3)));
    // under the drawer only: scrolled too
    expect(scrollToShow(900, 916, 24, 860)).toBeGreaterThan(0);
  });
  it('a slice taller than the room: its top under the ruler', () => {
    expect(scrollToShow(2000, 3000, 24, 860)).toBe(2000 - 24);
  });
});
