import path from 'node:path';

/** The repository root (…/main) and the shared data beside it (…/shared), as in CI's fresh clone. */
export const REPO = path.resolve(__dirname, '../..');
export const SHARED = path.resolve(REPO, '../shared');
export const SEED_CFQ = path.join(SHARED, 'seed-excerpts/cfq-dispatch-starvation.blkparse.txt');
export const SCREENSHOTS = path.join(REPO, 'e2e/test-results/screenshots');
