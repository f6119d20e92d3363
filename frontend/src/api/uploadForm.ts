// The multipart body of an upload (POST /api/analyses): which part carries which bytes, in which order.
//
// A file is sent whole, as a part named `files`, except the per-CPU files of a blktrace capture
// (NAME.blktrace.<cpu>, the rule of parsers/blktrace.py's PER_CPU): the server merges a set's records across its
// files in time order, so it can parse the set while it arrives only if every file's bytes come at the pace of the
// others. Those files are sent in pieces (parts named `chunk`, each with its file's name): the first piece of every
// one of them, then one more piece of each in turn, PIECE_BYTES each (backend/api/upload_body.py reads them; a file
// sent in pieces ends at the next part that is not a `chunk`, or at the end of the body). The pieces come where the
// first such file was chosen, so that the sources keep the order the files were chosen in; the name field last.

/** The per-CPU file of a blktrace capture: NAME.blktrace.<cpu> (parsers/blktrace.py's PER_CPU). */
export const PER_CPU = /^(.+)\.blktrace\.(\d+)$/;

/** Bytes of each piece of a file sent in pieces. */
export const PIECE_BYTES = 4 << 20;

/** The multipart field of a whole file, and of a piece of one (more of the same file may follow). */
export const FILE_FIELD = 'files';
export const PIECE_FIELD = 'chunk';

export type UploadPart = { field: typeof FILE_FIELD | typeof PIECE_FIELD; file: File; start: number; end: number };

/** The pieces of files sent in pieces, in the order they are sent: the first piece of every file, then one more of
 *  each in turn until each is sent. An empty file is one empty piece. */
export function interleavedPieces(files: File[], pieceBytes: number = PIECE_BYTES): UploadPart[] {
  const counts = files.map((f) => Math.max(1, Math.ceil(f.size / pieceBytes)));
  const parts: UploadPart[] = [];
  for (let round = 0; round < Math.max(0, ...counts); round++) {
    files.forEach((file, i) => {
      if (round < counts[i]) {
        const start = round * pieceBytes;
        parts.push({ field: PIECE_FIELD, file, start, end: Math.min(file.size, start + pieceBytes) });
      }
    });
  }
  return parts;
}

/** Every part of an upload of these files, in order: the files sent whole before the first per-CPU file, the pieces
 *  of the per-CPU files, the other files sent whole. */
export function uploadParts(files: File[], pieceBytes: number = PIECE_BYTES): UploadPart[] {
  const first = files.findIndex((f) => PER_CPU.test(f.name));
  const whole = (f: File): UploadPart => ({ field: FILE_FIELD, file: f, start: 0, end: f.size });
  if (first < 0) return files.map(whole);
  const rest = files.slice(first);
  return [
    ...files.slice(0, first).map(whole),
    ...interleavedPieces(
      rest.filter((f) => PER_CPU.test(f.name)),
      pieceBytes,
    ),
    ...rest.filter((f) => !PER_CPU.test(f.name)).map(whole),
  ];
}

/** The FormData of an upload: its parts (uploadParts; a piece is a slice of its file, read when it is sent), then
 *  the name field if there is one. */
export function uploadForm(files: File[], name: string, pieceBytes: number = PIECE_BYTES): FormData {
  const form = new FormData();
  for (const part of uploadParts(files, pieceBytes)) {
    const bytes = part.field === FILE_FIELD ? part.file : part.file.slice(part.start, part.end);
    form.append(part.field, bytes, part.file.name);
  }
  if (name.trim()) form.append('name', name.trim());
  return form;
}
