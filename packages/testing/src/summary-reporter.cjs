// A Jest reporter that ends the run with one plain line, "Tests: N passed, N failed, N skipped",
// which CI reads as the run's result (Jest's own summary line is not in that form).
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests, numTodoTests, numRuntimeErrorTestSuites } = results;
    // A suite that fails to load has no failed test but must still count as a failure.
    const failed = numFailedTests + numRuntimeErrorTestSuites;
    process.stdout.write(`\nTests: ${numPassedTests} passed, ${failed} failed, ${numPendingTests + numTodoTests} skipped\n`);
  }
}

module.exports = SummaryReporter;
