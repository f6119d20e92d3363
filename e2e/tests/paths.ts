import { test } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { NEEDS_PUBLIC } from '../shared-skips';

/** The repository root (…/main) and the shared data beside it (…/shared), as in CI's fresh clone. */
export const REPO = path.resolve(__dirname, '../..');
export const SHARED = path.resolve(REPO, '../shared');
export const PUBLIC = path.join(SHARED, 'samples-public');
/** The kernel bug report's excerpts (../shared/seed-excerpts), copied byte for byte into samples/. */
export const SEED_CFQ = path.join(REPO, 'samples/cfq-dispatch-starvation.blkparse.txt');
export const SEED_XFS = path.join(REPO, 'samples/xfs-unwritten-stall.trace-cmd-report.txt');
export const SEED_OFFCPU = path.join(REPO, 'samples/xfs-open-stall.offcputime.txt');
export const SCREENSHOTS = path.join(REPO, 'e2e/test-results/screenshots');

/** Skips the test when ../shared/samples-public is missing (a clone of the repository alone; CI has it), with one
 * reason that ../shared-skips.ts counts: called in a test before it reads a file of it, or at a spec's top level. */
export function needsPublic() {
  test.skip(!fs.existsSync(PUBLIC), NEEDS_PUBLIC);
}
