import { describe, expect, it } from 'vitest';
import { csvCell, toCsv } from './csv';

describe('csv', () => {
  it('writes CSV with quoting and lists as JSON', () => {
    expect(toCsv(['comm', 'start_ns', 'stack'], [['a,"b"', 1, ['x', 'y']]])).toBe('comm,start_ns,stack\r\n"a,""b""",1,"[""x"",""y""]"\r\n');
  });

  it('makes every cell a spreadsheet would run inert, keeping numbers', () => {
    const hostile = ["=cmd|' /C calc'!A0", '+SUM(1)', '-2+3', '@SUM(A1)', '\t=1', '\r=1'];
    expect(hostile.map(csvCell)).toEqual([`"'=cmd|' /C calc'!A0"`, `"'+SUM(1)"`, `"'-2+3"`, `"'@SUM(A1)"`, `"'\t=1"`, `"'\r=1"`]);
    expect([-5, '-5', '+3.5e-2', 1.5, true, null, '', '-'].map(csvCell)).toEqual(['-5', '-5', '+3.5e-2', '1.5', 'true', '', '""', `"'-"`]);
    expect(toCsv(['=name'], [[{ a: '=1' }]])).toBe(`"'=name"\r\n"{""a"":""=1""}"\r\n`);
  });
});
