import type { Reporter, TestCase, TestResult } from '@playwright/test/reporter';

/** Why a test that reads ../shared/samples-public is skipped when it is missing (tests/paths.ts: needsPublic). */
export const NEEDS_PUBLIC = "needs ../shared/samples-public (the public captures; see README's Development section)";

/** A reporter: one line for the tests skipped so, however many. */
export default class SharedSkips implements Reporter {
  private skipped = 0;

  onTestEnd(test: TestCase, result: TestResult) {
    const annotations = [...test.annotations, ...(result.annotations ?? [])];
    if (result.status === 'skipped' && annotations.some((a) => a.type === 'skip' && a.description === NEEDS_PUBLIC)) {
      this.skipped++;
    }
  }

  onEnd() {
    const tests = this.skipped === 1 ? '1 test' : `${this.skipped} tests`;
    if (this.skipped) console.log(`${tests} skipped, as ../shared/samples-public (the public captures) is not here`);
  }

  printsToStdio() {
    return false;
  }
}
