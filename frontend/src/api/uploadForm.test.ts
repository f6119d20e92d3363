import { describe, expect, it } from 'vitest';
import { interleavedPieces, uploadForm, uploadParts } from './uploadForm';

const file = (name: string, size: number) =>
  new File([Uint8Array.from({ length: size }, (_, i) => (i * 7 + name.length) % 251)], name);

describe('the parts of an upload', () => {
  it('sends a blktrace set in interleaved pieces: the first of every file, then the rest in turn', () => {
    const set = [file('sda.blktrace.0', 10), file('sda.blktrace.1', 0), file('sda.blktrace.2', 25)];
    const order = interleavedPieces(set, 10).map((p) => [p.file.name, p.start, p.end]);
    expect(order).toEqual([
      ['sda.blktrace.0', 0, 10],
      ['sda.blktrace.1', 0, 0],
      ['sda.blktrace.2', 0, 10],
      ['sda.blktrace.2', 10, 20],
      ['sda.blktrace.2', 20, 25],
    ]);
  });

  it('sends other files whole, those chosen before the set before its pieces, the others after', () => {
    const chosen = [file('a.txt', 5), file('k.blktrace.1', 3), file('b.txt', 4), file('k.blktrace.0', 12)];
    const parts = uploadParts(chosen, 4).map((p) => `${p.field} ${p.file.name} ${p.start}-${p.end}`);
    expect(parts).toEqual([
      'files a.txt 0-5',
      'chunk k.blktrace.1 0-3',
      'chunk k.blktrace.0 0-4',
      'chunk k.blktrace.0 4-8',
      'chunk k.blktrace.0 8-12',
      'files b.txt 0-4',
    ]);
    expect(uploadParts([file('a.txt', 5), file('trace.blktrace', 2)]).map((p) => p.field)).toEqual(['files', 'files']);
  });

  it('puts every byte of each file in its pieces, in order, and the name last', async () => {
    const set = [file('x.blktrace.0', 9000), file('x.blktrace.1', 20000)];
    const form = uploadForm([...set, file('notes.txt', 3)], ' my set ', 4096);
    const entries = [...form.entries()];
    expect(entries.at(-1)).toEqual(['name', 'my set']);
    for (const f of set) {
      const pieces = entries.filter(([field, v]) => field === 'chunk' && (v as File).name === f.name);
      const joined = new Uint8Array(await new Blob(pieces.map(([, v]) => v as File)).arrayBuffer());
      expect(joined).toEqual(new Uint8Array(await f.arrayBuffer()));
    }
    expect(entries.filter(([field]) => field === 'files').map(([, v]) => (v as File).name)).toEqual(['notes.txt']);
  });
});
