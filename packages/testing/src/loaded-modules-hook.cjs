// Loaded with `node --require` into a service process by a test: on SIGUSR2 the process prints
// the files it has loaded (require.cache) as one JSON log line, so that the test can check what a
// production bundle pulls in (e.g. that no service loads @prisma/client).
process.on('SIGUSR2', () => {
  process.stdout.write(`${JSON.stringify({ message: 'loaded modules', modules: Object.keys(require.cache) })}\n`);
});
