import { describe, expect, it } from 'vitest';
import { errorMessage } from './client';

describe('the message of an API error', () => {
  it('is the detail of every error body, a 422 of a malformed request too', () => {
    const invalid = {
      detail: 'invalid request: t1_ns: Input should be less than or equal to 4611686018427387903',
      errors: [{ loc: ['query', 't1_ns'], msg: 'Input should be less than or equal to 4611686018427387903', type: 'less_than_equal' }],
    };
    expect(errorMessage(invalid, 'fallback')).toBe(invalid.detail);
    expect(errorMessage({ detail: 'no chain of rank 9 in this analysis' }, 'fallback')).toBe('no chain of rank 9 in this analysis');
  });

  it('falls back for a body that is not the API’s', () => {
    expect(errorMessage(null, '502 Bad Gateway')).toBe('502 Bad Gateway');
    expect(errorMessage({}, '502 Bad Gateway')).toBe('502 Bad Gateway');
    expect(errorMessage({ detail: '' }, 'fallback')).toBe('fallback');
  });
});
